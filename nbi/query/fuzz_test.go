package query

import (
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/o2ims-operator/o2ims-operator/internal/quote"
)

// FuzzDecodeBody: decoding a body never panics, every refusal is a 400, and every body accepted becomes
// a spec the API server can take: JSON-typed values only, the required members present.
func FuzzDecodeBody(f *testing.F) {
	for _, seed := range []string{
		`{"provisioningRequestId":"a","templateName":"t","templateVersion":"v","templateParameters":{"clusterName":"c"}}`,
		`{"provisioningRequestId":"a.b","name":"n","description":"d","templateName":"t","templateVersion":"v","templateParameters":{"clusterName":"c","labels":{"a":"b"},"n":[1,2.5,-3e10,null,true]}}`,
		`{"provisioningRequestId":1}`, `[]`, `null`, `{`, `{"a":1}`, `{"templateParameters":{"clusterName":""}}`,
		`{"provisioningRequestId":"a","templateName":"t","templateVersion":"v","templateParameters":{"clusterName":"c","x":1e999}}`,
		"provisioningRequestId: a\ntemplateName: t\ntemplateVersion: v\ntemplateParameters: {clusterName: c}\n",
		"a: &x [*x]\n",
	} {
		f.Add([]byte(seed), strings.HasPrefix(seed, "{") || seed == "[]" || seed == "null")
	}
	f.Fuzz(func(t *testing.T, data []byte, asJSON bool) {
		media := MediaYAML
		if asJSON {
			media = MediaJSON
		}
		d, err := ParseRequestData(media, data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Status != statusBadRequest {
				t.Fatalf("a refusal that is not a 400: %v", err)
			}
			return
		}
		if d.TemplateParameters == nil {
			t.Fatal("accepted without templateParameters")
		}
		if cn, _ := d.TemplateParameters["clusterName"].(string); cn == "" {
			t.Fatal("accepted without a clusterName")
		}
		spec := d.Spec()
		if err := unstructuredValue(spec); err != nil {
			t.Fatalf("an accepted spec holds what an unstructured object cannot: %v", err)
		}
		if _, err := json.Marshal(spec); err != nil {
			t.Fatalf("an accepted spec does not encode: %v", err)
		}
	})
}

// unstructuredValue checks that v holds only what an unstructured object may (what apimachinery's
// runtime.DeepCopyJSONValue accepts rather than panics on): objects, arrays, strings, booleans, null,
// int64 and finite float64 — the latter being stricter, as JSON has no NaN or infinity.
func unstructuredValue(v any) error {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if err := unstructuredValue(e); err != nil {
				return errors.New(k + ": " + err.Error())
			}
		}
	case []any:
		for _, e := range t {
			if err := unstructuredValue(e); err != nil {
				return err
			}
		}
	case string, bool, int64, nil:
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return errors.New("a float that is not finite")
		}
	default:
		return errors.New("a value of type " + quote.JSONType(v))
	}
	return nil
}

// fuzzInfo is the Info of a request as package nbi hands it to Filter.Match (its attributes()): fresh,
// with a few template parameters of each shape.
func fuzzInfo() map[string]any {
	return map[string]any{
		"provisioningRequestData": map[string]any{
			"provisioningRequestId": "fuzz",
			"name":                  "",
			"description":           "",
			"templateName":          "t",
			"templateVersion":       "v",
			"templateParameters": map[string]any{
				"clusterName": "c", "replicas": int64(3), "nodes": []any{map[string]any{"name": "n"}},
			},
		},
		"provisioningRequestReference": "uid-fuzz",
		"status": map[string]any{
			"updateTime":        "2026-11-30T09:00:00Z",
			"message":           "",
			"provisioningPhase": "PENDING",
		},
		"provisionedResourceSet": map[string]any{
			"nodeClusterId":             "",
			"infrastructureResourceIds": []any{},
		},
	}
}

// FuzzParseFilter: parsing never panics, and whatever parses renders to an expression that parses back
// to the same conditions (and renders the same again).
func FuzzParseFilter(f *testing.F) {
	for _, seed := range []string{
		"(eq,status/provisioningPhase,FULFILLED)",
		"(in,status/provisioningPhase,FAILED,PENDING);(cont,status/message,'a,b','it''s')",
		"(neq,provisioningRequestData/templateParameters/nodes/name,)",
		"(gt,provisioningRequestData/templateParameters/replicas,3);(lte,status/updateTime,2026-01-01T00:00:00Z)",
		"(eq,status/message,')')", "(eq,status/message,'''')", "(eq,", "((", "(eq,status,x)", ";",
	} {
		f.Add(seed)
	}
	attrs := fuzzInfo()
	f.Fuzz(func(t *testing.T, expr string) {
		parsed, err := ParseFilter(expr)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Status != statusBadRequest {
				t.Fatalf("a refusal that is not a 400: %v", err)
			}
			return
		}
		_ = parsed.Match(attrs)
		rendered := parsed.String()
		again, err := ParseFilter(rendered)
		if err != nil {
			t.Fatalf("%q parsed, but its rendering %q does not: %v", expr, rendered, err)
		}
		if again.String() != rendered || len(again) != len(parsed) {
			t.Fatalf("%q → %q → %q", expr, rendered, again.String())
		}
		for i := range parsed {
			if parsed[i].op != again[i].op || strings.Join(parsed[i].path, "/") != strings.Join(again[i].path, "/") ||
				strings.Join(parsed[i].values, "\x00") != strings.Join(again[i].values, "\x00") || len(parsed[i].values) != len(again[i].values) {
				t.Fatalf("%q: condition %d changed from %+v to %+v", expr, i, parsed[i], again[i])
			}
		}
	})
}

// rfc1123Subdomain is the definition the label-by-label check implements, said another way.
var rfc1123Subdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// FuzzRequestID: an id is accepted exactly when it is a lowercase RFC 1123 subdomain of at most 253
// characters whose labels have at most 63, and what is accepted the API server accepts too.
func FuzzRequestID(f *testing.F) {
	for _, seed := range []string{"edge-1", "a.-b", "a..b", "A", "-", "a-", strings.Repeat("a", 64), strings.Repeat("a.", 127), "ü", "a.b.c", "0.0"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, id string) {
		err := ValidateRequestID(id)
		want := len(id) <= 253 && rfc1123Subdomain.MatchString(id)
		for _, l := range strings.Split(id, ".") {
			want = want && len(l) <= 63
		}
		if (err == nil) != want {
			t.Fatalf("%q: accepted=%v, want %v (%v)", id, err == nil, want, err)
		}
		if err == nil && len(validation.IsDNS1123Subdomain(id)) > 0 {
			t.Fatalf("%q is accepted here but refused by the API server: %v", id, validation.IsDNS1123Subdomain(id))
		}
	})
}
