package netbox_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/netbox"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
)

func outcomes(rep *netbox.BootstrapReport) map[string]string {
	out := map[string]string{}
	for _, f := range rep.Fields {
		out[f.Name] = f.Outcome
	}
	return out
}

func granted(rep *netbox.BootstrapReport) map[string]bool {
	out := map[string]bool{}
	for _, p := range rep.Permissions {
		out[p.Permission] = p.Granted
	}
	return out
}

var allPermissions = map[string]bool{
	"dcim.view_device": true, "dcim.view_site": true, "dcim.view_devicetype": true,
	"extras.view_customfield": true, "dcim.change_device": true,
}

func TestBootstrapCreatesTheFieldsOnceThenFindsThem(t *testing.T) {
	e := newEnv(t, withoutStandardFields())
	require.Error(t, e.client.Schema.Check(ctx(t)), "a fresh NetBox fails the operator's check")

	rep, err := e.client.Schema.Bootstrap(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, "4.6.8", rep.Version)
	assert.Equal(t, allPermissions, granted(rep))
	assert.Equal(t, map[string]string{
		"o2ims_managed": "created", "o2ims_request_uid": "created", "o2ims_bmc_address": "created", "o2ims_boot_mac": "created",
	}, outcomes(rep))
	assert.Equal(t, 4, e.sim.Calls(http.MethodPost, netboxsim.RouteCustomFields))
	require.NoError(t, e.client.Schema.Check(ctx(t)), "the operator's own check passes on what bootstrap created")

	// What was created, as NetBox lists it.
	_, body := getJSON(t, e, "/api/extras/custom-fields/?object_type=dcim.device")
	byName := map[string]map[string]any{}
	for _, r := range body["results"].([]any) {
		f := r.(map[string]any)
		byName[f["name"].(string)] = f
	}
	for name, typ := range map[string]string{"o2ims_managed": "boolean", "o2ims_request_uid": "text", "o2ims_bmc_address": "text", "o2ims_boot_mac": "text"} {
		require.Contains(t, byName, name)
		assert.Equal(t, typ, byName[name]["type"].(map[string]any)["value"], name)
		assert.Equal(t, "exact", byName[name]["filter_logic"].(map[string]any)["value"], name)
		assert.Equal(t, []any{"dcim.device"}, byName[name]["object_types"], name)
		assert.Equal(t, false, byName[name]["required"], name)
		assert.NotEmpty(t, byName[name]["description"], name)
	}

	// A probe changed no device: the one PATCH went to a device that does not exist.
	for _, p := range e.sim.PatchLog() {
		assert.False(t, p.Committed)
		assert.Equal(t, http.StatusNotFound, p.Status)
	}

	rep, err = e.client.Schema.Bootstrap(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{
		"o2ims_managed": "existed", "o2ims_request_uid": "existed", "o2ims_bmc_address": "existed", "o2ims_boot_mac": "existed",
	}, outcomes(rep))
	assert.Equal(t, 4, e.sim.Calls(http.MethodPost, netboxsim.RouteCustomFields), "nothing created the second time")
}

func TestBootstrapUsesTheConfiguredFieldNames(t *testing.T) {
	e := newEnv(t, withoutStandardFields(), withConfig(func(c *netbox.Config) {
		c.Fields = netbox.FieldNames{Managed: "pool", RequestUID: "owner", BMCAddress: "bmc", BootMAC: "mac"}
	}))
	rep, err := e.client.Schema.Bootstrap(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"pool": "created", "owner": "created", "bmc": "created", "mac": "created"}, outcomes(rep))
	_, body := getJSON(t, e, "/api/extras/custom-fields/?name=o2ims_managed")
	assert.EqualValues(t, 0, body["count"])
}

