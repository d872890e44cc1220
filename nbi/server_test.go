package nbi_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"

	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
)

func TestProbeSucceedsWhileServingAndFailsOnceStopped(t *testing.T) {
	s := startStub(t, nbitest.NewMemStore(), nil, nil)
	got, err := s.Srv.Probe(context.Background())
	require.NoError(t, err)
	require.Equal(t, map[string]string{"northbound": "serving", "address": s.Srv.Addr()}, got)

	require.NoError(t, s.Srv.Shutdown(context.Background()))
	_, err = s.Srv.Probe(context.Background())
	require.Error(t, err)
	select {
	case err := <-s.Srv.Stopped():
		t.Fatalf("a Shutdown was reported as stopping by itself: %v", err)
	default:
	}
}

func TestAListenerClosedBehindTheServersBackIsReportedOnStopped(t *testing.T) {
	s := startStub(t, nbitest.NewMemStore(), nil, nil)
	_, err := s.Srv.Probe(context.Background())
	require.NoError(t, err)

	ln := s.Srv.Listener()
	require.NoError(t, ln.Close()) // as if the socket were destroyed (ss -K)

	select {
	case err := <-s.Srv.Stopped():
		require.ErrorContains(t, err, "stopped by itself")
	case <-time.After(30 * time.Second):
		t.Fatal("Stopped never reported the closed listener")
	}
	_, err = s.Srv.Probe(context.Background())
	require.Error(t, err, "liveness must fail: nothing accepts connections")
	require.NotEmpty(t, s.Logs.FilterMessage("the northbound API stopped by itself").All())
}

func TestProbeBeforeStartFails(t *testing.T) {
	srv, err := newServer(nbi.Config{}, nbitest.NewMemStore(), nil, nil, nil, nil)
	require.NoError(t, err)
	_, err = srv.Probe(context.Background())
	require.Error(t, err)
	require.Equal(t, "", srv.Addr())
	require.NoError(t, srv.Shutdown(context.Background()), "nothing to stop")
}

func TestStartOnAPortInUseNamesTheAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	srv, err := newServer(nbi.Config{Host: "127.0.0.1", Port: port}, nbitest.NewMemStore(), nil, nil, nil, nil)
	require.NoError(t, err)
	err = srv.Start()
	require.ErrorContains(t, err, fmt.Sprintf("127.0.0.1:%d", port))

	s := startStub(t, nbitest.NewMemStore(), nil, nil)
	require.Error(t, s.Srv.Start(), "started twice")
}

