package app

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
)

const bootstrapToken = "0123456789abcdef0123456789abcdef01234567"

// bootstrapEnv is the operator's NetBox environment for sim, as a Deployment would set it.
func bootstrapEnv(t *testing.T, url string, extra map[string]string) func(string) string {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(bootstrapToken+"\n"), 0o600))
	env := map[string]string{"NETBOX_URL": url, "NETBOX_TOKEN_FILE": tokenFile, "NETBOX_ALLOW_HTTP": "true", "NETBOX_TIMEOUT": "5"}
	for k, v := range extra {
		env[k] = v
	}
	return func(k string) string { return env[k] }
}

func runBootstrap(t *testing.T, getenv func(string) string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"netbox", "bootstrap"}, getenv, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func startSim(t *testing.T, opts netboxsim.Options) (*netboxsim.Server, string) {
	t.Helper()
	if opts.Tokens == nil {
		opts.Tokens = []string{bootstrapToken}
	}
	sim := netboxsim.New(opts)
	ts := sim.Start()
	t.Cleanup(sim.Close)
	return sim, ts.URL
}

func TestNetboxBootstrapCreatesThenReportsExisting(t *testing.T) {
	sim, url := startSim(t, netboxsim.Options{})
	getenv := bootstrapEnv(t, url, map[string]string{"NETBOX_FIELD_BOOT_MAC": "pxe_mac"})

	code, out, errOut := runBootstrap(t, getenv)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Empty(t, errOut)
	assert.Contains(t, out, "netbox version 4.6.8 at "+url+"\n")
	for _, line := range []string{
		"field o2ims_managed (pool: boolean, filter logic not disabled, on dcim.device): created\n",
		"field o2ims_request_uid (owner: text, filter logic exact, on dcim.device): created\n",
		"field o2ims_bmc_address (BMC address: text or url, on dcim.device): created\n",
		"field pxe_mac (boot MAC: text, on dcim.device): created\n",
		"NetBox is ready for the operator\n",
	} {
		assert.Contains(t, out, line)
	}
	for _, perm := range []string{"dcim.view_device", "dcim.view_site", "dcim.view_devicetype", "extras.view_customfield", "dcim.change_device"} {
		assert.Contains(t, out, "("+perm+"): granted")
	}
	assert.Equal(t, 4, sim.Calls(http.MethodPost, netboxsim.RouteCustomFields))

	code, out, errOut = runBootstrap(t, getenv)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Equal(t, 4, strings.Count(out, "): existed\n"), out)
	assert.NotContains(t, out, "created")
	assert.Equal(t, 4, sim.Calls(http.MethodPost, netboxsim.RouteCustomFields))
}

func TestNetboxBootstrapFailuresExitOneWithTheReason(t *testing.T) {
	cases := map[string]struct {
		opts    netboxsim.Options
		field   *netboxsim.CustomField
		stderr  string
		stdout  []string
		noPosts bool
	}{
		"wrong definition": {
			field:   &netboxsim.CustomField{Name: "o2ims_request_uid", Type: netboxsim.TypeText},
			stderr:  "owner field o2ims_request_uid has filter_logic loose, want exact; nothing was changed",
			stdout:  []string{"field o2ims_request_uid (owner: text, filter logic exact, on dcim.device): wrong definition — ", "field o2ims_managed (pool: boolean, filter logic not disabled, on dcim.device): not created"},
			noPosts: true,
		},
		"old netbox": {
			opts:    netboxsim.Options{Version: "4.5.2"},
			stderr:  "NetBox 4.5.2 is older than 4.6.0",
			stdout:  []string{"netbox version 4.5.2 at "},
			noPosts: true,
		},
		"refused token": {
			opts:    netboxsim.Options{Tokens: []string{"someone-elses-token"}},
			stderr:  `forbidden (HTTP 403): NetBox says "Invalid v1 token"; check the token in NETBOX_TOKEN_FILE`,
			noPosts: true,
		},
		"read-only token": {
			opts:   netboxsim.Options{ReadOnlyTokens: []string{bootstrapToken}},
			stderr: "creating custom field o2ims_managed needs extras.add_customfield",
			stdout: []string{"permission change devices (dcim.change_device): MISSING — ", "permission read devices (dcim.view_device): granted"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sim, url := startSim(t, tc.opts)
			if tc.field != nil {
				sim.AddCustomField(*tc.field)
			}
			code, out, errOut := runBootstrap(t, bootstrapEnv(t, url, nil))
			assert.Equal(t, 1, code)
			assert.Contains(t, errOut, tc.stderr)
			assert.True(t, strings.HasPrefix(errOut, "o2ims-operator netbox bootstrap: "), errOut)
			assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
			for _, l := range tc.stdout {
				assert.Contains(t, out, l)
			}
			assert.NotContains(t, out, "ready")
			if tc.noPosts {
				assert.Zero(t, sim.Calls(http.MethodPost, netboxsim.RouteCustomFields))
			}
		})
	}
}

func TestNetboxBootstrapCommandLine(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 2, run(context.Background(), []string{"netbox", "bootstrp"}, func(string) string { return "" }, &stdout, &stderr))
	assert.Contains(t, stderr.String(), `want "netbox bootstrap" and nothing else, got "bootstrp"`)

	stdout.Reset()
	stderr.Reset()
	assert.Equal(t, 0, run(context.Background(), []string{"netbox", "bootstrap", "--help"}, nil, &stdout, &stderr))
	assert.Contains(t, stdout.String(), "Usage: o2ims-operator netbox bootstrap")

	stdout.Reset()
	stderr.Reset()
	assert.Equal(t, 1, run(context.Background(), []string{"netbox", "bootstrap"}, func(string) string { return "" }, &stdout, &stderr))
	assert.Equal(t, "o2ims-operator netbox bootstrap: NETBOX_URL is not set: it names the NetBox to prepare, as for the operator\n", stderr.String())
}
