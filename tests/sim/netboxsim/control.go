package netboxsim

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// What a test changes or reads about the simulator besides its data: version, tokens, ignored filters,
// faults, latency, lost answers, call counts and the PATCH log.

// SetVersion changes the netbox-version reported by /api/status/.
func (s *Server) SetVersion(v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.version = v
}

// IgnoreFilter makes the device list silently ignore a query parameter (e.g.
// "cf_gpu_model"), as NetBox does for parameters it has no filter for.
func (s *Server) IgnoreFilter(param string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ignored[param] = true
}

// Fault makes the next Count requests for Method+Route answer Status with Body
// (a NetBox-like {"detail": …} when empty) before any other processing.
type Fault struct {
	Method, Route string
	Status        int
	Count         int
	Body          string
	// RetryAfter sets a Retry-After header (seconds) when > 0.
	RetryAfter int
}

// InjectFault queues a fault; faults for the same route are used in order.
func (s *Server) InjectFault(f Fault) {
	if f.Count <= 0 {
		f.Count = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &f)
}

// ClearFaults drops every queued fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

func (s *Server) takeFault(method, route string) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if f.Method == method && f.Route == route {
			f.Count--
			if f.Count <= 0 {
				s.faults = append(s.faults[:i], s.faults[i+1:]...)
			}
			c := *f
			return &c
		}
	}
	return nil
}

// SetOutage makes every request, on every route, answer status (e.g. 503, as a proxy in front of a NetBox
// that is down) until SetOutage(0); calls are still counted. Queued faults wait until it ends.
func (s *Server) SetOutage(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outage = status
}

func (s *Server) outageStatus() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.outage
}

// SetLatency delays every Method+Route request by d before it is processed (0
// removes it). A request whose client goes away during the delay is not processed.
func (s *Server) SetLatency(method, route string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency[method+" "+route] = d
}

// SetTokens replaces the accepted tokens (token rotation on the NetBox side).
func (s *Server) SetTokens(tokens ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.Tokens = append([]string(nil), tokens...)
}

// SetPatchHook runs fn (outside the simulator's lock, so it may call SetStatus
// or SetCustom) when a device PATCH arrives, before it is processed: a test
// uses it to change the device between a client's read and its write. nil removes it.
func (s *Server) SetPatchHook(fn func(id int32)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.patchHook = fn
}

// DropPatchAnswers makes the next n device PATCHes commit and then close the
// connection without any answer (a lost response).
func (s *Server) DropPatchAnswers(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropPatch = n
}

// Calls returns how many requests reached Method+Route (faulted ones included).
func (s *Server) Calls(method, route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method+" "+route]
}

// CallRecord is one request that reached a route (as Calls counts it), with its query: what tells the
// kinds of one route apart, e.g. a changes-only device listing (last_updated__gte) from a search.
type CallRecord struct {
	Method, Route string
	Query         url.Values
	At            time.Time // when it arrived (Options.Clock)
}

// LogCalls starts (true) or stops recording every call in CallLog; it is off by default, so that a
// long-running simulator does not grow. What was recorded is kept.
func (s *Server) LogCalls(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logCalls = on
}

// CallLog returns the calls recorded while LogCalls was on, in arrival order.
func (s *Server) CallLog() []CallRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]CallRecord, len(s.callLog))
	for i, c := range s.callLog {
		q := make(url.Values, len(c.Query))
		for k, vs := range c.Query {
			q[k] = slices.Clone(vs)
		}
		c.Query = q
		out[i] = c
	}
	return out
}

// PatchLog returns every device PATCH received, in arrival order.
func (s *Server) PatchLog() []PatchRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]PatchRecord, len(s.patchLog))
	for i, r := range s.patchLog {
		r.Body = deepCopyMap(r.Body)
		out[i] = r
	}
	return out
}

// writeFault answers a queued fault (a NetBox-like {"detail": …} when it has no body).
func writeFault(w http.ResponseWriter, f *Fault) {
	body := f.Body
	if body == "" {
		body = fmt.Sprintf(`{"detail": %q}`, http.StatusText(f.Status))
	}
	w.Header().Set("Content-Type", "application/json")
	if f.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(f.RetryAfter))
	}
	w.WriteHeader(f.Status)
	_, _ = w.Write([]byte(body))
}
