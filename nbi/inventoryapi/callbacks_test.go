package inventoryapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/nbi/callback"
	"github.com/o2ims-operator/o2ims-operator/subscriptions/smo"
	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
	"github.com/o2ims-operator/o2ims-operator/tests/promtest"
)

// testLookup resolves the tests' names without DNS. The public addresses are documentation ranges: they
// are only ever resolved, never connected to.
func testLookup(_ context.Context, host string) ([]netip.Addr, error) {
	addrs := map[string][]string{
		"smo.example.com":       {"198.51.100.7"},
		"elsewhere.example.com": {"198.51.100.8"},
		"loopback.example.com":  {"127.0.0.1"},
		"metadata.example.com":  {"169.254.169.254"},
		"mixed.example.com":     {"198.51.100.7", "::1"},
	}[strings.ToLower(strings.TrimSuffix(host, "."))]
	if addrs == nil {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, a := range addrs {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

// testPolicy is the policy of cfg resolving through lookup. The policy tests subscribe to names and
// addresses nobody listens on, so SOL 013's test of the callback (a GET that must answer 204) is off in
// them; callbacktest_test.go tests it with real receivers.
func testPolicy(t *testing.T, cfg callback.Config, lookup func(context.Context, string) ([]netip.Addr, error)) *callback.Policy {
	t.Helper()
	cfg.SkipTest = true
	p, err := callback.New(cfg)
	require.NoError(t, err)
	return p.WithLookup(lookup)
}

// Every callback that reaches inside the O-Cloud is a 400 nbi.ProblemDetails that says why, whatever notation
// the address is written in; private ranges are allowed unless CALLBACK_DENY_PRIVATE; the CIDR lists
// override the classes both ways; the API server and the operator itself stay refused even where
// CALLBACK_ALLOW_CIDRS allows their range.
func TestCallbacksInsideTheOCloudAreRefusedAtCreation(t *testing.T) {
	se := newSubsEnv(t)
	nbi, err := netip.ParseAddrPort(se.Srv.Addr())
	require.NoError(t, err)
	own := func() []string { return []string{se.Srv.Addr(), "10.244.1.7"} } // the NBI's listener, POD_IP
	policy := func(cfg callback.Config) *callback.Policy {
		return testPolicy(t, cfg, testLookup).WithAPIServer(context.Background(), "10.96.0.1", "https://127.0.0.1:6443").WithOwn(own)
	}
	prefixes := func(s ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, p := range s {
			out = append(out, netip.MustParsePrefix(p))
		}
		return out
	}
	defaults := callback.Config{}
	loopbackAllowed := callback.Config{Allow: prefixes("127.0.0.0/8", "::1/128")}
	for _, c := range []struct {
		cfg      callback.Config
		callback string
		says     string // "" : accepted
	}{
		// loopback, every notation
		{defaults, "http://127.0.0.1:22/", "loopback"},
		{defaults, "http://" + nbi.String() + "/o2ims-infrastructureInventory/v1", "the operator itself"},
		{defaults, "http://[::1]:8080/", "loopback"},
		{defaults, "http://[0:0:0:0:0:0:0:1]/", "loopback"},
		{defaults, "http://[::ffff:127.0.0.1]/", "loopback"},
		{defaults, "http://[::ffff:7f00:1]/", "loopback"},
		{defaults, "http://127.255.255.254/", "loopback"},
		{defaults, "http://2130706433/", "dotted decimal"},
		{defaults, "http://0177.0.0.1/", "dotted decimal"},
		{defaults, "http://127.1/", "dotted decimal"},
		{defaults, "http://0x7f.0.0.1/", "dotted decimal"},
		{defaults, "http://0x7f000001./", "dotted decimal"},
		{defaults, "http://localhost:8080/", "loopback"},
		{defaults, "http://LocalHost./", "loopback"},
		{defaults, "http://api.localhost/", "loopback"},
		{defaults, "http://loopback.example.com/", `"loopback.example.com" resolves to 127.0.0.1, a loopback address`},
		{defaults, "http://mixed.example.com/", "resolves to ::1, a loopback address"},
		// link-local: the cloud metadata service
		{defaults, "http://169.254.169.254/latest/meta-data/", "link-local"},
		{defaults, "http://metadata.example.com/latest/meta-data/", "link-local"},
		{defaults, "http://[fe80::1%25eth0]/", "link-local"},
		{defaults, "http://[fe80::a:b]:8080/", "link-local"},
		{defaults, "http://[::ffff:169.254.169.254]/", "link-local"},
		// unspecified, multicast, reserved
		{defaults, "http://0.0.0.0:8080/", "unspecified"},
		{defaults, "http://0.1.2.3/", "unspecified"},
		{defaults, "http://[::]/", "unspecified"},
		{defaults, "http://224.0.0.1/", "multicast"},
		{defaults, "http://[ff02::1]/", "multicast"},
		{defaults, "http://255.255.255.255/", "reserved"},
		{defaults, "http://[::127.0.0.1]/", "reserved"},
		{defaults, "http://[64:ff9b::7f00:1]/", "loopback"},
		{defaults, "http://[2002:7f00:1::]/", "loopback"},
		// the API server (in-cluster Service: every port; the configured endpoint: its port) and the operator
		{defaults, "https://10.96.0.1/api/v1/namespaces/kube-system/secrets", "the Kubernetes API server"},
		{defaults, "https://10.96.0.1:6443/", "the Kubernetes API server"},
		{loopbackAllowed, "https://127.0.0.1:6443/api", "the Kubernetes API server"},
		{loopbackAllowed, "http://" + nbi.String() + "/o2ims-infrastructureInventory/v1", "the operator itself"},
		{loopbackAllowed, "http://10.244.1.7:9000/", "the operator itself"},
		{defaults, "http://nowhere.example.com/", "does not resolve"},
		{defaults, "http://smo_%C3%A9.example.com/", "letters, digits"},
		// private ranges: allowed unless CALLBACK_DENY_PRIVATE
		{defaults, "http://10.1.2.3:8080/smo", ""},
		{defaults, "http://192.168.1.10/", ""},
		{defaults, "http://172.16.0.1/", ""},
		{defaults, "http://[fd00::1]/", ""},
		{callback.Config{DenyPrivate: true}, "http://10.1.2.3:8080/smo", "private"},
		{callback.Config{DenyPrivate: true}, "http://[fd00::1]/", "private"},
		{callback.Config{DenyPrivate: true}, "http://[::ffff:192.168.1.1]/", "private"},
		// the CIDR lists, both ways; the longest prefix decides, deny wins a tie
		{callback.Config{Allow: prefixes("169.254.169.254/32")}, "http://169.254.169.254/", ""},
		{callback.Config{Deny: prefixes("198.51.100.0/24")}, "https://smo.example.com/", "CALLBACK_DENY_CIDRS"},
		{callback.Config{Deny: prefixes("10.0.0.0/8"), Allow: prefixes("10.1.0.0/16")}, "http://10.1.2.3/", ""},
		{callback.Config{Deny: prefixes("10.0.0.0/8"), Allow: prefixes("10.1.0.0/16")}, "http://10.2.0.1/", "CALLBACK_DENY_CIDRS"},
		{callback.Config{Deny: prefixes("10.1.0.0/16"), Allow: prefixes("10.1.0.0/16")}, "http://10.1.2.3/", "CALLBACK_DENY_CIDRS"},
		{loopbackAllowed, "http://127.0.0.1:22/", ""},
		// public
		{defaults, "https://smo.example.com/smo/v1/observer", ""},
		{defaults, "https://SMO.example.com./smo", ""},
		{defaults, "http://[2001:db8::1]:8080/", ""},
		{defaults, "http://198.51.100.1/", ""},
	} {
		se.subs.WithPolicy(policy(c.cfg))
		x := se.send(http.MethodPost, subsPath, nbitest.JSONBody(t, map[string]any{"callback": c.callback}))
		if c.says == "" {
			require.Equal(t, http.StatusCreated, x.Code(), "%s: %s", c.callback, x.Body)
			continue
		}
		require.Equal(t, http.StatusBadRequest, x.Code(), "%s: %s", c.callback, x.Body)
		require.Equal(t, "application/problem+json", x.Resp.Header.Get("Content-Type"))
		require.Contains(t, x.Object(t)["detail"], c.says, c.callback)
	}
}

// A name that resolves to a public address when the subscription is created and to loopback when a
// notification is delivered (DNS rebinding) is refused at the connection: nothing reaches the loopback
// receiver, the refusal counts as a failed delivery retried with backoff, and the refused metric says why.
func TestACallbackRebindingInsideIsRefusedAtDelivery(t *testing.T) {
	se := newSubsEnv(t)
	r := smo.New()
	defer r.Close()
	u, err := url.Parse(r.URL())
	require.NoError(t, err)
	var inside atomic.Bool
	lookup := func(_ context.Context, host string) ([]netip.Addr, error) {
		if host != "smo.rebind.example" {
			return nil, errors.New("no such host")
		}
		if inside.Load() {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		return []netip.Addr{netip.MustParseAddr("203.0.113.9")}, nil // resolved only: never connected to
	}
	se.policy = testPolicy(t, callback.Config{}, lookup)
	se.subs.WithPolicy(se.policy)
	rebinding := "http://smo.rebind.example:" + u.Port() + u.Path
	se.subscribe(rebinding, "")
	// Nothing is delivered before the name points inside (the notifier is not running yet).
	inside.Store(true)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := prometheus.NewRegistry()
	se.notifier(ctx, se.view, reg)
	time.Sleep(300 * time.Millisecond) // the notifier has read the subscription
	d, err := se.nb.Claims.GetDevice(ctx, 1)
	require.NoError(t, err)
	_, err = se.nb.Claims.Claim(ctx, d, "0b7a1f6e-0000-4000-8000-00000000cccc")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		m := promtest.Gather(t, reg)
		return m.Sum("o2ims_inventory_notifications_refused_total", map[string]string{"reason": "loopback"}) >= 2 &&
			m.Sum("o2ims_inventory_notifications_retried_total", nil) >= 1
	}, 20*time.Second, 10*time.Millisecond, "the policy refused the rebound connection, and it was retried")
	m := promtest.Gather(t, reg)
	require.GreaterOrEqual(t, m.Sum("o2ims_inventory_notifications_failed_total", nil),
		m.Sum("o2ims_inventory_notifications_refused_total", nil), "a refusal is a failed delivery")
	require.Zero(t, r.Attempts(), "nothing reached the loopback receiver")
	require.Len(t, m.ByLabel("o2ims_inventory_notifications_refused_total", "reason"), len(callback.Reasons),
		"one series per reason, no per-callback label")
}
