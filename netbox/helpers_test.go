package netbox_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/o2ims-operator/o2ims-operator/netbox"
	"github.com/o2ims-operator/o2ims-operator/tests/promtest"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
)

const (
	testToken   = "0123456789abcdef0123456789abcdef01234567" // v1 (40 chars, like NetBox's)
	testTokenV2 = "nbt_AbCdEfGhIjKl.s3cr3tS3cr3tS3cr3tS3cr3tS3cr3tS3cr3t"
)

// env is one simulator plus a client configured for it.
type env struct {
	t         *testing.T
	sim       *netboxsim.Server
	ts        *httptest.Server
	client    *netbox.Client
	cfg       netbox.Config
	reg       *prometheus.Registry
	logs      *observer.ObservedLogs
	tokenFile string
}

type envOption func(*envConfig)

type envConfig struct {
	sim       netboxsim.Options
	noFields  bool
	token     string
	configure func(*netbox.Config)
}

func withSim(o netboxsim.Options) envOption       { return func(c *envConfig) { c.sim = o } }
func withoutStandardFields() envOption            { return func(c *envConfig) { c.noFields = true } }
func withToken(tok string) envOption              { return func(c *envConfig) { c.token = tok } }
func withConfig(f func(*netbox.Config)) envOption { return func(c *envConfig) { c.configure = f } }

func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	ec := envConfig{token: testToken}
	for _, o := range opts {
		o(&ec)
	}
	if ec.sim.Tokens == nil {
		ec.sim.Tokens = []string{testToken, testTokenV2}
	}
	sim := netboxsim.New(ec.sim)
	if !ec.noFields {
		for _, f := range netboxsim.StandardFields() {
			sim.AddCustomField(f)
		}
	}
	ts := sim.Start()
	t.Cleanup(sim.Close)

	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(ec.token+"\n"), 0o600))
	cfg := netbox.Config{URL: ts.URL, TokenFile: tokenFile, AllowHTTP: true, Timeout: 5 * time.Second}
	if ec.configure != nil {
		ec.configure(&cfg)
	}
	core, logs := observer.New(zap.DebugLevel)
	reg := prometheus.NewRegistry()
	c, err := netbox.New(cfg, zap.New(core), reg)
	require.NoError(t, err)
	netbox.SetRetryForTest(c, 4, time.Millisecond)
	return &env{t: t, sim: sim, ts: ts, client: c, cfg: cfg, reg: reg, logs: logs, tokenFile: tokenFile}
}

func ctx(t *testing.T) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// addCapability defines an exact-match capability field.
func (e *env) addCapability(name, typ string, choices ...string) {
	e.sim.AddCustomField(netboxsim.CustomField{Name: name, Type: typ, FilterLogic: netboxsim.FilterExact, Choices: choices})
}

// addHost adds a free pool device with valid BMC data and the given capabilities.
func (e *env) addHost(name string, caps map[string]any) int32 {
	custom := map[string]any{
		"o2ims_managed":     true,
		"o2ims_bmc_address": "redfish-virtualmedia+https://10.0.0.1/redfish/v1/Systems/1",
		"o2ims_boot_mac":    "52:54:00:12:34:56",
	}
	for k, v := range caps {
		custom[k] = v
	}
	return e.sim.AddDevice(netboxsim.Device{Name: name, Status: "staged", Custom: custom})
}

// counter reads a counter's value, or a histogram's sample count, from the test registry (0 when absent).
func (e *env) counter(name string, labels map[string]string) float64 {
	e.t.Helper()
	return promtest.Gather(e.t, e.reg).Sum(name, labels)
}

func uid(i int) string { return fmt.Sprintf("6f1c2a4e-0000-4000-8000-%012d", i) }
