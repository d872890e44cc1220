package netbox

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"k8s.io/utils/clock"
)

// downProbeInterval: while NetBox is down as last seen, a scrape probes /api/status/ at most this often,
// so o2ims_netbox_up recovers (and its alert clears) without waiting for a request that needs NetBox.
const downProbeInterval = 30 * time.Second

// reachability is o2ims_netbox_up: NetBox's reachability as last seen by the client's own attempts (the
// startup check, searches, claims, releases). It costs nothing while NetBox answers; only while the last
// attempt failed does a scrape start one bounded status probe, one at a time.
type reachability struct {
	gauge    prometheus.Gauge
	up       atomic.Bool
	last     atomic.Int64 // unix nanoseconds of the last attempt; 0 = none yet (nothing to recover from)
	probing  atomic.Bool
	probe    atomic.Pointer[func()]
	interval time.Duration
	clock    clock.PassiveClock
	// down is when the failures began (the first failed attempt after an answer, or the first attempt
	// ever) and what that attempt met; nil while NetBox answers. Requests waiting for it name both, the
	// same for the whole outage.
	down atomic.Pointer[outage]
}

type outage struct {
	since time.Time
	cause string // "HTTP 503", "no answer within 10s", what the transport said
}

func newReachability() *reachability {
	return &reachability{
		gauge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "o2ims_netbox_up",
			Help: "NetBox reachability as last seen: 1 after an answer below 500, 0 after a timeout, transport failure or 5xx (0 before the first call).",
		}),
		interval: downProbeInterval,
		clock:    clock.RealClock{},
	}
}

// observe records one attempt's result; cause says what a failed one met.
func (r *reachability) observe(ok bool, cause string) {
	now := r.clock.Now()
	r.up.Store(ok)
	r.last.Store(now.UnixNano())
	if ok {
		r.down.Store(nil)
		r.gauge.Set(1)
	} else {
		r.down.CompareAndSwap(nil, &outage{since: now, cause: cause})
		r.gauge.Set(0)
	}
}

// outage is the failures as last seen: nil while NetBox answers (or before any attempt).
func (r *reachability) outage() *outage { return r.down.Load() }

// setProbe installs the status probe once (a second client on the same registry shares the first's).
func (r *reachability) setProbe(fn func()) { r.probe.CompareAndSwap(nil, &fn) }

func (r *reachability) maybeProbe() {
	last := r.last.Load()
	fn := r.probe.Load()
	if fn == nil || last == 0 || r.up.Load() || r.clock.Since(time.Unix(0, last)) < r.interval {
		return
	}
	if !r.probing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer r.probing.Store(false)
		(*fn)()
	}()
}

// Describe implements prometheus.Collector.
func (r *reachability) Describe(ch chan<- *prometheus.Desc) { r.gauge.Describe(ch) }

// Collect implements prometheus.Collector: the value as last seen (a probe started now lands later).
func (r *reachability) Collect(ch chan<- prometheus.Metric) {
	r.maybeProbe()
	r.gauge.Collect(ch)
}

// probeStatus is the recovery probe: one status read, bounded like a call with its retries.
func (c *Gate) probeStatus() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*c.cfg.Timeout)
	defer cancel()
	if _, err := c.schema.netboxVersion(ctx); err != nil {
		c.log.Debug("NetBox still unreachable", zap.Error(err))
		return
	}
	c.log.Info("NetBox answers again")
}
