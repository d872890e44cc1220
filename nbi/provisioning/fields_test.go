package provisioning

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
)

func selectionInfo() ProvisioningRequestInfo {
	srv := &API{log: nbitest.NopLogger()}
	return srv.infoOf(nbitest.PRObject("sel", map[string]any{
		"templateName": "t", "templateVersion": "v",
		"templateParameters": map[string]any{
			"clusterName": "c",
			"labels":      map[string]any{"a": "1"},
			"network":     map[string]any{"cidr": "10.0.0.0/8", "vlans": []any{int64(1), int64(2)}, "dns": map[string]any{"server": "1.1.1.1"}},
			"nodes":       []any{map[string]any{"name": "n1", "disks": []any{"sda"}, "bmc": map[string]any{"ip": "x"}}},
		},
	}, nil))
}

func TestFieldSelection(t *testing.T) {
	tp := "provisioningRequestData/templateParameters"
	for _, c := range []struct {
		name   string
		params map[string]string
		want   map[string]any
	}{
		{"none: the complete Info (the default-excluded set is empty)", map[string]string{}, nil},
		{"all_fields", map[string]string{"all_fields": ""}, nil},
		{"exclude_default", map[string]string{"exclude_default": "true"}, nil},
		{"fields keeps simple attributes and drops unlisted complex ones", map[string]string{"fields": "status"},
			map[string]any{"clusterName": "c"}},
		{"fields keeps a listed complex attribute whole", map[string]string{"fields": tp + "/labels"},
			map[string]any{"clusterName": "c", "labels": map[string]any{"a": "1"}}},
		{"fields keeps the ancestors of a listed path with their simple attributes", map[string]string{"fields": tp + "/network/dns"},
			map[string]any{"clusterName": "c", "network": map[string]any{"cidr": "10.0.0.0/8", "dns": map[string]any{"server": "1.1.1.1"}}}},
		{"fields selects through arrays", map[string]string{"fields": tp + "/nodes/bmc,provisionedResourceSet"},
			map[string]any{"clusterName": "c", "nodes": []any{map[string]any{"name": "n1", "bmc": map[string]any{"ip": "x"}}}}},
		{"fields of templateParameters keeps all of it", map[string]string{"fields": tp, "exclude_default": ""}, nil},
		{"exclude_fields removes what it lists", map[string]string{"exclude_fields": tp + "/labels," + tp + "/network/vlans"},
			map[string]any{"clusterName": "c", "network": map[string]any{"cidr": "10.0.0.0/8", "dns": map[string]any{"server": "1.1.1.1"}},
				"nodes": []any{map[string]any{"name": "n1", "disks": []any{"sda"}, "bmc": map[string]any{"ip": "x"}}}}},
		{"exclude_fields leaves a simple attribute", map[string]string{"exclude_fields": tp + "/clusterName"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			info := selectionInfo()
			original := selectionInfo().ProvisioningRequestData.TemplateParameters
			sel, err := parseSelection(c.params)
			require.NoError(t, err)
			got := apply(sel, info)
			want := c.want
			if want == nil {
				want = original
			}
			require.Equal(t, want, got.ProvisioningRequestData.TemplateParameters)
			require.Equal(t, info.Status, got.Status, "mandatory attributes are always there")
			require.Equal(t, info.ProvisionedResourceSet, got.ProvisionedResourceSet)
			require.Equal(t, original, info.ProvisioningRequestData.TemplateParameters, "the Store's object is never changed")
		})
	}
}

func TestFieldSelectionErrors(t *testing.T) {
	tp := "provisioningRequestData/templateParameters"
	for _, c := range []struct {
		params map[string]string
		want   string
	}{
		{map[string]string{"all_fields": "", "fields": "status"}, "all_fields cannot be combined"},
		{map[string]string{"all_fields": "", "exclude_default": ""}, "all_fields cannot be combined"},
		{map[string]string{"fields": "status", "exclude_fields": tp + "/x"}, "fields and exclude_fields cannot be combined"},
		{map[string]string{"exclude_fields": tp + "/x", "exclude_default": ""}, "exclude_fields and exclude_default cannot be combined"},
		{map[string]string{"all_fields": "yes"}, "want no value, true or false"},
		{map[string]string{"fields": ""}, "fields is empty"},
		{map[string]string{"fields": "nope"}, `"nope" is not an attribute`},
		{map[string]string{"fields": "status/message"}, "simple attribute"},
		{map[string]string{"fields": "status,"}, "empty"},
		{map[string]string{"exclude_fields": "status"}, "required by ProvisioningRequestInfo and cannot be excluded"},
		{map[string]string{"exclude_fields": tp}, "cannot be excluded"},
		{map[string]string{"exclude_fields": "provisionedResourceSet/infrastructureResourceIds"}, "cannot be excluded"},
	} {
		_, err := parseSelection(c.params)
		require.ErrorContains(t, err, c.want, c.params)
	}
}