func TestBootstrapRefusesAWrongDefinitionAndChangesNothing(t *testing.T) {
	cases := map[string]struct {
		field netboxsim.CustomField
		want  string
	}{
		"loose owner filter": {netboxsim.CustomField{Name: "o2ims_request_uid", Type: netboxsim.TypeText, FilterLogic: netboxsim.FilterLoose},
			"owner field o2ims_request_uid has filter_logic loose, want exact"},
		"pool flag as text": {netboxsim.CustomField{Name: "o2ims_managed", Type: netboxsim.TypeText, FilterLogic: netboxsim.FilterExact},
			"pool field o2ims_managed has type text, want boolean"},
		"not on devices": {netboxsim.CustomField{Name: "o2ims_boot_mac", Type: netboxsim.TypeText, ObjectTypes: []string{"dcim.site"}},
			"boot MAC field o2ims_boot_mac exists on dcim.site, not on dcim.device"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, withoutStandardFields())
			e.sim.AddCustomField(tc.field)
			rep, err := e.client.Schema.Bootstrap(ctx(t))
			require.Error(t, err)
			assert.True(t, netbox.IsKind(err, netbox.KindSchema), "%v", err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "nothing was changed")
			for _, f := range rep.Fields {
				if f.Name == tc.field.Name {
					assert.Equal(t, netbox.FieldWrong, f.Outcome)
				} else {
					assert.Equal(t, netbox.FieldNotCreated, f.Outcome, f.Name)
				}
			}
			assert.Zero(t, e.sim.Calls(http.MethodPost, netboxsim.RouteCustomFields), "no field created")
			_, body := getJSON(t, e, "/api/extras/custom-fields/")
			require.EqualValues(t, 1, body["count"])
			f := body["results"].([]any)[0].(map[string]any)
			assert.Equal(t, tc.field.Type, f["type"].(map[string]any)["value"], "the wrong field is left as it was")
		})
	}
}

func TestBootstrapRefusesAnOldNetBox(t *testing.T) {
	e := newEnv(t, withoutStandardFields(), withSim(netboxsim.Options{Version: "4.5.9"}))
	rep, err := e.client.Schema.Bootstrap(ctx(t))
	require.Error(t, err)
	assert.True(t, netbox.IsKind(err, netbox.KindUnsupported), "%v", err)
	assert.Contains(t, err.Error(), "NetBox 4.5.9 is older than 4.6.0")
	assert.Equal(t, "4.5.9", rep.Version)
	assert.Empty(t, rep.Fields)
	assert.Zero(t, e.sim.Calls(http.MethodPost, netboxsim.RouteCustomFields))
	assert.Zero(t, e.sim.Calls(http.MethodGet, netboxsim.RouteCustomFields), "nothing but the version was asked")
}

func TestBootstrapReportsAReadOnlyToken(t *testing.T) {
	e := newEnv(t, withSim(netboxsim.Options{ReadOnlyTokens: []string{testToken}}))
	rep, err := e.client.Schema.Bootstrap(ctx(t))
	require.Error(t, err)
	assert.True(t, netbox.IsKind(err, netbox.KindForbidden), "%v", err)
	assert.Contains(t, err.Error(), "the token lacks what the operator needs: dcim.change_device")
	want := map[string]bool{}
	for k := range allPermissions {
		want[k] = k != "dcim.change_device"
	}
	assert.Equal(t, want, granted(rep))
	assert.Equal(t, map[string]string{
		"o2ims_managed": "existed", "o2ims_request_uid": "existed", "o2ims_bmc_address": "existed", "o2ims_boot_mac": "existed",
	}, outcomes(rep))
}

func TestBootstrapReportsEachMissingPermission(t *testing.T) {
	e := newEnv(t, withSim(netboxsim.Options{Permissions: map[string][]string{
		testToken: {"dcim.view_device", "dcim.change_device", "extras.view_customfield"},
	}}))
	rep, err := e.client.Schema.Bootstrap(ctx(t))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the token lacks what the operator needs: dcim.view_site, dcim.view_devicetype")
	missing := rep.MissingPermissions()
	require.Len(t, missing, 2)
	assert.Equal(t, "read sites", missing[0].What)
	assert.Equal(t, "read device types", missing[1].What)
}

func TestBootstrapCannotCreateWithoutAddPermission(t *testing.T) {
	e := newEnv(t, withoutStandardFields(), withSim(netboxsim.Options{ReadOnlyTokens: []string{testToken}}))
	rep, err := e.client.Schema.Bootstrap(ctx(t))
	require.Error(t, err)
	assert.True(t, netbox.IsKind(err, netbox.KindForbidden), "%v", err)
	assert.Contains(t, err.Error(), "creating custom field o2ims_managed needs extras.add_customfield")
	assert.Equal(t, map[string]string{
		"o2ims_managed": "not created", "o2ims_request_uid": "not created", "o2ims_bmc_address": "not created", "o2ims_boot_mac": "not created",
	}, outcomes(rep))
	assert.Equal(t, 1, e.sim.Calls(http.MethodPost, netboxsim.RouteCustomFields), "stopped at the first refusal")
	_, body := getJSON(t, e, "/api/extras/custom-fields/")
	assert.EqualValues(t, 0, body["count"])
}

// getJSON reads path from the simulator with an unrestricted token of its own.
func getJSON(t *testing.T, e *env, path string) (*http.Response, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.ts.URL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Token "+testTokenV2)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return resp, out
}
