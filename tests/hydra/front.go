package hydra

import (
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Front is Hydra's token endpoint behind mutual TLS (Hydra --dev serves plain HTTP), as an authorization
// server facing an O-Cloud is: it requires a client certificate of its PKI, counts the token requests
// that reach Hydra, and can go down (its port then refuses connections) and come back on the same port.
type Front struct {
	t        testing.TB
	hydra    *Hydra
	pki      *PKI
	addr     string
	requests atomic.Int64

	mu  sync.Mutex
	srv *httptest.Server
}

// MTLSFront starts the front of h's public port.
func (h *Hydra) MTLSFront(t testing.TB, pki *PKI) *Front {
	t.Helper()
	f := &Front{t: t, hydra: h, pki: pki, addr: "127.0.0.1:0"}
	f.Up()
	t.Cleanup(f.Down)
	return f
}

// TokenURL is the token endpoint through the front.
func (f *Front) TokenURL() string { return "https://" + f.addr + "/oauth2/token" }

// Requests is how many token requests reached Hydra through the front.
func (f *Front) Requests() int { return int(f.requests.Load()) }

// Down closes the front: a token endpoint outage.
func (f *Front) Down() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.srv != nil {
		f.srv.CloseClientConnections()
		f.srv.Close()
		f.srv = nil
	}
}

// Up serves again, on the same port.
func (f *Front) Up() {
	f.mu.Lock()
	defer f.mu.Unlock()
	target, err := url.Parse(f.hydra.Public)
	require.NoError(f.t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/oauth2/token" {
			f.requests.Add(1)
		}
		proxy.ServeHTTP(w, r)
	}))
	srv.Listener.Close()
	var ln net.Listener
	require.Eventually(f.t, func() bool { ln, err = net.Listen("tcp", f.addr); return err == nil }, 10*time.Second, 10*time.Millisecond)
	srv.Listener = ln
	srv.TLS = f.pki.MutualTLS(f.t)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes it refuses are the tests' point
	srv.StartTLS()
	f.addr, f.srv = ln.Addr().String(), srv
}
