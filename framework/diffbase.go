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
// our own prefix's (always, as kopf's progress storage clears them), any other kopf-marked prefix's, and
// kubectl's last-applied-configuration.
func essence(obj *unstructured.Unstructured, own string) map[string]any {
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
		if prefix, _, ok := strings.Cut(k, "/"); ok && (marked[prefix] || prefix == own) {
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
func fetchDiffBase(obj *unstructured.Unstructured, keys []string) (map[string]any, bool, error) {
	annotations := obj.GetAnnotations()
	for _, key := range keys {
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

// clearOwn removes our prefix's annotations from a stored diff-base before comparing, as kopf clears both
// sides: a diff-base written by an operator that did not exclude them must not look like a change.
func clearOwn(base map[string]any, own string) map[string]any {
	meta, _ := base["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	if len(ann) == 0 {
		return base
	}
	out := runtimeDeepCopy(base).(map[string]any)
	meta = out["metadata"].(map[string]any)
	ann = meta["annotations"].(map[string]any)
	for k := range ann {
		if strings.HasPrefix(k, own+"/") {
			delete(ann, k)
		}
	}
	if len(ann) == 0 {
		delete(meta, "annotations")
	}
	if len(meta) == 0 {
		delete(out, "metadata")
	}
	return out
}

// sameEssence compares as JSON values, so 1 and 1.0 or key order never make a difference.
func sameEssence(a, b map[string]any) bool {
	return jsonEqual(a, b)
}

// jsonEqual compares two JSON-like trees (maps, slices, strings, bools, numbers of any Go type) without the
// marshal round trip, which dominated the cost of a pass.
func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !jsonEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case nil:
		return b == nil
	}
	if fa, ok := asFloat(a); ok {
		fb, ok := asFloat(b)
		return ok && fa == fb
	}
	return reflect.DeepEqual(a, b)
}

func asFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
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
