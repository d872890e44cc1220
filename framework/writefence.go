package framework

import (
	"net/http"
	"strings"
	"sync/atomic"
)

// writeFence is the lease fence (fence.go) at the transport: every mutating request (POST, PUT, PATCH,
// DELETE) a client of Clients sends — a pass's, and as well one a handler, a runnable, a release step or a
// goroutine sends with a context of its own (context.Background() included) — is refused before it is
// sent once this process may no longer write; it is counted in fenced_total{what="kube-write"} and
// classified ClassFenced (not retryable, nothing landed). Reads (GET, watches) always go: a standby
// serves the NBI, and a deposed leader drains.
//
// The leader election's own client is built apart and never passes through it: the renewals keep the
// fence open, and the release at a clean stop must reach the API server.
//
// Who may write (Operator.transportMayWrite): without leader election, always; a replica that never
// led, always — it runs no pass and no leader runnable, and what it writes is what every replica serves
// (the NBI's ProvisioningRequests, subscriptions and alarm ConfigMaps, the O-Cloud id ConfigMap at start);
// a replica that has led, only while its fence holds, and never again once it lapsed or was released
// (it is leaving: the NBI's writes then fail unsent too, and its client retries on another replica).
// TokenReviews and SubjectAccessReviews are POSTs that store nothing: they always go, so the NBI and
// /metrics keep authenticating their readers.
//
// The margin that remains: the check runs at the transport, after client-go's rate limiter, so a request
// that waited there is checked when it leaves; only a request already handed to its connection when the
// fence lapses can reach the API server later, within the fence's margin (fence.go: 4 s by default) unless
// the network holds it longer than that.
type writeFence struct {
	check atomic.Pointer[func(*http.Request) error]
}

// set installs the check (nil: every request goes).
func (f *writeFence) set(check func(*http.Request) error) {
	if check == nil {
		f.check.Store(nil)
		return
	}
	f.check.Store(&check)
}

// wrap is for rest.Config.WrapTransport: outermost, so a refused request is neither counted as sent
// nor given a token.
func (f *writeFence) wrap(rt http.RoundTripper) http.RoundTripper {
	return &fencedTransport{fence: f, next: rt}
}

type fencedTransport struct {
	fence *writeFence
	next  http.RoundTripper
}

func (t *fencedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if check := t.fence.check.Load(); check != nil && mutating(req) {
		if err := (*check)(req); err != nil {
			if req.Body != nil {
				_ = req.Body.Close() // a RoundTripper closes the body, even when it sends nothing
			}
			return nil, err
		}
	}
	return t.next.RoundTrip(req)
}

// mutating reports whether req may change what the API server stores: every method but GET, HEAD and
// OPTIONS, except the authentication and authorization reviews (created, answered, never stored).
func mutating(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	p := req.URL.Path
	return !strings.HasPrefix(p, "/apis/authentication.k8s.io/") && !strings.HasPrefix(p, "/apis/authorization.k8s.io/")
}

// transportMayWrite is the check of the clients' writeFence: nil, or why req is not sent (ClassFenced,
// counted as kube-write).
func (o *Operator) transportMayWrite(req *http.Request) error {
	if o.fence == nil || o.fence.standby() || o.fence.valid() {
		return nil
	}
	return o.fenced("kube-write", req.Method+" "+resourceOf(req.URL.Path))
}

// LeaderWrites is the fence for a client the framework does not build (NetBox's): the function it returns
// is asked before each mutating request that client sends, and answers nil while this process may write
// as the leader — always without leader election, else only while the lease fence holds, so a standby
// never writes through it — or else a ClassFenced error, counted in fenced_total{what}.
func (o *Operator) LeaderWrites(what string) func() error {
	o.metrics.Fenced.WithLabelValues(what)
	return func() error {
		if o.mayAct() {
			return nil
		}
		return o.fenced(what, what)
	}
}
