package spec

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	sigsjson "sigs.k8s.io/json"
)

// A request spec is whatever a client wrote (templateParameters is free-form): parsing it must never panic,
// what it refuses is a *FieldError naming a field of the spec without echoing the input at length, and what
// it accepts must be usable and bounded — hosts with a role, a count from 1 to MaxHostsPerRole, at most
// MaxHosts in all, scalar selector values. Each input is read twice: with numbers as float64 (how
// encoding/json decodes) and as int64 where they are integers (how the API server's objects arrive).
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		`{"templateName":"t","templateVersion":"v","templateParameters":{"clusterName":"c"}}`,
		`{"templateName":"t","templateVersion":"v","templateParameters":{"clusterName":"c","labels":{"a":"b"},"hosts":[{"role":"w","count":2,"selector":{"cpu":16,"gpu":"a100","smt":true}}]}}`,
		`{"templateName":"t","templateVersion":"v","templateParameters":{"clusterName":"c","hosts":[{"role":"w","count":1e300}]}}`,
		`{"templateName":"t","templateVersion":"v","templateParameters":{"clusterName":"c","hosts":[{"role":"w","count":2000000000}]}}`,
		`{"templateName":"t","templateVersion":"v","templateParameters":{"clusterName":"c","hosts":[{"role":"w","count":9223372036854775807}]}}`,
		`{"templateName":"t","templateVersion":"v","templateParameters":{"clusterName":"c","hosts":[{"role":"w","count":4294967297}]}}`,
		`{"templateName":"t","templateVersion":"v","templateParameters":{"clusterName":"c","hosts":[{"role":"a","count":1000},{"role":"b","count":1}]}}`,
		`{"templateName":"t","templateVersion":"v","templateParameters":{"clusterName":"c","hosts":[{"role":"w","count":"2"}]}}`,
		`{"templateName":"t","templateVersion":"v","templateParameters":{"clusterName":"c","hosts":[{"role":"w","count":2.0}]}}`,
		`{"templateParameters":[]}`, `{}`, `null`,
	} {
		f.Add(s)
	}
	reserved := map[string]bool{"o2ims_request_uid": true}
	f.Fuzz(func(t *testing.T, raw string) {
		for _, decode := range []func(string) (map[string]any, bool){asFloats, asIntegers} {
			spec, ok := decode(raw)
			if !ok {
				return
			}
			check(t, raw, spec, reserved)
		}
	})
}

func check(t *testing.T, raw string, spec map[string]any, reserved map[string]bool) {
	r, err := Parse(spec, reserved)
	if err != nil {
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field == "" {
			t.Fatalf("refusal %v of %q names no field", err, raw)
		}
		if root, _, _ := strings.Cut(fe.Field, "."); root != "spec" && root != "templateName" && root != "templateVersion" &&
			!strings.HasPrefix(root, "templateParameters") {
			t.Fatalf("refusal names %q, not a field of the spec", fe.Field)
		}
		if len(err.Error()) > 2000 || len(fe.Qualified()) > 2500 {
			t.Fatalf("refusal of %d bytes", len(err.Error()))
		}
		return
	}
	if r.ClusterName == "" || r.TemplateName == "" {
		t.Fatalf("accepted without a cluster or template: %q", raw)
	}
	roles := map[string]bool{}
	total := 0
	for _, h := range r.Hosts {
		if h.Role == "" || h.Count < 1 || h.Count > MaxHostsPerRole || roles[h.Role] {
			t.Fatalf("accepted a bad host request %+v from %q", h, raw)
		}
		roles[h.Role] = true
		total += h.Count
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
	if total > MaxHosts || r.Total() != total {
		t.Fatalf("accepted %d hosts (Total %d) from %q; the bound is %d", total, r.Total(), raw, MaxHosts)
	}
}

func asFloats(raw string) (map[string]any, bool) {
	var spec map[string]any
	return spec, json.Unmarshal([]byte(raw), &spec) == nil
}

// asIntegers decodes as unstructured objects hold JSON (sigs.k8s.io/json, as the API machinery
// decodes): integers that fit as int64, other numbers float64.
func asIntegers(raw string) (map[string]any, bool) {
	var spec map[string]any
	return spec, sigsjson.UnmarshalCaseSensitivePreserveInts([]byte(raw), &spec) == nil
}
