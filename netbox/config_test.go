package netbox_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/netbox"
)

func envFunc(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestConfigFromEnvNotConfigured(t *testing.T) {
	_, ok, err := netbox.ConfigFromEnv(envFunc(nil))
	assert.False(t, ok)
	assert.NoError(t, err)
	_, ok, err = netbox.ConfigFromEnv(envFunc(map[string]string{"NETBOX_URL": "  "}))
	assert.False(t, ok)
	assert.NoError(t, err)
}

func TestConfigFromEnvDefaultsAndOverrides(t *testing.T) {
	cfg, ok, err := netbox.ConfigFromEnv(envFunc(map[string]string{
		"NETBOX_URL":        "https://netbox.example.com",
		"NETBOX_TOKEN_FILE": "/var/run/netbox/token",
	}))
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, 10*time.Second, cfg.Timeout)
	assert.Equal(t, netbox.DefaultFieldNames(), cfg.Fields)
	assert.False(t, cfg.AllowHTTP)

	cfg, _, err = netbox.ConfigFromEnv(envFunc(map[string]string{
		"NETBOX_URL":               "http://127.0.0.1:8000/",
		"NETBOX_TOKEN_FILE":        "/t",
		"NETBOX_CA_FILE":           "/ca.pem",
		"NETBOX_ALLOW_HTTP":        "true",
		"NETBOX_TIMEOUT":           "3",
		"NETBOX_FIELD_MANAGED":     "pool",
		"NETBOX_FIELD_REQUEST_UID": "owner",
		"NETBOX_FIELD_BMC_ADDRESS": "bmc",
		"NETBOX_FIELD_BOOT_MAC":    "mac",
	}))
	require.NoError(t, err)
	assert.Equal(t, 3*time.Second, cfg.Timeout)
	assert.Equal(t, "/ca.pem", cfg.CAFile)
	assert.True(t, cfg.AllowHTTP)
	assert.Equal(t, netbox.FieldNames{Managed: "pool", RequestUID: "owner", BMCAddress: "bmc", BootMAC: "mac"}, cfg.Fields)
}

func TestConfigFromEnvErrors(t *testing.T) {
	base := map[string]string{"NETBOX_URL": "https://nb.example.com", "NETBOX_TOKEN_FILE": "/t"}
	cases := []struct {
		name     string
		set      map[string]string
		variable string
	}{
		{"http without opt-in", map[string]string{"NETBOX_URL": "http://nb.example.com"}, "NETBOX_URL"},
		{"path", map[string]string{"NETBOX_URL": "https://nb.example.com/netbox"}, "NETBOX_URL"},
		{"query", map[string]string{"NETBOX_URL": "https://nb.example.com/?x=1"}, "NETBOX_URL"},
		{"credentials", map[string]string{"NETBOX_URL": "https://admin:hunter2@nb.example.com"}, "NETBOX_URL"},
		{"scheme", map[string]string{"NETBOX_URL": "ftp://nb.example.com"}, "NETBOX_URL"},
		{"no host", map[string]string{"NETBOX_URL": "nb.example.com"}, "NETBOX_URL"},
		{"bad port", map[string]string{"NETBOX_URL": "https://nb.example.com:99999"}, "NETBOX_URL"},
		{"placeholder", map[string]string{"NETBOX_URL": "https://netbox.set-me.invalid"}, "NETBOX_URL"},
		{"no token file", map[string]string{"NETBOX_TOKEN_FILE": ""}, "NETBOX_TOKEN_FILE"},
		{"allow http", map[string]string{"NETBOX_ALLOW_HTTP": "yes please"}, "NETBOX_ALLOW_HTTP"},
		{"timeout text", map[string]string{"NETBOX_TIMEOUT": "10s"}, "NETBOX_TIMEOUT"},
		{"timeout zero", map[string]string{"NETBOX_TIMEOUT": "0"}, "NETBOX_TIMEOUT"},
		{"timeout huge", map[string]string{"NETBOX_TIMEOUT": "100000"}, "NETBOX_TIMEOUT"},
		{"field name", map[string]string{"NETBOX_FIELD_MANAGED": "Pool-Flag"}, "NETBOX_FIELD_MANAGED"},
		{"duplicate field", map[string]string{"NETBOX_FIELD_BOOT_MAC": "o2ims_bmc_address"}, "NETBOX_FIELD_BOOT_MAC"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := map[string]string{}
			for k, v := range base {
				m[k] = v
			}
			for k, v := range tc.set {
				m[k] = v
			}
			_, ok, err := netbox.ConfigFromEnv(envFunc(m))
			require.Error(t, err)
			assert.True(t, ok)
			assert.True(t, netbox.IsKind(err, netbox.KindConfig))
			msg := err.Error()
			assert.Contains(t, msg, tc.variable)
			assert.NotContains(t, msg, "\n")
			assert.NotContains(t, msg, "hunter2")
		})
	}
}

