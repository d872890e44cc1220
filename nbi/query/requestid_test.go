package query

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestRequestIDs(t *testing.T) {
	label63 := strings.Repeat("a", 63)
	max253 := strings.Join([]string{label63, label63, label63, strings.Repeat("b", 61)}, ".") // 63*3+3+61 = 253
	if len(max253) != 253 {
		t.Fatalf("max253 is %d long", len(max253))
	}
	for id, want := range map[string]string{
		"edge-1":              "",
		"a":                   "",
		"0":                   "",
		"a.b.c":               "",
		"1-2.3-4":             "",
		"cluster.example.com": "",
		label63:               "",
		max253:                "",
		"":                    "empty",
		max253 + "b":          "254 characters long",
		label63 + "a":         "label 1 is 64 characters long",
		"a." + label63 + "a":  "label 2 is 64 characters long",
		"a.-b":                `label 2 "-b" must start`,
		"a-":                  "must end",
		"-a":                  "must start",
		"a..b":                "label 2 is empty",
		".a":                  "label 1 is empty",
		"a.":                  "label 2 is empty",
		"Edge":                "must start with a lowercase",
		"eDge":                "may contain only",
		"a_b":                 "may contain only",
		"a b":                 "may contain only",
		"a/b":                 "may contain only",
		"ü":                   "must start",
		"a\x00b":              "may contain only",
	} {
		err := ValidateRequestID(id)
		if want == "" {
			if err != nil {
				t.Errorf("%q: %v", id, err)
			}
			if errs := validation.IsDNS1123Subdomain(id); len(errs) > 0 {
				t.Errorf("the API server refuses %q: %v", id, errs)
			}
			continue
		}
		wantError(t, err, statusBadRequest, want, "%q", id)
	}
}
