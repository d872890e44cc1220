package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
)

// answerCounter stands between the operator and the NetBox simulator (same simulator, same handler: the
// operator's NETBOX_URL points here) and counts, per route, what the operator actually got: an answer by
// status class, no answer because it gave up first (timeout, or killed), or a connection closed after the
// commit (a dropped PATCH answer). It also knows how many NetBox calls are in flight when a kill lands.
type answerCounter struct {
	next     http.Handler
	mu       sync.Mutex
	byRoute  map[string]*routeCount
	inflight int
	// abandoned holds the bodies of device PATCHes the client gave up on before any answer, by device and
	// If-Match, in arrival order: the simulator logs those without their body.
	abandoned map[patchKey][]map[string]any
}

type routeCount struct {
	Total, OK, Client4xx, Server5xx, Abandoned, Dropped int
}

func newAnswerCounter(next http.Handler) *answerCounter {
	return &answerCounter{next: next, byRoute: map[string]*routeCount{}, abandoned: map[patchKey][]map[string]any{}}
}

// routeOf mirrors the simulator's route names (netboxsim.Route*).
func routeOf(path string) string {
	switch path {
	case "/api/status/":
		return netboxsim.RouteStatus
	case "/api/extras/custom-fields/":
		return netboxsim.RouteCustomFields
	case "/api/dcim/devices/":
		return netboxsim.RouteDevices
	}
	if strings.HasPrefix(path, "/api/dcim/devices/") {
		return netboxsim.RouteDevice
	}
	return "other"
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (c *answerCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Method + " " + routeOf(r.URL.Path)
	sw := &statusWriter{ResponseWriter: w}
	var patch *patchKey
	var body map[string]any
	if r.Method == http.MethodPatch && routeOf(r.URL.Path) == netboxsim.RouteDevice {
		raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(raw))
		_ = json.Unmarshal(raw, &body)
		var id int32
		if _, err := fmt.Sscanf(strings.TrimPrefix(r.URL.Path, "/api/dcim/devices/"), "%d/", &id); err == nil {
			patch = &patchKey{device: id, ifMatch: r.Header.Get("If-Match")}
		}
	}
	c.mu.Lock()
	c.inflight++
	c.mu.Unlock()
	defer func() {
		p := recover()
		c.mu.Lock()
		c.inflight--
		rc := c.byRoute[key]
		if rc == nil {
			rc = &routeCount{}
			c.byRoute[key] = rc
		}
		rc.Total++
		switch {
		case p != nil:
			rc.Dropped++ // the simulator committed and then hung up (http.ErrAbortHandler)
		case sw.status == 0:
			rc.Abandoned++ // the client left before any answer
			if patch != nil {
				c.abandoned[*patch] = append(c.abandoned[*patch], body)
			}
		case sw.status >= 500:
			rc.Server5xx++
		case sw.status >= 400:
			rc.Client4xx++
		default:
			rc.OK++
		}
		c.mu.Unlock()
		if p != nil {
			panic(p)
		}
	}()
	c.next.ServeHTTP(sw, r)
}

// InFlight is how many NetBox calls are being served right now.
func (c *answerCounter) InFlight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inflight
}

// Snapshot copies the counts, keyed "METHOD route".
func (c *answerCounter) Snapshot() map[string]routeCount {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]routeCount{}
	for k, v := range c.byRoute {
		out[k] = *v
	}
	return out
}

// fillAbandonedBodies gives the simulator's records of abandoned PATCHes (logged without a body) the body
// the client sent, matched by device and If-Match in arrival order.
func (c *answerCounter) fillAbandonedBodies(log []netboxsim.PatchRecord) {
	c.mu.Lock()
	defer c.mu.Unlock()
	used := map[patchKey]int{}
	for i := range log {
		p := &log[i]
		if p.Body != nil || p.Committed || p.Dropped || p.Status != 0 {
			continue
		}
		k := patchKey{p.DeviceID, p.IfMatch}
		if bodies := c.abandoned[k]; used[k] < len(bodies) {
			p.Body = bodies[used[k]]
			used[k]++
		}
	}
}

// Fault kinds, as the report names them.
const (
	fault5xx     = "5xx answer"
	faultTimeout = "timeout (latency beyond NETBOX_TIMEOUT)"
	faultDrop    = "PATCH committed, answer dropped"
	faultSlow    = "slow answers (below the timeout)"
)

var faultKinds = []string{fault5xx, faultTimeout, faultDrop, faultSlow}

type route struct{ method, name string }

func (r route) String() string { return r.method + " " + r.name }

