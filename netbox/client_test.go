package netbox_test

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/netbox"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

// replaceFile swaps the file like kubelet updates a mounted Secret (new inode, rename).
func replaceFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".new"
	require.NoError(t, os.WriteFile(tmp, []byte(content), 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

func TestCheckPasses(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.client.Schema.Check(ctx(t)))
	assert.Equal(t, 1, e.sim.Calls("GET", netboxsim.RouteStatus))
	assert.Equal(t, 1, e.sim.Calls("GET", netboxsim.RouteCustomFields))
}

func TestCheckRefusesOldNetBox(t *testing.T) {
	for _, v := range []string{"4.5.3", "4.5.10", "3.7.0", "4.6"} {
		e := newEnv(t, withSim(netboxsim.Options{Version: v}))
		err := e.client.Schema.Check(ctx(t))
		if v == "4.6" {
			assert.NoError(t, err, v)
			continue
		}
		require.Error(t, err, v)
		assert.True(t, netbox.IsKind(err, netbox.KindUnsupported), v)
		assert.Contains(t, err.Error(), "older than 4.6.0")
		assert.NotContains(t, err.Error(), "\n")
	}
	for _, v := range []string{"4.6.0-beta1", "v4.7.0", "5.0.1-Docker-3.4.0"} {
		e := newEnv(t, withSim(netboxsim.Options{Version: v}))
		assert.NoError(t, e.client.Schema.Check(ctx(t)), v)
	}
	e := newEnv(t, withSim(netboxsim.Options{Version: "next"}))
	assert.True(t, netbox.IsKind(e.client.Schema.Check(ctx(t)), netbox.KindProtocol))
}

func TestCheckFixedFields(t *testing.T) {
	cases := []struct {
		name   string
		fields []netboxsim.CustomField
		want   string
	}{
		{"missing owner", []netboxsim.CustomField{
			{Name: "o2ims_managed", Type: "boolean"},
			{Name: "o2ims_bmc_address", Type: "url"},
			{Name: "o2ims_boot_mac", Type: "text"},
		}, "owner field o2ims_request_uid does not exist on dcim.device"},
		{"wrong types", []netboxsim.CustomField{
			{Name: "o2ims_managed", Type: "text", FilterLogic: "exact"},
			{Name: "o2ims_request_uid", Type: "integer", FilterLogic: "exact"},
			{Name: "o2ims_bmc_address", Type: "text"},
			{Name: "o2ims_boot_mac", Type: "longtext"},
		}, "pool field o2ims_managed has type text, want boolean; owner field o2ims_request_uid has type integer, want text; boot MAC field o2ims_boot_mac has type longtext, want text"},
		{"loose owner", []netboxsim.CustomField{
			{Name: "o2ims_managed", Type: "boolean"},
			{Name: "o2ims_request_uid", Type: "text"}, // NetBox's default filter_logic: loose
			{Name: "o2ims_bmc_address", Type: "text"},
			{Name: "o2ims_boot_mac", Type: "text"},
		}, "owner field o2ims_request_uid has filter_logic loose, want exact"},
		{"pool not filterable", []netboxsim.CustomField{
			{Name: "o2ims_managed", Type: "boolean", FilterLogic: "disabled"},
			{Name: "o2ims_request_uid", Type: "text", FilterLogic: "exact"},
			{Name: "o2ims_bmc_address", Type: "text"},
			{Name: "o2ims_boot_mac", Type: "text"},
		}, "pool field o2ims_managed has filter_logic disabled"},
		{"wrong object type", []netboxsim.CustomField{
			{Name: "o2ims_managed", Type: "boolean", ObjectTypes: []string{"dcim.site"}},
			{Name: "o2ims_request_uid", Type: "text", FilterLogic: "exact"},
			{Name: "o2ims_bmc_address", Type: "text"},
			{Name: "o2ims_boot_mac", Type: "text"},
		}, "pool field o2ims_managed does not exist on dcim.device"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, withoutStandardFields())
			for _, f := range tc.fields {
				e.sim.AddCustomField(f)
			}
			err := e.client.Schema.Check(ctx(t))
			require.Error(t, err)
			assert.True(t, netbox.IsKind(err, netbox.KindSchema))
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "\n")
			e.sim.ClearFaults()
		})
	}
}

