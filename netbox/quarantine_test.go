package netbox_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/netbox"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
)

func TestBMCDataProblem(t *testing.T) {
	const okMAC = "52:54:00:12:34:56"
	cases := []struct {
		name   string
		bmc    any
		mac    any
		reason netbox.QuarantineReason // "" = no problem
		text   string
	}{
		{"redfish", "redfish://10.0.0.1/redfish/v1/Systems/1", okMAC, "", ""},
		{"redfish+https port", "redfish+https://bmc.example.com:8443/redfish/v1/Systems/1", okMAC, "", ""},
		{"virtualmedia", "redfish-virtualmedia+https://10.0.0.1/redfish/v1/Systems/1", okMAC, "", ""},
		{"idrac virtualmedia", "idrac-virtualmedia://10.0.0.1/redfish/v1/Systems/System.Embedded.1", okMAC, "", ""},
		{"ilo5", "ilo5-redfish://10.0.0.1", okMAC, "", ""},
		{"ipmi", "ipmi://10.0.0.1:623", okMAC, "", ""},
		{"ipmi query", "ipmi://10.0.0.1?privilegelevel=OPERATOR", okMAC, "", ""},
		{"bare ip", "10.0.0.1", okMAC, "", ""},
		{"bare ip port", "10.0.0.1:623", okMAC, "", ""},
		{"bare ipv6", "[fd00::1]:623", okMAC, "", ""},
		{"bare host", "bmc-1.example.com", okMAC, "", ""},
		{"mac dashes", "10.0.0.1", "52-54-00-12-34-56", "", ""},
		{"mac upper", "10.0.0.1", "52:54:00:AB:CD:EF", "", ""},

		{"missing", nil, okMAC, netbox.ReasonBMCAddressInvalid, "BMC address is missing"},
		{"empty", "", okMAC, netbox.ReasonBMCAddressInvalid, "BMC address is missing"},
		{"number", 12, okMAC, netbox.ReasonBMCAddressInvalid, "BMC address is not text"},
		{"unknown scheme", "https://10.0.0.1", okMAC, netbox.ReasonBMCAddressInvalid, `BMC address type "https" is not supported by Metal3`},
		{"ilo4 over http", "ilo4+http://10.0.0.1", okMAC, netbox.ReasonBMCAddressInvalid, "not supported"},
		{"host:port name (Metal3 reads a scheme)", "bmc.example.com:623", okMAC, netbox.ReasonBMCAddressInvalid, "not supported"},
		{"credentials", "redfish://root:calvin@10.0.0.1/redfish/v1", okMAC, netbox.ReasonBMCAddressInvalid, "must not embed credentials"},
		{"no host", "redfish:///redfish/v1/Systems/1", okMAC, netbox.ReasonBMCAddressInvalid, "has no host"},
		{"bad host", "redfish://bad_host!/x", okMAC, netbox.ReasonBMCAddressInvalid, ""},
		{"bad port", "redfish://10.0.0.1:0/x", okMAC, netbox.ReasonBMCAddressInvalid, "port is invalid"},
		{"whitespace", " 10.0.0.1", okMAC, netbox.ReasonBMCAddressInvalid, "whitespace"},
		{"garbage", "%%%", okMAC, netbox.ReasonBMCAddressInvalid, ""},

		{"mac missing", "10.0.0.1", nil, netbox.ReasonBootMACInvalid, "boot MAC is missing"},
		{"mac not text", "10.0.0.1", true, netbox.ReasonBootMACInvalid, "boot MAC is not text"},
		{"mac garbage", "10.0.0.1", "52:54:00:12:34", netbox.ReasonBootMACInvalid, "not a valid 48-bit MAC"},
		{"mac eui64", "10.0.0.1", "02:00:5e:10:00:00:00:01", netbox.ReasonBootMACInvalid, "not a valid 48-bit MAC"},
		{"mac zero", "10.0.0.1", "00:00:00:00:00:00", netbox.ReasonBootMACInvalid, "all-zero or a multicast"},
		{"mac broadcast", "10.0.0.1", "ff:ff:ff:ff:ff:ff", netbox.ReasonBootMACInvalid, "multicast"},
		{"both bad: address first", "", "", netbox.ReasonBMCAddressInvalid, "BMC address is missing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := netbox.NewDeviceForTest(map[string]any{"o2ims_bmc_address": tc.bmc, "o2ims_boot_mac": tc.mac})
			reason, msg, bad := d.BMCDataProblem()
			assert.Equal(t, tc.reason != "", bad)
			assert.Equal(t, tc.reason, reason)
			if tc.text != "" {
				assert.Contains(t, msg, tc.text)
			}
			if s, ok := tc.bmc.(string); ok && len(s) > 4 {
				assert.NotContains(t, msg, s, "the message never quotes the address")
			}
			if strings.Contains(msg, "calvin") {
				t.Fatalf("credential leaked: %s", msg)
			}
		})
	}
}

