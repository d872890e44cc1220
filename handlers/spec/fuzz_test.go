package spec

import (
	"encoding/json"
	"testing"
)

// A request spec is whatever a client wrote (templateParameters is free-form): parsing it must never panic,
// and what it accepts must be usable — hosts with a role, a positive count and scalar selector values.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		`{"templateName":"t","templateVersion":"v","templateParameters":{"clusterName":"c"}}`,
		`{"templateName":"t","templateVersion":"v","templateParameters":{"clusterName":"c","labels":{"a":"b"},"hosts":[{"role":"w","count":2,"selector":{"cpu":16,"gpu":"a100","smt":true}}]}}`,
		`{"templateName":"t","templateVersion":"v","templateParameters":{"clusterName":"c","hosts":[{"role":"w","count":1e300}]}}`,
		`{"templateParameters":[]}`, `{}`, `null`,
	} {
		f.Add(s)
	}
	reserved := map[string]bool{"o2ims_request_uid": true}
	f.Fuzz(func(t *testing.T, raw string) {
		var spec map[string]any
		if json.Unmarshal([]byte(raw), &spec) != nil {
			return
		}
		r, err := Parse(spec, reserved)
		if err != nil {
			return
		}
		if r.ClusterName == "" || r.TemplateName == "" {
			t.Fatalf("accepted without a cluster or template: %q", raw)
		}
		roles := map[string]bool{}
		for _, h := range r.Hosts {
			if h.Role == "" || h.Count < 1 || roles[h.Role] {
				t.Fatalf("accepted a bad host request %+v from %q", h, raw)
			}
			roles[h.Role] = true
			for k, v := range h.Selector {
				switch v.(type) {
				case string, bool, int64:
				default:
					t.Fatalf("selector %s=%v (%T) is not a scalar", k, v, v)
				}
				if reserved[k] {
					t.Fatalf("reserved key %s accepted", k)
				}
			}
		}
	})
}
