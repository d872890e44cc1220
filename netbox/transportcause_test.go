package netbox

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

// Every class of transport failure, built as Go's net, crypto/tls and net/http really produce it (real
// dials to loopback ports, real TLS servers with wrong certificates, Go's own resolver asking a DNS
// server on loopback), has one sanitised form: the Error's text — what a waiting request's status, its
// events and /readyz quote — names the class and never a host, an address, a port, a DNS server or a URL.
func TestEveryTransportFailureClassHasASanitisedForm(t *testing.T) {
	c := newTestClient(t, "http://netbox.internal:8000", time.Second)
	for _, tc := range []struct {
		name, class, text string
		err               func(t *testing.T) error
	}{
		{"DNS name not found", "DNS: name not found", "netbox check: transport: DNS: name not found", dnsNotFound},
		{"DNS server unreachable", "DNS: lookup failed (DNS server unreachable or failing)",
			"netbox check: transport: DNS: lookup failed (DNS server unreachable or failing)", dnsServerUnreachable},
		{"connection refused", "connection refused", "netbox check: transport: connection refused", connectionRefused},
		{"connect timeout", "connect timed out", "netbox check: timeout: connect timed out", connectTimeout},
		{"TLS handshake timeout", "TLS handshake timed out", "netbox check: timeout: TLS handshake timed out", tlsHandshakeTimeout},
		{"response header timeout", "timed out awaiting the answer's headers",
			"netbox check: timeout: timed out awaiting the answer's headers", responseHeaderTimeout},
		{"TLS unknown authority", "TLS: certificate signed by an unknown authority",
			"netbox check: transport: TLS verification failed (check NETBOX_CA_FILE): TLS: certificate signed by an unknown authority", tlsUnknownAuthority},
		{"TLS expired", "TLS: certificate expired or not yet valid",
			"netbox check: transport: TLS verification failed (check NETBOX_CA_FILE): TLS: certificate expired or not yet valid", tlsExpired},
		{"TLS hostname mismatch", "TLS: certificate not valid for the host name asked for",
			"netbox check: transport: TLS verification failed (check NETBOX_CA_FILE): TLS: certificate not valid for the host name asked for", tlsHostnameMismatch},
		{"TLS to a plain server", "TLS: the server does not speak TLS", "netbox check: transport: TLS: the server does not speak TLS", tlsToPlain},
		{"connection reset", "connection reset", "netbox check: transport: connection reset", connectionReset},
		{"EOF", "connection closed before an answer (EOF)", "netbox check: transport: connection closed before an answer (EOF)", closedWithoutAnswer},
		{"proxy unreachable", "proxy: connection refused", "netbox check: transport: proxy: connection refused", proxyUnreachable},
		{"proxy refuses the tunnel", "proxy refused the tunnel (Forbidden)",
			"netbox check: transport: proxy refused the tunnel (Forbidden)", proxyRefusesTunnel},
		{"anything else", "transport failure", "netbox check: transport: transport failure", malformedAnswer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := tc.err(t)
			require.Error(t, raw)
			t.Logf("Go says: %v", raw)
			assert.Equal(t, tc.class, transportCause(raw))
			text := c.Schema.toError("check", nil, raw, false).Error()
			assert.Equal(t, tc.text, text)
			assertNoAddress(t, text)
		})
	}
}

