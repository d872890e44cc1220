package callback

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

// With SMO_URL, a callback is the SMO's host or inside CALLBACK_ALLOW_CIDRS: at creation and at delivery.
func TestCallbacksMustBeOnTheSMOsHosts(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	cfg, err := ConfigFromEnv(env(map[string]string{"SMO_URL": "https://SMO.example.com./o2, https://[2001:db8::7]:8443", "CALLBACK_ALLOW_CIDRS": "192.0.2.0/24"}))
	require.NoError(t, err)
	require.Equal(t, []string{"smo.example.com", "2001:db8::7"}, cfg.SMOHosts)
	_, err = ConfigFromEnv(env(map[string]string{"SMO_URL": "smo.example.com"}))
	require.ErrorContains(t, err, "SMO_URL")

	names := map[string][]netip.Addr{
		"smo.example.com":   {netip.MustParseAddr("198.51.100.1")},
		"other.example.com": {netip.MustParseAddr("198.51.100.2")},
		"lab.example.com":   {netip.MustParseAddr("192.0.2.9")},                                      // inside ALLOW
		"half.example.com":  {netip.MustParseAddr("192.0.2.9"), netip.MustParseAddr("198.51.100.3")}, // one address outside
	}
	p, err := New(cfg)
	require.NoError(t, err)
	p.WithLookup(func(_ context.Context, h string) ([]netip.Addr, error) { return names[hostKey(h)], nil })
	for cb, want := range map[string]Reason{
		"https://smo.example.com/cb": "", "https://SMO.EXAMPLE.COM./cb": "", "https://[2001:db8::7]/cb": "",
		"https://other.example.com/cb": NotSMO, "https://198.51.100.1/cb": NotSMO, "https://lab.example.com/cb": "",
		"https://192.0.2.10/cb": "", "https://half.example.com/cb": NotSMO,
	} {
		err := p.CheckURL(context.Background(), cb)
		if want == "" {
			require.NoError(t, err, cb)
			continue
		}
		require.NotNil(t, Refusal(err), cb)
		require.Equal(t, want, Refusal(err).Reason, cb)
		require.Contains(t, err.Error(), "SMO_URL", "it says why")
	}

	// A subscription stored before SMO_URL was set is refused at delivery, before any connection.
	var hits int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits++ }))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	names["elsewhere.example.com"] = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	p, err = New(Config{SMOHosts: []string{"smo.example.com"}, Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	require.NoError(t, err)
	p.WithLookup(func(_ context.Context, h string) ([]netip.Addr, error) {
		if h == "smo.example.com" {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		return nil, nil
	})
	resp, err := p.Client(0).Get("http://smo.example.com:" + u.Port() + "/cb")
	require.NoError(t, err, "the SMO's host is delivered to")
	resp.Body.Close()
	p.cfg.Allow = nil
	p.cfg.SMOHosts = []string{"other.example.com"}
	_, err = p.Client(0).Get("http://smo.example.com:" + u.Port() + "/cb")
	require.NotNil(t, Refusal(err))
	require.Equal(t, NotSMO, Refusal(err).Reason)
	require.Equal(t, 1, hits, "the refused delivery never connected")
}
