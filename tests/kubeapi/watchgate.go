package kubeapi

import (
	"io"
	"net/http"
	"sync"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// GatedClient is a client of cfg whose requests the Recorder records and whose watches the WatchGate
// holds (released when t ends, so no informer stays blocked).
func GatedClient(t testing.TB, cfg *rest.Config) (kubernetes.Interface, *Recorder, *WatchGate) {
	rec, gate := &Recorder{}, &WatchGate{}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return rec.Wrap(gate.Wrap(rt)) }
	t.Cleanup(gate.Release)
	return kubernetes.NewForConfigOrDie(cfg), rec, gate
}

// WatchGate holds what the real API server sends on a client's watches, so that a test can make an
// informer's cache fall behind the server on purpose (as a slow watch would) and see what the client
// then does. Put Wrap in rest.Config.WrapTransport; Hold after the informer has synced (its first list
// may come on a watch).
type WatchGate struct {
	mu   sync.Mutex
	open chan struct{} // closed while the watches flow; nil: never held
}

// Hold keeps every byte the watches receive from now on from their reader until Release.
func (g *WatchGate) Hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open == nil {
		g.open = make(chan struct{})
	}
}

// Release hands the watches' readers what was held, and everything after it.
func (g *WatchGate) Release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open != nil {
		close(g.open)
		g.open = nil
	}
}

func (g *WatchGate) wait() {
	g.mu.Lock()
	open := g.open
	g.mu.Unlock()
	if open != nil {
		<-open
	}
}

// Wrap gates the bodies of the watch requests rt answers.
func (g *WatchGate) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil && req.URL.Query().Get("watch") == "true" {
			resp.Body = &gatedBody{ReadCloser: resp.Body, gate: g}
		}
		return resp, err
	})
}

type gatedBody struct {
	io.ReadCloser
	gate *WatchGate
}

// Read reads first and waits after: bytes a reader already waited for when Hold came are held too.
func (b *gatedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.gate.wait()
	return n, err
}