var (
	fault5xxRoutes = []route{
		{http.MethodGet, netboxsim.RouteDevices}, {http.MethodGet, netboxsim.RouteDevice},
		{http.MethodPatch, netboxsim.RouteDevice}, {http.MethodGet, netboxsim.RouteCustomFields},
	}
	timeoutRoutes = []route{
		{http.MethodPatch, netboxsim.RouteDevice}, {http.MethodPatch, netboxsim.RouteDevice},
		{http.MethodGet, netboxsim.RouteDevice}, {http.MethodGet, netboxsim.RouteDevices},
	}
	slowRoutes = []route{{http.MethodPatch, netboxsim.RouteDevice}, {http.MethodGet, netboxsim.RouteDevice}}
)

// injector makes NetBox misbehave at random, one fault at a time, until its context ends. "Armed" counts
// can exceed what the operator met: a queued 5xx waits for its route's next call (cleared when the chaos
// ends) and DropPatchAnswers(1) re-arms rather than adds; the counting layer reports what was met. The
// status route gets no faults; custom-fields gets 5xx, and since the operator reads it rarely its queued
// faults add up, so a restart can meet four in a row, fail its startup check of NetBox and exit — the
// harness starts it again, as the kubelet would.
type injector struct {
	sim     *netboxsim.Server
	rng     *rand.Rand
	timeout time.Duration // the operator's NETBOX_TIMEOUT

	mu       sync.Mutex
	injected map[string]int // kind → faults armed (5xx: answers queued; timeout/slow: windows; drop: answers)
	byRoute  map[string]int // "kind on route" → count
}

func newInjector(sim *netboxsim.Server, seed int64, timeout time.Duration) *injector {
	return &injector{sim: sim, rng: rand.New(rand.NewSource(seed)), timeout: timeout,
		injected: map[string]int{}, byRoute: map[string]int{}}
}

func (in *injector) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(in.rng.Int63n(int64(hi-lo)+1))
}

func (in *injector) count(kind string, r route, n int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.injected[kind] += n
	in.byRoute[kind+" on "+r.String()] += n
}

// run injects faults until ctx ends, then calms NetBox down.
func (in *injector) run(ctx context.Context) {
	defer in.calm()
	sleep := func(d time.Duration) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(d):
			return true
		}
	}
	for sleep(in.between(200*time.Millisecond, 700*time.Millisecond)) {
		switch p := in.rng.Intn(100); {
		case p < 35:
			r := fault5xxRoutes[in.rng.Intn(len(fault5xxRoutes))]
			status := []int{500, 502, 503, 504}[in.rng.Intn(4)]
			n := 1 + in.rng.Intn(2)
			in.sim.InjectFault(netboxsim.Fault{Method: r.method, Route: r.name, Status: status, Count: n})
			in.count(fault5xx, r, n)
		case p < 55:
			r := timeoutRoutes[in.rng.Intn(len(timeoutRoutes))]
			lat := in.timeout + in.between(500*time.Millisecond, 1500*time.Millisecond)
			in.sim.SetLatency(r.method, r.name, lat)
			in.count(faultTimeout, r, 1)
			ok := sleep(in.between(300*time.Millisecond, 1200*time.Millisecond))
			in.sim.SetLatency(r.method, r.name, 0)
			if !ok {
				return
			}
		case p < 80:
			in.sim.DropPatchAnswers(1)
			in.count(faultDrop, route{http.MethodPatch, netboxsim.RouteDevice}, 1)
		default:
			r := slowRoutes[in.rng.Intn(len(slowRoutes))]
			in.sim.SetLatency(r.method, r.name, in.between(150*time.Millisecond, in.timeout/2))
			in.count(faultSlow, r, 1)
			ok := sleep(in.between(time.Second, 2500*time.Millisecond))
			in.sim.SetLatency(r.method, r.name, 0)
			if !ok {
				return
			}
		}
	}
}

// calm removes every queued fault and latency.
func (in *injector) calm() {
	in.sim.ClearFaults()
	in.sim.DropPatchAnswers(0)
	for _, rs := range [][]route{fault5xxRoutes, timeoutRoutes, slowRoutes} {
		for _, r := range rs {
			in.sim.SetLatency(r.method, r.name, 0)
		}
	}
}

func (in *injector) Injected() (map[string]int, []string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := map[string]int{}
	for k, v := range in.injected {
		out[k] = v
	}
	var detail []string
	for k, v := range in.byRoute {
		detail = append(detail, fmt.Sprintf("%s: %d", k, v))
	}
	sort.Strings(detail)
	return out, detail
}
