package framework

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/framework/kopf"
)

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
		out[k] = kopf.DeepCopyJSON(v)
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
	marked := kopf.MarkedPrefixes(annotations)
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

// fetchDiffBase reads the diff-base under either key form. A malformed one is an error the caller
// reports; it is not silently treated as absent, which would re-run create handlers on a handled object.
func fetchDiffBase(obj *unstructured.Unstructured, keys []string) (map[string]any, bool, error) {
	annotations := obj.GetAnnotations()
	for _, key := range keys {
		raw, ok := annotations[key]
		if !ok {
			continue
		}
		base, found, err := kopf.ParseDiffBase(raw)
		if err != nil {
			return nil, true, fmt.Errorf("%s: %w", key, err)
		}
		if !found {
			continue // JSON null is how kopf would say "none"
		}
		return base, true, nil
	}
	return nil, false, nil
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
