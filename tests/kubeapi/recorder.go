package kubeapi

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// Request is one API request a client sent, as its transport saw it.
type Request struct {
	Method, Path, Body string
}

func (r Request) String() string { return r.Method + " " + r.Path }

// Recorder sees what a client sends to the API server, at its transport: what the server receives. Put
// Wrap in rest.Config.WrapTransport. Fault and Reroute, set before the client is built, let a test make the
// operator see the answer it wants from the real server.
type Recorder struct {
	// Fault, when it reports true for a request the server answered, drops the answer: the server acted,
	// the client sees a connection reset.
	Fault func(req *http.Request) (drop bool)
	// Reroute may send a request elsewhere (another path) before it goes out.
	Reroute func(req *http.Request) *http.Request

	mu   sync.Mutex
	reqs []Request
}

// Wrap records every request (its body too, when it can be read again) before rt sends it.
func (r *Recorder) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		var body []byte
		if req.GetBody != nil {
			if rc, err := req.GetBody(); err == nil {
				body, _ = io.ReadAll(rc)
				rc.Close()
			}
		}
		r.mu.Lock()
		r.reqs = append(r.reqs, Request{req.Method, req.URL.Path, string(body)})
		r.mu.Unlock()
		if r.Reroute != nil {
			req = r.Reroute(req)
		}
		resp, err := rt.RoundTrip(req)
		if err == nil && r.Fault != nil && r.Fault(req) {
			resp.Body.Close()
			return nil, fmt.Errorf("read tcp: connection reset by peer (injected)")
		}
		return resp, err
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Requests is everything recorded so far, in order.
func (r *Recorder) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.reqs...)
}

// Count counts the requests by method whose path contains substr.
func (r *Recorder) Count(method, substr string) int {
	n := 0
	for _, q := range r.Requests() {
		if q.Method == method && strings.Contains(q.Path, substr) {
			n++
		}
	}
	return n
}

// Writes lists the mutating requests (anything but GET) whose path contains substr.
func (r *Recorder) Writes(substr string) []Request {
	var out []Request
	for _, q := range r.Requests() {
		if q.Method != http.MethodGet && strings.Contains(q.Path, substr) {
			out = append(out, q)
		}
	}
	return out
}

// Bodies lists the bodies of the requests by method whose path ends with suffix.
func (r *Recorder) Bodies(method, suffix string) []string {
	var out []string
	for _, q := range r.Requests() {
		if q.Method == method && strings.HasSuffix(q.Path, suffix) {
			out = append(out, q.Body)
		}
	}
	return out
}
