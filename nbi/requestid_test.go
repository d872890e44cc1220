package nbi

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestRequestIDs(t *testing.T) {
	label63 := strings.Repeat("a", 63)
	max253 := strings.Join([]string{label63, label63, label63, strings.Repeat("b", 61)}, ".") // 63*3+3+61 = 253
	require.Len(t, max253, 253)
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
		err := validateRequestID(id)
		if want == "" {
			require.NoError(t, err, id)
			require.Empty(t, validation.IsDNS1123Subdomain(id), "the API server takes %q too", id)
			continue
		}
		require.ErrorContains(t, err, want, "%q", id)
	}
}
