package callback

import (
	"context"
	"encoding/pem"
	"errors"
	"hash/fnv"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestConfigFromEnv(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	c, err := ConfigFromEnv(env(map[string]string{
		"CALLBACK_DENY_PRIVATE": "true", "CALLBACK_ALLOW_CIDRS": " 127.0.0.0/8, ::1/128 ,", "CALLBACK_DENY_CIDRS": "10.1.2.3/8",
		"CALLBACK_CA_FILE": "/etc/smo/ca.pem",
	}))
	require.NoError(t, err)
	require.True(t, c.DenyPrivate)
	require.Equal(t, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}, c.Allow)
	require.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, c.Deny, "masked")
	require.Equal(t, "/etc/smo/ca.pem", c.CAFile)
	for k, v := range map[string]string{"CALLBACK_DENY_PRIVATE": "maybe", "CALLBACK_ALLOW_CIDRS": "127.0.0.1", "CALLBACK_DENY_CIDRS": "10/8"} {
		_, err := ConfigFromEnv(env(map[string]string{k: v}))
		require.ErrorContains(t, err, k)
	}
	require.False(t, c.SkipTest, "callbacks are tested by default")
	require.Zero(t, c.TestTimeout, "DefaultTestTimeout")
	c, err = ConfigFromEnv(env(map[string]string{"CALLBACK_TEST": "false", "CALLBACK_TEST_TIMEOUT": "250ms"}))
	require.NoError(t, err)
	require.True(t, c.SkipTest)
	require.Equal(t, 250*time.Millisecond, c.TestTimeout)
	for k, v := range map[string]string{"CALLBACK_TEST": "sometimes", "CALLBACK_TEST_TIMEOUT": "2m"} {
		_, err := ConfigFromEnv(env(map[string]string{k: v}))
		require.ErrorContains(t, err, k)
	}
	_, err = New(Config{CAFile: filepath.Join(t.TempDir(), "missing.pem")})
	require.ErrorContains(t, err, "CALLBACK_CA_FILE")
}

// The Control hook decides on the address being connected to, in whatever form the dialer gives it.
func TestControlRefusesInternalAddresses(t *testing.T) {
	p := Default().WithAPIServer(context.Background(), "10.96.0.1").WithOwn(func() []string { return []string{"[::]:8443", "10.244.1.7"} })
	for addr, want := range map[string]Reason{
		"127.0.0.1:80": Loopback, "[::1]:80": Loopback, "[::ffff:127.0.0.1]:80": Loopback, "169.254.169.254:80": LinkLocal,
		"[fe80::1%eth0]:80": LinkLocal, "0.0.0.0:80": Unspecified, "[::]:80": Unspecified, "239.1.1.1:80": Multicast,
		"10.96.0.1:443": APIServer, "10.244.1.7:80": Operator, "[::ffff:10.244.1.7]:80": Operator, "not an address": Notation,
		"10.1.2.3:80": "", "198.51.100.7:443": "", "[2001:db8::1]:443": "",
	} {
		err := p.Control("tcp", addr, nil)
		if want == "" {
			require.NoError(t, err, addr)
			continue
		}
		require.Equal(t, want, Refusal(err).Reason, addr)
	}
	// An unspecified listener is on every address of this host: its port is refused on loopback.
	allowAll := testPolicy(t, Config{Allow: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}}).
		WithOwn(func() []string { return []string{"[::]:8443"} })
	require.Equal(t, Operator, Refusal(allowAll.Control("tcp", "127.0.0.1:8443", nil)).Reason)
	require.NoError(t, allowAll.Control("tcp", "127.0.0.1:8444", nil))
}

func testPolicy(t *testing.T, cfg Config) *Policy {
	t.Helper()
	p, err := New(cfg)
	require.NoError(t, err)
	return p.WithLookup(func(context.Context, string) ([]netip.Addr, error) { return nil, errors.New("no DNS in tests") })
}

