package spec

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseRequestChecksShapesNotGoTypes(t *testing.T) {
	reserved := map[string]bool{"o2ims_request_uid": true}
	good := map[string]any{
		"templateName": "edge", "templateVersion": "v1",
		"templateParameters": map[string]any{
			"clusterName": "edge-1", "labels": map[string]any{"site": "a"},
			"hosts": []any{
				map[string]any{"role": "control-plane", "count": float64(1), "selector": map[string]any{"cpu_cores": float64(16), "gpu": "a100", "smt": true}},
				map[string]any{"role": "worker", "count": int64(2)},
			},
		},
	}
	r, err := Parse(good, reserved)
	require.NoError(t, err)
	assert.Equal(t, Request{
		TemplateName: "edge", TemplateVersion: "v1", ClusterName: "edge-1", Labels: map[string]string{"site": "a"},
		Hosts: []HostRequest{
			{Role: "control-plane", Count: 1, Selector: map[string]any{"cpu_cores": int64(16), "gpu": "a100", "smt": true}},
			{Role: "worker", Count: 2, Selector: map[string]any{}},
		},
	}, r)
	assert.Equal(t, 3, r.Total())

	bad := map[string]struct {
		mutate func(m map[string]any)
		reason string
	}{
		"no templateName":          {func(m map[string]any) { delete(m, "templateName") }, "templateName is missing"},
		"numeric templateName":     {func(m map[string]any) { m["templateName"] = 3.0 }, "templateName must be a string, got a number"},
		"empty version":            {func(m map[string]any) { m["templateVersion"] = " " }, "templateVersion is empty"},
		"no parameters":            {func(m map[string]any) { delete(m, "templateParameters") }, "templateParameters is missing"},
		"parameters list":          {func(m map[string]any) { m["templateParameters"] = []any{} }, "templateParameters must be an object, got a list"},
		"no clusterName":           {func(m map[string]any) { delete(params(m), "clusterName") }, "clusterName is missing in template parameters"},
		"bad clusterName":          {func(m map[string]any) { params(m)["clusterName"] = "-x-" }, `clusterName "-x-" is not a valid name`},
		"labels string":            {func(m map[string]any) { params(m)["labels"] = "a=b" }, "labels must be an object, got a string"},
		"label key":                {func(m map[string]any) { params(m)["labels"] = map[string]any{"bad key": "v"} }, `labels key "bad key" is not a valid label key`},
		"hosts object":             {func(m map[string]any) { params(m)["hosts"] = map[string]any{} }, "hosts must be a list, got an object"},
		"hosts empty":              {func(m map[string]any) { params(m)["hosts"] = []any{} }, "hosts must not be empty"},
		"duplicate role":           {func(m map[string]any) { hosts(m)[1].(map[string]any)["role"] = "control-plane" }, `hosts[1].role "control-plane" is used twice`},
		"role not a label":         {func(m map[string]any) { hosts(m)[0].(map[string]any)["role"] = "Control_Plane" }, "is not a DNS-1123 label"},
		"zero count":               {func(m map[string]any) { hosts(m)[0].(map[string]any)["count"] = 0.0 }, "hosts[0].count must be at least 1, got 0"},
		"fractional count":         {func(m map[string]any) { hosts(m)[0].(map[string]any)["count"] = 1.5 }, "hosts[0].count must be a whole number"},
		"missing count":            {func(m map[string]any) { delete(hosts(m)[0].(map[string]any), "count") }, "hosts[0].count is missing"},
		"list selector value":      {func(m map[string]any) { sel(m)["gpu"] = []any{"a"} }, "hosts[0].selector.gpu must be a string, boolean or whole number, got a list"},
		"float selector value":     {func(m map[string]any) { sel(m)["cpu_cores"] = 1.5 }, "must be a string, boolean or whole number, got 1.5"},
		"reserved selector key":    {func(m map[string]any) { sel(m)["o2ims_request_uid"] = "x" }, `selector key "o2ims_request_uid" is reserved`},
		"unknown host field":       {func(m map[string]any) { hosts(m)[0].(map[string]any)["size"] = "xl" }, `hosts[0] has an unknown field "size"`},
		"host entry not an object": {func(m map[string]any) { params(m)["hosts"] = []any{"worker"} }, "hosts[0] must be an object, got a string"},
	}
	for name, tc := range bad {
		t.Run(name, func(t *testing.T) {
			spec := runtimeCopy(good)
			tc.mutate(spec)
			_, err := Parse(spec, reserved)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.reason)
		})
	}
}

func params(m map[string]any) map[string]any { return m["templateParameters"].(map[string]any) }
func hosts(m map[string]any) []any           { return params(m)["hosts"].([]any) }
func sel(m map[string]any) map[string]any {
	return hosts(m)[0].(map[string]any)["selector"].(map[string]any)
}

// runtimeCopy deep-copies a JSON-shaped map (a JSON round trip keeps the leaf free of apimachinery).
func runtimeCopy(m map[string]any) map[string]any {
	b, _ := json.Marshal(m)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}