func TestNewFailsFast(t *testing.T) {
	dir := t.TempDir()
	cfg := netbox.Config{URL: "https://nb.example.com", TokenFile: dir + "/missing"}
	_, err := netbox.New(cfg, nil, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "NETBOX_TOKEN_FILE cannot be read")

	empty := writeFile(t, dir, "empty", "\n")
	_, err = netbox.New(netbox.Config{URL: cfg.URL, TokenFile: empty}, nil, nil)
	assert.ErrorContains(t, err, "NETBOX_TOKEN_FILE is empty")

	spaced := writeFile(t, dir, "spaced", "abc def")
	_, err = netbox.New(netbox.Config{URL: cfg.URL, TokenFile: spaced}, nil, nil)
	assert.ErrorContains(t, err, "cannot be an API token")
	assert.NotContains(t, err.Error(), "abc def")

	tok := writeFile(t, dir, "tok", testToken)
	badCA := writeFile(t, dir, "ca.pem", "not a certificate")
	_, err = netbox.New(netbox.Config{URL: cfg.URL, TokenFile: tok, CAFile: badCA}, nil, nil)
	assert.ErrorContains(t, err, "NETBOX_CA_FILE holds no PEM certificate")

	c, err := netbox.New(netbox.Config{URL: cfg.URL, TokenFile: tok}, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, netbox.DefaultFieldNames(), c.Schema.Fields())
}

func TestIdentity(t *testing.T) {
	assert.Equal(t, "netbox-42", netbox.Identity(42))
	id, err := netbox.ParseIdentity("netbox-42")
	require.NoError(t, err)
	assert.Equal(t, int32(42), id)
	id, err = netbox.ParseIdentity(netbox.Identity(2147483647))
	require.NoError(t, err)
	assert.Equal(t, int32(2147483647), id)
	for _, bad := range []string{"", "netbox-", "netbox-0", "netbox-007", "netbox--1", "netbox-+1", "netbox-2147483648",
		"netbox-1a", "Netbox-1", "netbox-１", "bmh-1", "netbox-99999999999"} {
		_, err := netbox.ParseIdentity(bad)
		assert.Error(t, err, bad)
		assert.True(t, netbox.IsKind(err, netbox.KindInvalid), bad)
	}
}

func TestErrorText(t *testing.T) {
	e := &netbox.Error{Kind: netbox.KindServer, Op: "claim", Status: 503, MayHaveLanded: true, Retryable: true,
		Err: errorString("bad\nthing Token 0123456789abcdef0123456789 nbt_abc.def")}
	msg := e.Error()
	assert.NotContains(t, msg, "\n")
	assert.NotContains(t, msg, "0123456789abcdef0123456789")
	assert.NotContains(t, msg, "nbt_abc")
	assert.True(t, strings.HasPrefix(msg, "netbox claim: server (HTTP 503): bad thing"), msg)
	assert.Contains(t, msg, "not replayed")
}

type errorString string

func (e errorString) Error() string { return string(e) }
