package framework

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The diff-base is kopf's "last handled configuration": the object's essence as JSON, written when all
// handlers of a create/update/resume cause are done. Its absence is what makes a cause "create".
const diffBaseName = "last-handled-configuration"

// kopf marks its prefixes with this annotation so other kopf operators ignore them in their essence.
const kopfMarker = "kopf-managed"

// essence is the object minus apiVersion, kind, metadata and status, plus labels and annotations without
// kopf's own (any kopf-marked prefix) and kubectl's last-applied-configuration.
func essence(obj *unstructured.Unstructured) map[string]any {
	out := map[string]any{}
	for k, v := range obj.Object {
		switch k {
		case "apiVersion", "kind", "metadata", "status":
			continue
		}
		out[k] = runtimeDeepCopy(v)
	}
	meta := map[string]any{}
	if labels := obj.GetLabels(); len(labels) > 0 {
		m := map[string]any{}
		for k, v := range labels {
			m[k] = v
		}
		meta["labels"] = m
	}
	annotations := obj.GetAnnotations()
	marked := markedPrefixes(annotations)
	kept := map[string]any{}
	for k, v := range annotations {
		if k == "kubectl.kubernetes.io/last-applied-configuration" {
			continue
		}
		if prefix, _, ok := strings.Cut(k, "/"); ok && marked[prefix] {
			continue
		}
		kept[k] = v
	}
	if len(kept) > 0 {
		meta["annotations"] = kept
	}
	if len(meta) > 0 {
		out["metadata"] = meta
	}
	return out
}

// markedPrefixes finds annotation prefixes that belong to kopf-style operators: any prefix carrying the
// kopf-managed marker, and kopf's own domain.
func markedPrefixes(annotations map[string]string) map[string]bool {
	marked := map[string]bool{}
	for k := range annotations {
		prefix, name, ok := strings.Cut(k, "/")
		if !ok {
			continue
		}
		if name == kopfMarker || prefix == "kopf.zalando.org" || strings.HasSuffix(prefix, ".kopf.zalando.org") {
			marked[prefix] = true
		}
	}
	return marked
}

// fetchDiffBase reads the diff-base under either key form. A malformed one is an error the caller
// reports; it is not silently treated as absent, which would re-run create handlers on a handled object.
func fetchDiffBase(obj *unstructured.Unstructured, n keyNamer) (map[string]any, bool, error) {
	annotations := obj.GetAnnotations()
	for _, key := range n.keys(diffBaseName) {
		raw, ok := annotations[key]
		if !ok {
			continue
		}
		var base map[string]any
		if err := json.Unmarshal([]byte(raw), &base); err != nil {
			return nil, true, fmt.Errorf("malformed %s annotation: %w", key, err)
		}
		if base == nil {
			continue // JSON null is how kopf would say "none"
		}
		return base, true, nil
	}
	return nil, false, nil
}

// encodeDiffBase renders the essence as kopf does: compact JSON plus a trailing newline (for kubectl).
func encodeDiffBase(e map[string]any) string {
	b, _ := json.Marshal(e) // an essence decoded from JSON always re-encodes
	return string(b) + "\n"
}

// sameEssence compares after a JSON round trip, so 1 and 1.0 or key order never make a difference.
func sameEssence(a, b map[string]any) bool {
	return reflect.DeepEqual(normalizeJSON(a), normalizeJSON(b))
}

func normalizeJSON(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

func runtimeDeepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = runtimeDeepCopy(e)
		}
		return m
	case []any:
		s := make([]any, len(t))
		for i, e := range t {
			s[i] = runtimeDeepCopy(e)
		}
		return s
	default:
		return t
	}
}