func TestCustomFieldsPaged(t *testing.T) {
	e := newEnv(t)
	// More than one page of 1000 fields (MAX_PAGE_SIZE), the fixed ones sorted last.
	for i := 0; i < 1001; i++ {
		e.sim.AddCustomField(netboxsim.CustomField{Name: fmt.Sprintf("a_%04d", i), Type: "text"})
	}
	require.NoError(t, e.client.Schema.Check(ctx(t)))
	assert.Equal(t, 2, e.sim.Calls("GET", netboxsim.RouteCustomFields))
}

func TestTokenForms(t *testing.T) {
	for _, tok := range []string{testToken, testTokenV2} {
		e := newEnv(t, withToken(tok))
		require.NoError(t, e.client.Schema.Check(ctx(t)), tok[:4])
	}
	// v2 token presented as Token: NetBox infers v2 from the prefix too, but we
	// send Bearer; a v2 token must never be sent as a v1 one.
	e := newEnv(t, withToken("nbt_AbCdEfGhIjKl.wrongwrongwrongwrong"))
	err := e.client.Schema.Check(ctx(t))
	require.Error(t, err)
	assert.True(t, netbox.IsKind(err, netbox.KindForbidden))
	assert.Contains(t, err.Error(), `NetBox says "Invalid v2 token"`)
	assert.NotContains(t, err.Error(), "wrongwrong")
}

func TestHeadersSent(t *testing.T) {
	var seen atomic.Value
	sim := netboxsim.New(netboxsim.Options{Tokens: []string{testTokenV2}})
	for _, f := range netboxsim.StandardFields() {
		sim.AddCustomField(f)
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/status/" {
			seen.Store(r.Header.Clone())
		}
		sim.ServeHTTP(w, r)
	}))
	defer ts.Close()
	dir := t.TempDir()
	c, err := netbox.New(netbox.Config{URL: ts.URL, TokenFile: writeFile(t, dir, "t", testTokenV2), AllowHTTP: true}, nil, nil)
	require.NoError(t, err)
	require.NoError(t, c.Schema.Check(ctx(t)))
	h := seen.Load().(http.Header)
	assert.Equal(t, "Bearer "+testTokenV2, h.Get("Authorization"))
	assert.Equal(t, "en-US", h.Get("Accept-Language"))
	assert.Equal(t, "application/json", h.Get("Accept"))
	assert.Equal(t, "o2ims-operator", h.Get("User-Agent"))
}

func TestTokenRotation(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.client.Schema.Check(ctx(t)))

	// NetBox side rotates: the old token is revoked.
	newTok := "fedcba9876543210fedcba9876543210fedcba98"
	e.sim.SetTokens(newTok)
	err := e.client.Schema.Check(ctx(t))
	require.True(t, netbox.IsKind(err, netbox.KindForbidden), "%v", err)
	assert.NotContains(t, err.Error(), testToken)

	// The mounted Secret is updated: the next call uses it, no restart.
	replaceFile(t, e.tokenFile, newTok+"\n")
	require.NoError(t, e.client.Schema.Check(ctx(t)))

	// Rewritten in place, too.
	e.sim.SetTokens(testTokenV2)
	require.NoError(t, os.WriteFile(e.tokenFile, []byte(testTokenV2), 0o600))
	require.NoError(t, e.client.Schema.Check(ctx(t)))

	// A transiently unreadable file keeps the last good token.
	require.NoError(t, os.Remove(e.tokenFile))
	require.NoError(t, e.client.Schema.Check(ctx(t)))
}

func TestRedirectRefused(t *testing.T) {
	var leaked atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
		w.WriteHeader(200)
	}))
	defer target.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+r.URL.Path, http.StatusFound)
	}))
	defer redirector.Close()
	dir := t.TempDir()
	c, err := netbox.New(netbox.Config{URL: redirector.URL, TokenFile: writeFile(t, dir, "t", testToken), AllowHTTP: true}, nil, nil)
	require.NoError(t, err)
	err = c.Schema.Check(ctx(t))
	require.Error(t, err)
	assert.True(t, netbox.IsKind(err, netbox.KindProtocol))
	assert.Contains(t, err.Error(), "redirect")
	var ne *netbox.Error
	require.True(t, errors.As(err, &ne))
	assert.Equal(t, http.StatusFound, ne.Status)
	assert.Zero(t, leaked.Load())
}