// HTTP 5xx from NetBox (or a proxy before it) and a per-attempt timeout, through the real client: the
// status message's cause is the status or the timeout, never what the body says about upstreams.
func TestServerErrorsAndTimeoutsReachTheStatusWithoutAddresses(t *testing.T) {
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte(`{"detail": "upstream connect error: dial tcp 10.20.30.40:8080: connection refused"}`))
	}))
	defer bad.Close()
	c := newTestClient(t, bad.URL, time.Second)
	err := c.Schema.Check(context.Background())
	require.Error(t, err)
	assert.Equal(t, "netbox check: server (HTTP 502): Bad Gateway", err.Error())
	why, ok := c.Gate.Unavailability(err)
	require.True(t, ok)
	assert.Regexp(t, `^NetBox unreachable since \S+ \(HTTP 502\)$`, why)
	assertNoAddress(t, why)

	silent := silentListener(t, func(conn net.Conn) { _, _ = bufio.NewReader(conn).ReadString('\n') })
	c = newTestClient(t, "http://"+silent, 200*time.Millisecond)
	err = c.Schema.Check(context.Background())
	require.Error(t, err)
	assert.Equal(t, "netbox check: timeout: no answer within 200ms", err.Error())

	refused := closedPort(t)
	c = newTestClient(t, "http://"+refused, time.Second)
	err = c.Schema.Check(context.Background())
	require.Error(t, err)
	why, ok = c.Gate.Unavailability(err)
	require.True(t, ok)
	assert.Regexp(t, `^NetBox unreachable since \S+ \(connection refused\)$`, why)
	assert.Equal(t, "netbox check: transport: connection refused", err.Error())
}

var addressShaped = regexp.MustCompile(`\d+\.\d+\.\d+\.\d+|:\d{5}\b|netbox\.internal|://|\[::1\]`)

func assertNoAddress(t *testing.T, text string) {
	t.Helper()
	assert.False(t, addressShaped.MatchString(text), "an address in %q", text)
}

func newTestClient(t *testing.T, rawURL string, timeout time.Duration) *Client {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("0123456789abcdef0123456789abcdef01234567\n"), 0o600))
	c, err := New(Config{URL: rawURL, TokenFile: tokenFile, AllowHTTP: true, Timeout: timeout}, zap.NewNop(), nil)
	require.NoError(t, err)
	SetRetryForTest(c, 1, time.Millisecond)
	return c
}

// get sends one GET as the client's transport does (newHTTPClient's settings), changed by tune.
func get(t *testing.T, target string, tune func(*http.Transport)) error {
	t.Helper()
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: 2 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	if tune != nil {
		tune(tr)
	}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	require.NoError(t, err)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if resp != nil {
		_ = resp.Body.Close()
	}
	return err
}

// closedPort is a loopback address nothing listens on (bound, then closed).
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// silentListener accepts connections and hands each to serve (which may keep it silent).
func silentListener(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				serve(conn)
				time.Sleep(3 * time.Second)
				_ = conn.Close()
			}()
		}
	}()
	return l.Addr().String()
}

// resolverVia is Go's own resolver asking the DNS server at server (UDP).
func resolverVia(server string) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "udp", server)
	}}
}

func dialVia(r *net.Resolver) func(*http.Transport) {
	return func(tr *http.Transport) {
		tr.DialContext = (&net.Dialer{Resolver: r, Timeout: 2 * time.Second}).DialContext
	}
}

// dnsNotFound: a DNS server on loopback answers NXDOMAIN (RFC 1035 §4.1.1: QR, RD, RA, RCODE 3, the
// question echoed) to every query.
func dnsNotFound(t *testing.T) error {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if n < 12 {
				continue
			}
			resp := append([]byte{}, buf[:n]...)
			binary.BigEndian.PutUint16(resp[2:], 0x8183)
			binary.BigEndian.PutUint16(resp[6:], 0) // no answers, authority or additional records
			binary.BigEndian.PutUint16(resp[8:], 0)
			binary.BigEndian.PutUint16(resp[10:], 0)
			_, _ = pc.WriteTo(resp, from)
		}
	}()
	return get(t, "https://netbox.internal./api/status/", dialVia(resolverVia(pc.LocalAddr().String())))
}

// dnsServerUnreachable: the DNS server's port is closed (ICMP port unreachable on loopback).
func dnsServerUnreachable(t *testing.T) error {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	server := pc.LocalAddr().String()
	require.NoError(t, pc.Close())
	return get(t, "https://netbox.internal./api/status/", dialVia(resolverVia(server)))
}

func connectionRefused(t *testing.T) error {
	return get(t, "https://"+closedPort(t)+"/api/status/", nil)
}