// An https callback's certificate is verified: refused while its CA is unknown, accepted with the SMO's
// CA in CALLBACK_CA_FILE. A redirect is never followed.
func TestHTTPSCallbacksVerifyTheCertificateAndRedirectsAreRefused(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	smo := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, other.URL+"/stolen", http.StatusTemporaryRedirect)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer smo.Close()
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

	_, err := testPolicy(t, Config{Allow: loopback}).Client(5*time.Second).Post(smo.URL+"/smo", "application/json", strings.NewReader("{}"))
	require.ErrorContains(t, err, "certificate", "an unknown CA is refused")

	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: smo.Certificate().Raw}), 0o600))
	client := testPolicy(t, Config{Allow: loopback, CAFile: ca}).Client(5 * time.Second)
	resp, err := client.Post(smo.URL+"/smo", "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)

	resp, err = client.Post(smo.URL+"/moved", "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusTemporaryRedirect, resp.StatusCode, "answered as is")
	require.Zero(t, elsewhere.Load(), "the redirect was not followed")

	// Without the allowance the same loopback callback never connects.
	_, err = testPolicy(t, Config{CAFile: ca}).Client(5*time.Second).Post(smo.URL+"/smo", "application/json", strings.NewReader("{}"))
	require.Equal(t, Loopback, Refusal(err).Reason)
}

// fuzzInternal are what every name resolves to in the fuzz target: one address of each refused class,
// the API server's and the operator's.
var fuzzInternal = []string{"127.0.0.1", "::1", "169.254.169.254", "fe80::1", "0.0.0.0", "::", "224.0.0.1", "ff02::1",
	"10.96.0.1", "10.244.1.7", "::ffff:127.0.0.1", "255.255.255.255"}

// FuzzPolicyNeverAcceptsAnInternalAddress: whatever the callback, in whatever notation, the policy
// accepts it only when it is an IP literal that an independent reading (inet_aton's notations, IPv6 with
// mapped forms and zones) finds public — every other name resolves inside here, so no name may pass, and
// a numeric name resolves to a public address, so only the notation check stops one meaning 127.0.0.1 —
// and the Control hook refuses every internal address given as 4 or 16 raw bytes.
func FuzzPolicyNeverAcceptsAnInternalAddress(f *testing.F) {
	for _, s := range []string{
		"http://127.0.0.1/", "http://2130706433/", "http://0177.0.0.1/", "http://127.1/", "http://0x7f.1/",
		"http://0x7F000001/", "http://017700000001/", "http://127.0.0.1./", "http://[::ffff:127.0.0.1]/",
		"http://[::ffff:7f00:1]:8080/", "http://[fe80::1%25eth0]/", "http://[fe80::1%25]/", "http://[::1]/",
		"http://[0:0::1]/", "http://[::127.0.0.1]/", "http://[64:ff9b::a9fe:a9fe]/", "http://[2002:a9fe:a9fe::1]/",
		"http://169.254.169.254/latest/meta-data/", "https://10.96.0.1/api", "http://10.244.1.7:9000/",
		"http://localhost/", "http://smo.example.com/", "http://198.51.100.7/", "https://[2001:db8::1]/",
		"http://0/", "http://0.0.0.0/", "http://[::]/", "http://224.0.0.1/", "http://%31%32%37.0.0.1/",
		"http://127.0.0.1%2509/", "http://1.1.1.1 &@127.0.0.1/", "http://[::ffff:0:127.0.0.1]/",
	} {
		f.Add(s)
	}
	p := Default().WithLookup(func(_ context.Context, host string) ([]netip.Addr, error) {
		if _, ok := oracleAddr(host); ok {
			// A resolver that asks DNS for "2130706433" may be answered with a public address while
			// the one dialling reads it as 127.0.0.1 (inet_aton): here the former answers.
			return []netip.Addr{netip.MustParseAddr("198.51.100.7")}, nil
		}
		h := fnv.New32a()
		h.Write([]byte(host))
		n := h.Sum32()
		if n%7 == 0 {
			return nil, errors.New("no such host")
		}
		return []netip.Addr{netip.MustParseAddr(fuzzInternal[n%uint32(len(fuzzInternal))])}, nil
	}).WithAPIServer(context.Background(), "10.96.0.1").WithOwn(func() []string { return []string{"10.244.1.7"} })
	f.Fuzz(func(t *testing.T, raw string) {
		for _, b := range [][]byte{[]byte(raw)} {
			var a netip.Addr
			switch {
			case len(b) >= 16:
				a = netip.AddrFrom16([16]byte(b[:16]))
			case len(b) >= 4:
				a = netip.AddrFrom4([4]byte(b[:4]))
			}
			if a.IsValid() && oracleInternal(a) && p.Control("tcp", netip.AddrPortFrom(a, 80).String(), nil) == nil {
				t.Fatalf("Control accepted internal address %s", a)
			}
		}
		if p.CheckURL(context.Background(), raw) != nil {
			return
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("accepted %q, which is not a URL", raw)
		}
		host := u.Hostname()
		a, ok := oracleAddr(host)
		if !ok {
			t.Fatalf("accepted %q: its host %q is a name, and every name resolves inside here", raw, host)
		}
		if oracleInternal(a) {
			t.Fatalf("accepted %q: its host %q is internal address %s", raw, host, a)
		}
		port := 80
		if u.Port() != "" {
			port, _ = strconv.Atoi(u.Port())
		} else if u.Scheme == "https" {
			port = 443
		}
		if err := p.Control("tcp", net.JoinHostPort(a.String(), strconv.Itoa(port)), nil); err != nil {
			t.Fatalf("accepted %q at creation but the Control hook refuses %s: %v", raw, a, err)
		}
	})
}

// oracleAddr reads host as resolvers might: an IPv6 literal (zone dropped), or an IPv4 address in any
// inet_aton notation (one to four parts, each decimal, 0-octal or 0x-hexadecimal, a trailing dot).
func oracleAddr(host string) (netip.Addr, bool) {
	if strings.Contains(host, ":") {
		if i := strings.IndexByte(host, '%'); i >= 0 {
			host = host[:i]
		}
		ip := net.ParseIP(host)
		if ip == nil {
			return netip.Addr{}, false
		}
		a, _ := netip.AddrFromSlice(ip)
		return a.Unmap(), true
	}
	parts := strings.Split(strings.TrimSuffix(host, "."), ".")
	if len(parts) == 0 || len(parts) > 4 {
		return netip.Addr{}, false
	}
	var vals []uint64
	for _, s := range parts {
		base := 10
		switch {
		case strings.HasPrefix(strings.ToLower(s), "0x"):
			s, base = s[2:], 16
			if s == "" {
				s = "0"
			}
		case len(s) > 1 && s[0] == '0':
			s, base = s[1:], 8
		}
		v, err := strconv.ParseUint(s, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals = append(vals, v)
	}
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 255 {
			return netip.Addr{}, false
		}
		n |= v << (8 * (3 - i))
	}
	last := vals[len(vals)-1]
	if last >= 1<<(8*(5-len(vals))) {
		return netip.Addr{}, false
	}
	n |= last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

// oracleInternal is every address the default refuses, the API server's and the operator's, read with
// the standard library's net.IP (and IPv6 forms carrying an IPv4 address read as that address).
func oracleInternal(a netip.Addr) bool {
	ip := net.IP(a.AsSlice())
	if v4 := ip.To4(); v4 != nil {
		if v4[0] == 0 || v4[0] >= 240 || v4.Equal(net.IPv4(10, 96, 0, 1)) || v4.Equal(net.IPv4(10, 244, 1, 7)) {
			return true
		}
	} else {
		b := a.As16()
		zero12 := b[0]|b[1]|b[2]|b[3]|b[4]|b[5]|b[6]|b[7]|b[8]|b[9]|b[10]|b[11] == 0
		nat64 := b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && b[4]|b[5]|b[6]|b[7]|b[8]|b[9]|b[10]|b[11] == 0
		switch {
		case zero12 && !ip.IsLoopback() && !ip.IsUnspecified():
			return true // IPv4-compatible
		case nat64:
			return oracleInternal(netip.AddrFrom4([4]byte(b[12:16])))
		case b[0] == 0x20 && b[1] == 0x02:
			return oracleInternal(netip.AddrFrom4([4]byte(b[2:6])))
		}
	}
	return ip.IsLoopback() || ip.IsUnspecified() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast()
}

// A resolver that does not answer is no refusal: the caller is told to retry (a LookupError), and a
// delivery counts it as failed, not refused; a name that does not exist is refused.
func TestAResolverThatDoesNotAnswerIsNoRefusal(t *testing.T) {
	for _, c := range []struct {
		dnsErr  *net.DNSError
		refused bool
	}{
		{&net.DNSError{Err: "i/o timeout", Name: "smo.example.com", IsTimeout: true}, false},
		{&net.DNSError{Err: "server misbehaving", Name: "smo.example.com", IsTemporary: true}, false},
		{&net.DNSError{Err: "no such host", Name: "smo.example.com", IsNotFound: true}, true},
	} {
		p := Default().WithLookup(func(context.Context, string) ([]netip.Addr, error) { return nil, c.dnsErr })
		err := p.CheckURL(context.Background(), "https://smo.example.com/cb")
		require.Error(t, err)
		var lookup *LookupError
		require.Equal(t, !c.refused, errors.As(err, &lookup), "%v", c.dnsErr)
		require.Equal(t, c.refused, Refusal(err) != nil, "%v", c.dnsErr)
	}
}