func TestHTTPS(t *testing.T) {
	sim := netboxsim.New(netboxsim.Options{Tokens: []string{testToken}})
	for _, f := range netboxsim.StandardFields() {
		sim.AddCustomField(f)
	}
	ts := sim.StartTLS()
	defer sim.Close()
	dir := t.TempDir()
	tok := writeFile(t, dir, "t", testToken)
	ca := writeFile(t, dir, "ca.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})))

	c, err := netbox.New(netbox.Config{URL: ts.URL, TokenFile: tok, CAFile: ca}, nil, nil)
	require.NoError(t, err)
	require.NoError(t, c.Schema.Check(ctx(t)))

	// Without the CA the certificate is not trusted; TLS failures are not retried.
	c, err = netbox.New(netbox.Config{URL: ts.URL, TokenFile: tok}, nil, nil)
	require.NoError(t, err)
	before := sim.Calls("GET", netboxsim.RouteStatus)
	err = c.Schema.Check(ctx(t))
	require.Error(t, err)
	assert.True(t, netbox.IsKind(err, netbox.KindTransport))
	assert.Contains(t, err.Error(), "TLS verification failed")
	assert.Equal(t, before, sim.Calls("GET", netboxsim.RouteStatus))

	// Plain http needs the explicit opt-in.
	plain := strings.Replace(ts.URL, "https://", "http://", 1)
	_, err = netbox.New(netbox.Config{URL: plain, TokenFile: tok}, nil, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "must use https")
}

func TestGETRetriedThenSucceeds(t *testing.T) {
	e := newEnv(t)
	id := e.addHost("h1", nil)
	e.sim.InjectFault(netboxsim.Fault{Method: "GET", Route: netboxsim.RouteDevice, Status: 503, Count: 2})
	d, err := e.client.Claims.GetDevice(ctx(t), id)
	require.NoError(t, err)
	assert.Equal(t, id, d.ID)
	assert.NotEmpty(t, d.ETag)
	assert.Equal(t, 3, e.sim.Calls("GET", netboxsim.RouteDevice))
	assert.Equal(t, 2.0, e.counter("o2ims_netbox_api_errors_total", map[string]string{"type": "5xx"}))
	assert.Equal(t, 3.0, e.counter("o2ims_netbox_request_duration_seconds", map[string]string{"operation": "get_device"}))

	e.sim.InjectFault(netboxsim.Fault{Method: "GET", Route: netboxsim.RouteDevice, Status: 429, Count: 1})
	_, err = e.client.Claims.GetDevice(ctx(t), id)
	require.NoError(t, err)
	assert.Equal(t, 1.0, e.counter("o2ims_netbox_api_errors_total", map[string]string{"type": "429"}))
}

func TestGETRetryBounded(t *testing.T) {
	e := newEnv(t)
	id := e.addHost("h1", nil)
	e.sim.InjectFault(netboxsim.Fault{Method: "GET", Route: netboxsim.RouteDevice, Status: 502, Count: 100,
		Body: "<html>bad gateway</html>"})
	_, err := e.client.Claims.GetDevice(ctx(t), id)
	require.Error(t, err)
	var ne *netbox.Error
	require.True(t, errors.As(err, &ne))
	assert.Equal(t, netbox.KindServer, ne.Kind)
	assert.Equal(t, 502, ne.Status)
	assert.True(t, ne.Retryable)
	assert.False(t, ne.MayHaveLanded)
	assert.NotContains(t, err.Error(), "<html>")
	assert.Equal(t, 4, e.sim.Calls("GET", netboxsim.RouteDevice))

	// A 4xx is not retried.
	e2 := newEnv(t)
	_, err = e2.client.Claims.GetDevice(ctx(t), 999)
	assert.True(t, netbox.IsKind(err, netbox.KindNotFound))
	assert.Equal(t, 1, e2.sim.Calls("GET", netboxsim.RouteDevice))
}

func TestPerCallTimeoutAndCaller(t *testing.T) {
	e := newEnv(t, withConfig(func(c *netbox.Config) { c.Timeout = 50 * time.Millisecond }))
	id := e.addHost("h1", nil)
	e.sim.SetLatency("GET", netboxsim.RouteDevice, time.Hour)
	_, err := e.client.Claims.GetDevice(ctx(t), id)
	require.Error(t, err)
	var ne *netbox.Error
	require.True(t, errors.As(err, &ne))
	assert.Equal(t, netbox.KindTimeout, ne.Kind)
	assert.True(t, ne.Retryable)
	assert.Contains(t, err.Error(), "no answer within 50ms")
	assert.Equal(t, 4, e.sim.Calls("GET", netboxsim.RouteDevice), "timeouts of a GET are retried")
	assert.Equal(t, 4.0, e.counter("o2ims_netbox_api_errors_total", map[string]string{"type": "timeout"}))

	// The caller's own cancellation stops at once.
	e2 := newEnv(t)
	id2 := e2.addHost("h1", nil)
	e2.sim.SetLatency("GET", netboxsim.RouteDevice, time.Hour)
	c, cancel := context.WithCancel(context.Background())
	go func() {
		for e2.sim.Calls("GET", netboxsim.RouteDevice) == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err = e2.client.Claims.GetDevice(c, id2)
	assert.True(t, netbox.IsKind(err, netbox.KindCanceled), "%v", err)
	assert.Equal(t, 1, e2.sim.Calls("GET", netboxsim.RouteDevice))
}

func TestTransportError(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	url := ts.URL
	ts.Close() // nothing listens any more
	dir := t.TempDir()
	c, err := netbox.New(netbox.Config{URL: url, TokenFile: writeFile(t, dir, "t", testToken), AllowHTTP: true}, nil, nil)
	require.NoError(t, err)
	netbox.SetRetryForTest(c, 2, time.Millisecond)
	err = c.Schema.Check(ctx(t))
	var ne *netbox.Error
	require.True(t, errors.As(err, &ne))
	assert.Equal(t, netbox.KindTransport, ne.Kind)
	assert.True(t, ne.Retryable)
}

func TestUndecodableAnswer(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"netbox-version": 4.6}`))
	}))
	defer ts.Close()
	dir := t.TempDir()
	c, err := netbox.New(netbox.Config{URL: ts.URL, TokenFile: writeFile(t, dir, "t", testToken), AllowHTTP: true}, nil, nil)
	require.NoError(t, err)
	err = c.Schema.Check(ctx(t))
	assert.True(t, netbox.IsKind(err, netbox.KindProtocol), "%v", err)

	ts2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(`<html>login</html>`))
	}))
	defer ts2.Close()
	c, err = netbox.New(netbox.Config{URL: ts2.URL, TokenFile: writeFile(t, dir, "t2", testToken), AllowHTTP: true}, nil, nil)
	require.NoError(t, err)
	_, err = c.Claims.GetDevice(ctx(t), 1)
	assert.True(t, netbox.IsKind(err, netbox.KindProtocol), "%v", err)
}

func TestErrorsNeverContainToken(t *testing.T) {
	for _, tok := range []string{testToken, testTokenV2, "short-v1-tok"} {
		e := newEnv(t, withToken(tok), withSim(netboxsim.Options{Tokens: []string{tok}}))
		id := e.addHost("h1", nil)
		// A misbehaving proxy echoes the request headers back.
		echo := `{"detail": "denied for Authorization: Token ` + tok + ` and Bearer ` + tok + ` (` + tok + `)"}`
		for _, status := range []int{400, 401, 403, 500} {
			e.sim.InjectFault(netboxsim.Fault{Method: "GET", Route: netboxsim.RouteDevice, Status: status, Count: 10, Body: echo})
			_, err := e.client.Claims.GetDevice(ctx(t), id)
			require.Error(t, err)
			assert.NotContains(t, err.Error(), tok, "status %d", status)
			assert.NotContains(t, err.Error(), "\n")
			e.sim.ClearFaults()
		}
		e.sim.InjectFault(netboxsim.Fault{Method: "PATCH", Route: netboxsim.RouteDevice, Status: 412, Body: echo})
		d, err := e.client.Claims.GetDevice(ctx(t), id)
		require.NoError(t, err)
		_, err = e.client.Claims.Claim(ctx(t), d, uid(1))
		if err != nil {
			assert.NotContains(t, err.Error(), tok)
		}
		for _, entry := range e.logs.All() {
			assert.NotContains(t, entry.Message, tok)
			for _, f := range entry.Context {
				assert.NotContains(t, f.String, tok)
			}
		}
	}
}

func TestTwoClientsShareARegistry(t *testing.T) {
	e := newEnv(t)
	c2, err := netbox.New(e.cfg, nil, e.reg)
	require.NoError(t, err)
	id := e.addHost("h", nil)
	d, err := c2.Claims.GetDevice(ctx(t), id)
	require.NoError(t, err)
	_, err = c2.Claims.Claim(ctx(t), d, uid(1))
	require.NoError(t, err)
	assert.Equal(t, 1.0, e.counter("o2ims_netbox_assignment_attempts_total", map[string]string{"result": "success"}))
}
