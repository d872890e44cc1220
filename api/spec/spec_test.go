package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
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
		"count 2e9":                {func(m map[string]any) { hosts(m)[0].(map[string]any)["count"] = int64(2000000000) }, "hosts[0].count must be at most 1000 (hosts per role), got 2000000000"},
		"count 2e9 as a float":     {func(m map[string]any) { hosts(m)[0].(map[string]any)["count"] = 2e9 }, "hosts[0].count must be at most 1000 (hosts per role), got 2e+09"},
		"count 1e300":              {func(m map[string]any) { hosts(m)[0].(map[string]any)["count"] = 1e300 }, "hosts[0].count must be at most 1000"},
		"count beyond int64":       {func(m map[string]any) { hosts(m)[0].(map[string]any)["count"] = 1e19 }, "hosts[0].count must be at most 1000"},
		"count 2^32+1":             {func(m map[string]any) { hosts(m)[0].(map[string]any)["count"] = int64(1<<32 + 1) }, "must be at most 1000 (hosts per role), got 4294967297"},
		"negative count":           {func(m map[string]any) { hosts(m)[0].(map[string]any)["count"] = int64(-3) }, "hosts[0].count must be at least 1, got -3"},
		"count one over the bound": {func(m map[string]any) { hosts(m)[1].(map[string]any)["count"] = int64(MaxHostsPerRole + 1) }, "hosts[1].count must be at most 1000"},
		"count as a string":        {func(m map[string]any) { hosts(m)[0].(map[string]any)["count"] = "2" }, "hosts[0].count must be a whole number, got a string"},
		"count as a boolean":       {func(m map[string]any) { hosts(m)[0].(map[string]any)["count"] = true }, "hosts[0].count must be a whole number, got a boolean"},
		"count NaN":                {func(m map[string]any) { hosts(m)[0].(map[string]any)["count"] = math.NaN() }, "hosts[0].count must be a whole number, got NaN"},
		"total over the bound": {func(m map[string]any) {
			hosts(m)[0].(map[string]any)["count"] = int64(600)
			hosts(m)[1].(map[string]any)["count"] = int64(401)
		}, "hosts[1].count brings the request to 1001 hosts; a request holds at most 1000"},
		"more roles than hosts": {func(m map[string]any) {
			list := make([]any, MaxHosts+1)
			for i := range list {
				list[i] = map[string]any{"role": fmt.Sprintf("r%d", i), "count": int64(1)}
			}
			params(m)["hosts"] = list
		}, "hosts lists 1001 roles; a request holds at most 1000 hosts"},
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

// The bound itself is accepted: per role and over the request.
func TestHostBoundsAreInclusive(t *testing.T) {
	spec := map[string]any{"templateName": "t", "templateVersion": "v", "templateParameters": map[string]any{
		"clusterName": "c", "hosts": []any{
			map[string]any{"role": "control-plane", "count": int64(3)},
			map[string]any{"role": "worker", "count": float64(MaxHosts - 3)},
		}}}
	r, err := Parse(spec, nil)
	require.NoError(t, err)
	assert.Equal(t, MaxHosts, r.Total())
	one := map[string]any{"templateName": "t", "templateVersion": "v", "templateParameters": map[string]any{
		"clusterName": "c", "hosts": []any{map[string]any{"role": "worker", "count": int64(MaxHostsPerRole)}}}}
	_, err = Parse(one, nil)
	require.NoError(t, err)
}

// Every refusal names its field from the spec's root, so the NBI's 400 can say which one is wrong.
func TestRefusalsNameTheirField(t *testing.T) {
	spec := func(params map[string]any) map[string]any {
		return map[string]any{"templateName": "t", "templateVersion": "v", "templateParameters": params}
	}
	for _, c := range []struct {
		spec             map[string]any
		field, qualified string
	}{
		{map[string]any{"templateVersion": "v", "templateParameters": map[string]any{}}, "templateName", "templateName is missing"},
		{spec(map[string]any{"clusterName": "-x-"}), "templateParameters.clusterName", `templateParameters.clusterName "-x-" is not a valid name`},
		{spec(map[string]any{"clusterName": "c", "hosts": []any{map[string]any{"role": "w", "count": int64(2000000000)}}}),
			"templateParameters.hosts[0].count", "templateParameters.hosts[0].count must be at most 1000 (hosts per role), got 2000000000"},
		{spec(map[string]any{"clusterName": "c", "hosts": []any{map[string]any{"role": "w", "count": int64(1), "selector": map[string]any{"o2ims_request_uid": "x"}}}}),
			"templateParameters.hosts[0].selector", `templateParameters.hosts[0].selector key "o2ims_request_uid" is reserved`},
		{spec(map[string]any{"clusterName": "c", "labels": map[string]any{"a": 1.0}}), "templateParameters.labels.a", "templateParameters.labels.a must be a string, got a number"},
	} {
		_, err := Parse(c.spec, map[string]bool{"o2ims_request_uid": true})
		var fe *FieldError
		require.True(t, errors.As(err, &fe), "%v is a *FieldError", err)
		assert.Equal(t, c.field, fe.Field)
		assert.True(t, strings.HasPrefix(fe.Qualified(), c.qualified), "%q starts with %q", fe.Qualified(), c.qualified)
	}
}

// A caller's huge key or value is not copied whole into the reason (it lands in status and in answers).
func TestRefusalsDoNotEchoHugeValues(t *testing.T) {
	huge := strings.Repeat("k", 1<<20)
	for _, params := range []map[string]any{
		{"clusterName": huge},
		{"clusterName": "c", "labels": map[string]any{huge: "v"}},
		{"clusterName": "c", "hosts": []any{map[string]any{"role": "w", "count": int64(1), huge: 1}}},
		{"clusterName": "c", "hosts": []any{map[string]any{"role": "w", "count": int64(1), "selector": map[string]any{huge: 1.5}}}},
	} {
		_, err := Parse(map[string]any{"templateName": "t", "templateVersion": "v", "templateParameters": params}, nil)
		require.Error(t, err)
		assert.Less(t, len(err.Error()), 2000)
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