func TestShutdownLetsARequestInFlightFinish(t *testing.T) {
	store := nbitest.NewMemStore(nbitest.PRObject("inflight", nbitest.SimpleSpec("c"), nil))
	store.Block, store.Entered = make(chan struct{}), make(chan struct{})
	s := startStub(t, store, nil, nil)

	answered := make(chan int, 1)
	go func() {
		resp, err := s.Client.Get(s.Base + nbitest.CollectionPath)
		if err != nil {
			answered <- -1
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	<-store.Entered // the request is being served

	stopped := make(chan error, 1)
	go func() { stopped <- s.Srv.Shutdown(context.Background()) }()
	close(store.Block)
	require.Equal(t, http.StatusOK, <-answered)
	require.NoError(t, <-stopped)
}

func TestShutdownCutsOffWhatOutlivesTheTimeout(t *testing.T) {
	store := nbitest.NewMemStore()
	store.Block, store.Entered = make(chan struct{}), make(chan struct{})
	defer close(store.Block)
	s := startStub(t, store, nil, nil, func(c *nbi.Config) { c.ShutdownTimeout = 50 * time.Millisecond })
	go func() {
		if resp, err := s.Client.Get(s.Base + nbitest.CollectionPath); err == nil {
			resp.Body.Close()
		}
	}()
	<-store.Entered
	require.ErrorContains(t, s.Srv.Shutdown(context.Background()), "cut off")
}

func TestMetricsCountRequestsByRoutePatternNeverByID(t *testing.T) {
	store := nbitest.NewMemStore(nbitest.PRObject("m1", nbitest.SimpleSpec("c"), nil), nbitest.PRObject("m2", nbitest.SimpleSpec("c"), nil))
	s := startStub(t, store, nil, nil)
	s.Do(t, http.MethodGet, nbitest.NamedPath("m1"), nil)
	s.Do(t, http.MethodGet, nbitest.NamedPath("m2"), nil)
	s.Do(t, http.MethodGet, nbitest.NamedPath("m3"), nil)
	s.Do(t, http.MethodGet, nbitest.CollectionPath, nil)
	s.Do(t, http.MethodGet, "/nope/"+strings.Repeat("x", 10), nil)
	s.Do(t, "BREW", nbitest.CollectionPath, nil)

	named := apiRoot + "/v1/provisioningRequests/{provisioningRequestId}"
	requests := fmt.Sprintf(`
# HELP o2ims_nbi_requests_total Requests answered by the O2IMS northbound API, by route pattern, method and status code.
# TYPE o2ims_nbi_requests_total counter
o2ims_nbi_requests_total{code="200",method="GET",route=%q} 1
o2ims_nbi_requests_total{code="200",method="GET",route=%q} 2
o2ims_nbi_requests_total{code="404",method="GET",route=%q} 1
o2ims_nbi_requests_total{code="404",method="GET",route="unmatched"} 1
o2ims_nbi_requests_total{code="405",method="OTHER",route="unmatched"} 1
`, nbitest.CollectionPath, named, named)
	require.NoError(t, testutil.GatherAndCompare(s.Reg, strings.NewReader(requests), "o2ims_nbi_requests_total"))
	require.Equal(t, 4, testutil.CollectAndCount(s.Srv.DurationMetric()), "one histogram per route and method")
}

func TestOneDebugLinePerRequestAndAWarningWithTheCauseFor5xx(t *testing.T) {
	s := startStub(t, nbitest.NewMemStore(), nil, nil)
	secret := `"templateParameters":{"clusterName":"c","password":"hunter2"}`
	body := []byte(`{"provisioningRequestId":"logged","templateName":"t","templateVersion":"v",` + secret + `}`)
	s.Do(t, http.MethodGet, nbitest.CollectionPath, nil)
	s.Do(t, http.MethodPost, nbitest.CollectionPath, body) // no client: 503

	debug := s.Logs.FilterMessage("northbound request").FilterLevelExact(zapcore.DebugLevel).All()
	require.Len(t, debug, 1)
	require.Equal(t, map[string]any{"method": "GET", "route": nbitest.CollectionPath, "code": int64(200), "duration": debug[0].ContextMap()["duration"]}, debug[0].ContextMap())
	warn := s.Logs.FilterMessage("northbound request failed").FilterLevelExact(zapcore.WarnLevel).All()
	require.Len(t, warn, 1)
	require.Equal(t, int64(503), warn[0].ContextMap()["code"])
	require.Contains(t, fmt.Sprint(warn[0].ContextMap()["cause"]), "not configured")
	for _, entry := range s.Logs.All() {
		require.NotContains(t, entry.Message+fmt.Sprint(entry.ContextMap()), "hunter2", "bodies are never logged")
	}
}

// writeCert writes a self-signed certificate for 127.0.0.1 with the given common name.
func writeCert(t *testing.T, dir, cn string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kb, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600))
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func TestTLSServesTheCertificateAndReloadsItWhenTheFilesChange(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool1 := writeCert(t, dir, "first")
	s := startStub(t, nbitest.NewMemStore(), nil, nil, func(c *nbi.Config) { c.TLSCertFile, c.TLSKeyFile = certFile, keyFile })
	base := "https://" + s.Srv.Addr()

	served := func(pool *x509.CertPool) string {
		c := &http.Client{Transport: &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true}}
		resp, err := c.Get(base + apiRoot + "/api_versions")
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		return resp.TLS.PeerCertificates[0].Subject.CommonName
	}
	require.Equal(t, "first", served(pool1))
	_, err := s.Srv.Probe(context.Background())
	require.NoError(t, err, "the probe speaks TLS too")

	_, _, pool2 := writeCert(t, dir, "second")
	later := time.Now().Add(time.Minute) // a distinct mtime whatever the file system's resolution
	require.NoError(t, os.Chtimes(certFile, later, later))
	require.NoError(t, os.Chtimes(keyFile, later, later))
	require.Equal(t, "second", served(pool2))

	// A broken pair keeps the last good certificate in service.
	require.NoError(t, os.WriteFile(certFile, []byte("not a certificate"), 0o600))
	evenLater := later.Add(time.Minute)
	require.NoError(t, os.Chtimes(certFile, evenLater, evenLater))
	require.Equal(t, "second", served(pool2))
	require.Len(t, s.Logs.FilterMessage("the changed TLS certificate could not be loaded; presenting the previous one").All(), 1)
	require.Equal(t, "second", served(pool2))
	require.Len(t, s.Logs.FilterMessage("the changed TLS certificate could not be loaded; presenting the previous one").All(), 1, "logged once per change")
}

func TestTLSWithUnreadableFilesFailsAtNew(t *testing.T) {
	_, err := newServer(nbi.Config{TLSCertFile: "/nonexistent/tls.crt", TLSKeyFile: "/nonexistent/tls.key"}, nbitest.NewMemStore(), nil, nil, nil, nil)
	require.ErrorContains(t, err, "NBI_TLS_CERT_FILE")
}