func TestQuarantine(t *testing.T) {
	e := newEnv(t)
	id := e.sim.AddDevice(netboxsim.Device{Custom: map[string]any{
		"o2ims_managed": true, "o2ims_bmc_address": "https://root:calvin@10.0.0.1", "o2ims_boot_mac": "52:54:00:12:34:56"}})
	d, err := e.client.Claims.GetDevice(ctx(t), id)
	require.NoError(t, err)
	reason, msg, bad := d.BMCDataProblem()
	require.True(t, bad)
	etag := d.ETag

	// The caller's message quotes the address by mistake; it is scrubbed.
	long := msg + " (was " + d.BMCAddress + ") " + strings.Repeat("é", 300)
	require.NoError(t, e.client.Claims.Quarantine(ctx(t), d, reason, long))
	assert.Equal(t, netbox.StatusFailed, d.Status)

	got, _ := e.sim.Device(id)
	assert.Equal(t, "failed", got.Status)
	require.Len(t, got.Changelog, 1)
	cl := got.Changelog[0]
	assert.True(t, strings.HasPrefix(cl, "o2ims quarantine (bmc-address-invalid): BMC address type"), cl)
	assert.NotContains(t, cl, "calvin")
	assert.NotContains(t, cl, "10.0.0.1")
	assert.LessOrEqual(t, utf8.RuneCountInString(cl), 200)

	log := e.sim.PatchLog()
	require.Len(t, log, 1)
	assert.Equal(t, etag, log[0].IfMatch)
	assert.Equal(t, "failed", log[0].Body["status"])
	assert.NotContains(t, log[0].Body, "custom_fields")
	assert.Equal(t, 1.0, e.counter("o2ims_netbox_quarantines_total", map[string]string{"reason": "bmc-address-invalid"}))
	for _, entry := range e.logs.All() {
		for _, f := range entry.Context {
			assert.NotContains(t, f.String, "calvin")
		}
	}
}

func TestQuarantineOnlyFreeDevices(t *testing.T) {
	e := newEnv(t)
	owned := e.sim.AddDevice(netboxsim.Device{Status: "active", Custom: map[string]any{"o2ims_managed": true, "o2ims_request_uid": uid(1)}})
	d, err := e.client.Claims.GetDevice(ctx(t), owned)
	require.NoError(t, err)
	err = e.client.Claims.Quarantine(ctx(t), d, netbox.ReasonCredentialsMissing, "no Secret")
	assert.True(t, netbox.IsKind(err, netbox.KindPrecondition))
	assert.Empty(t, e.sim.PatchLog())

	// Claimed by someone between our read and our write: 412, left alone.
	free := e.addHost("h", nil)
	d, err = e.client.Claims.GetDevice(ctx(t), free)
	require.NoError(t, err)
	e.sim.SetPatchHook(func(id int32) {
		_ = e.sim.SetCustom(id, "o2ims_request_uid", uid(2))
		_ = e.sim.SetStatus(id, "active")
	})
	err = e.client.Claims.Quarantine(ctx(t), d, netbox.ReasonCredentialsAmbiguous, "two Secrets")
	assert.True(t, netbox.IsKind(err, netbox.KindPrecondition), "%v", err)
	got, _ := e.sim.Device(free)
	assert.Equal(t, "active", got.Status)
	assert.Zero(t, e.counter("o2ims_netbox_quarantines_total", map[string]string{"reason": "credentials-ambiguous"}))

	err = e.client.Claims.Quarantine(ctx(t), d, "flaky-network", "x")
	assert.True(t, netbox.IsKind(err, netbox.KindInvalid))
}

// A claimed device whose BMC refused its credentials: failed and unowned in one conditional write, with
// its reason in the changelog; a device no longer ours is never touched.
func TestQuarantineClaimed(t *testing.T) {
	e := newEnv(t)
	id := e.sim.AddDevice(netboxsim.Device{Status: "active", Custom: map[string]any{"o2ims_managed": true, "o2ims_request_uid": uid(1)}})
	res, err := e.client.Claims.QuarantineClaimed(ctx(t), id, uid(1), netbox.ReasonCredentialsRefused,
		"registration error: Failed to get power state for https://root:calvin@10.0.0.1/redfish")
	require.NoError(t, err)
	assert.Equal(t, netbox.Quarantined, res)
	got, _ := e.sim.Device(id)
	assert.Equal(t, "failed", got.Status)
	assert.Nil(t, got.Custom["o2ims_request_uid"], "no longer held by the request")
	require.Len(t, got.Changelog, 1)
	assert.True(t, strings.HasPrefix(got.Changelog[0], "o2ims quarantine (credentials-refused): registration error"), got.Changelog[0])
	assert.NotContains(t, got.Changelog[0], "calvin")
	assert.NotContains(t, got.Changelog[0], "10.0.0.1")
	log := e.sim.PatchLog()
	require.Len(t, log, 1)
	assert.NotEmpty(t, log[0].IfMatch, "conditional")
	assert.Equal(t, 1.0, e.counter("o2ims_netbox_quarantines_total", map[string]string{"reason": "credentials-refused"}))

	// Again (our write landed unanswered): no longer ours, left alone.
	res, err = e.client.Claims.QuarantineClaimed(ctx(t), id, uid(1), netbox.ReasonCredentialsRefused, "x")
	require.NoError(t, err)
	assert.Equal(t, netbox.NotOwned, res)
	other := e.sim.AddDevice(netboxsim.Device{Status: "active", Custom: map[string]any{"o2ims_managed": true, "o2ims_request_uid": uid(2)}})
	res, err = e.client.Claims.QuarantineClaimed(ctx(t), other, uid(1), netbox.ReasonCredentialsRefused, "x")
	require.NoError(t, err)
	assert.Equal(t, netbox.NotOwned, res)
	got, _ = e.sim.Device(other)
	assert.Equal(t, "active", got.Status)
	assert.Len(t, e.sim.PatchLog(), 1, "nothing else written")
	res, err = e.client.Claims.QuarantineClaimed(ctx(t), 999, uid(1), netbox.ReasonCredentialsRefused, "x")
	require.NoError(t, err)
	assert.Equal(t, netbox.DeviceGone, res)
}