// connectTimeout: a listener whose accept queue is full (backlog 0, never accepting, filled by a first
// connection) drops further SYNs, so a connect waits until the dialer's timeout.
func connectTimeout(t *testing.T) error {
	addr := fullBacklog(t)
	return get(t, "https://"+addr+"/api/status/", func(tr *http.Transport) {
		tr.DialContext = (&net.Dialer{Timeout: 300 * time.Millisecond}).DialContext
	})
}

func tlsHandshakeTimeout(t *testing.T) error {
	addr := silentListener(t, func(net.Conn) {})
	return get(t, "https://"+addr+"/api/status/", func(tr *http.Transport) { tr.TLSHandshakeTimeout = 300 * time.Millisecond })
}

func responseHeaderTimeout(t *testing.T) error {
	addr := silentListener(t, func(conn net.Conn) { _, _ = bufio.NewReader(conn).ReadString('\n') })
	return get(t, "http://"+addr+"/api/status/", func(tr *http.Transport) { tr.ResponseHeaderTimeout = 300 * time.Millisecond })
}

func tlsUnknownAuthority(t *testing.T) error {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	return get(t, srv.URL+"/api/status/", nil)
}

func tlsHostnameMismatch(t *testing.T) error {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return get(t, srv.URL+"/api/status/", func(tr *http.Transport) {
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, ServerName: "netbox.internal"}
	})
}

// tlsExpired: a server whose (trusted) certificate expired yesterday.
func tlsExpired(t *testing.T) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "netbox"},
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return get(t, srv.URL+"/api/status/", func(tr *http.Transport) {
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
	})
}

func tlsToPlain(t *testing.T) error {
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return get(t, "https://"+u.Host+"/api/status/", nil)
}

// connectionReset: the server reads the request and aborts the connection (SO_LINGER 0: an RST).
func connectionReset(t *testing.T) error {
	addr := answeringListener(t, func(conn net.Conn) {
		_, _ = bufio.NewReader(conn).ReadString('\n')
		_ = conn.(*net.TCPConn).SetLinger(0)
		_ = conn.Close()
	})
	return get(t, "http://"+addr+"/api/status/", nil)
}

func closedWithoutAnswer(t *testing.T) error {
	addr := answeringListener(t, func(conn net.Conn) {
		_, _ = bufio.NewReader(conn).ReadString('\n')
		_ = conn.Close()
	})
	return get(t, "http://"+addr+"/api/status/", nil)
}

func proxyUnreachable(t *testing.T) error {
	proxy, _ := url.Parse("http://" + closedPort(t))
	return get(t, "https://netbox.internal/api/status/", func(tr *http.Transport) { tr.Proxy = http.ProxyURL(proxy) })
}

func proxyRefusesTunnel(t *testing.T) error {
	addr := answeringListener(t, func(conn net.Conn) {
		r := bufio.NewReader(conn)
		for {
			line, err := r.ReadString('\n')
			if err != nil || line == "\r\n" {
				break
			}
		}
		_, _ = conn.Write([]byte("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n"))
		_ = conn.Close()
	})
	proxy, _ := url.Parse("http://" + addr)
	return get(t, "https://netbox.internal/api/status/", func(tr *http.Transport) { tr.Proxy = http.ProxyURL(proxy) })
}

func malformedAnswer(t *testing.T) error {
	addr := answeringListener(t, func(conn net.Conn) {
		_, _ = bufio.NewReader(conn).ReadString('\n')
		_, _ = conn.Write([]byte("HELLO 10.20.30.40:443\r\n\r\n"))
		_ = conn.Close()
	})
	return get(t, "http://"+addr+"/api/status/", nil)
}

func answeringListener(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go serve(conn)
		}
	}()
	return l.Addr().String()
}

// fullBacklog is a loopback listener that never accepts, its accept queue (backlog 0) filled: Linux drops
// the SYNs of further connects (tcp_v4_syn_recv_sock / sk_acceptq_is_full).
func fullBacklog(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Close(fd) })
	require.NoError(t, syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	require.NoError(t, syscall.Listen(fd, 0))
	sa, err := syscall.Getsockname(fd)
	require.NoError(t, err)
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	for i := 0; i < 8; i++ {
		conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			break
		}
		t.Cleanup(func() { _ = conn.Close() })
	}
	return addr
}
