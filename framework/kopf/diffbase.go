package kopf

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// The diff-base is kopf's "last handled configuration": the object's essence as JSON, written when all
// handlers of a create/update/resume cause are done. Its absence is what makes a cause "create".
const DiffBaseName = "last-handled-configuration"

// Marker is the annotation kopf puts under its prefix so other kopf operators ignore that prefix in their
// essence.
const Marker = "kopf-managed"

// ParseDiffBase reads a diff-base annotation. JSON null is kopf's "none" (found is false); anything that
// is not a JSON object is an error the caller reports.
func ParseDiffBase(raw string) (base map[string]any, found bool, err error) {
	// Numbers stay as written (json.Number), so an essence read back re-encodes to the same bytes.
	var v any
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, true, fmt.Errorf("malformed diff-base: %w", err)
	}
	if dec.More() {
		return nil, true, fmt.Errorf("malformed diff-base: data after the JSON value")
	}
	if v == nil {
		return nil, false, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, true, fmt.Errorf("malformed diff-base: a JSON %T, not an object", v)
	}
	return m, true, nil
}

// EncodeDiffBase renders the essence byte for byte as kopf does: json.dumps(essence, separators=(',', ':'))
// plus a trailing newline (for kubectl). kopf builds the essence from the body as the API server serves it
// (keys sorted) by dropping apiVersion, kind, metadata and status and then appending metadata.labels and
// metadata.annotations, so "metadata" comes last, labels before annotations.
func EncodeDiffBase(e map[string]any) string {
	var b strings.Builder
	writePyJSON(&b, e, nil, essenceOrder)
	b.WriteByte('\n')
	return b.String()
}

func essenceOrder(path []string, keys []string) []string {
	switch {
	case len(path) == 0:
		return moveLast(keys, "metadata")
	case len(path) == 1 && path[0] == "metadata":
		return moveFirst(keys, "labels", "annotations")
	}
	return keys
}

func moveLast(keys []string, last string) []string {
	out := make([]string, 0, len(keys))
	found := false
	for _, k := range keys {
		if k == last {
			found = true
			continue
		}
		out = append(out, k)
	}
	if found {
		out = append(out, last)
	}
	return out
}

func moveFirst(keys []string, first ...string) []string {
	out := make([]string, 0, len(keys))
	for _, f := range first {
		for _, k := range keys {
			if k == f {
				out = append(out, k)
			}
		}
	}
	for _, k := range keys {
		if !slices.Contains(first, k) {
			out = append(out, k)
		}
	}
	return out
}

// MarkedPrefixes finds annotation prefixes that belong to kopf-style operators: any prefix carrying the
// kopf-managed marker, and kopf's own domain.
func MarkedPrefixes(annotations map[string]string) map[string]bool {
	marked := map[string]bool{}
	for k := range annotations {
		prefix, name, ok := strings.Cut(k, "/")
		if !ok {
			continue
		}
		if name == Marker || prefix == "kopf.zalando.org" || strings.HasSuffix(prefix, ".kopf.zalando.org") {
			marked[prefix] = true
		}
	}
	return marked
}

// ClearOwn removes our prefix's annotations from a stored diff-base before comparing, as kopf clears both
// sides: a diff-base written by an operator that did not exclude them must not look like a change.
func ClearOwn(base map[string]any, own string) map[string]any {
	meta, _ := base["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	if len(ann) == 0 {
		return base
	}
	out := DeepCopyJSON(base).(map[string]any)
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

// SameEssence compares as JSON values, so 1 and 1.0 or key order never make a difference.
func SameEssence(a, b map[string]any) bool {
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

func DeepCopyJSON(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = DeepCopyJSON(e)
		}
		return m
	case []any:
		s := make([]any, len(t))
		for i, e := range t {
			s[i] = DeepCopyJSON(e)
		}
		return s
	default:
		return t
	}
}
