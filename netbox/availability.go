package netbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"k8s.io/utils/clock"

	"github.com/o2ims-operator/o2ims-operator/internal/backoff"
)

// NetBox down is a degraded state of the operator, never a reason to stop it: a restart loop would take
// the NBI and every request without hosts down with NetBox.
//
// Start makes the startup check (reachable with our token, version ≥ 4.6, the custom fields) once. A
// configuration error found then — a NetBox too old, a refused token, a missing field — stops the
// operator with that error, as it always did. An outage (connection refused, timeouts, 5xx, 429: IsOutage)
// does not: the check is retried in the background until it passes, and until then the client sends
// NetBox nothing but the check — every other call fails at once with KindUnavailable, which the host step
// turns into a wait naming the outage and the inventory into its 503 before a first view.
//
// A configuration error found only when NetBox first answers, after such a start, no longer stops the
// process: by then it serves the NBI and the requests without hosts, and a restart would not fix the
// configuration either. It is logged as an error, said by Degraded (/readyz) and o2ims_netbox_usable,
// named in the waiting requests' messages, and the check is retried, so a fixed token or field is picked
// up without a restart.

// Gate is the client's availability part: Start (the startup check and, after an outage at start, its
// retries in the background), and what a caller says while NetBox cannot be used (Unavailability,
// Degraded, DownSince). The gate itself — every other part's calls refused while the check has not
// passed — is conn.usable, below, which all parts pass through.
type Gate struct {
	*conn
	schema *Schema // its Check is the gate's check
}

// availability is whether the client may use NetBox now: the startup check's verdict (shared by every
// client on one registry, as the reachability it reads is).
type availability struct {
	up *reachability

	mu       sync.Mutex
	gated    bool   // the check has not passed since Start found NetBox unusable: only the check goes out
	problem  *Error // why, as the last check said (while gated)
	logged   string // the last problem logged, and when: a repeat is logged again only after relog
	loggedAt time.Time

	retry   backoff.Exponential // between checks while NetBox does not answer
	recheck time.Duration       // between checks while it answers but fails them (someone must fix it)
	relog   time.Duration
	usable  *prometheus.Desc
	clock   clock.Clock // the waits between checks, when a problem was last logged
}

func newAvailability(up *reachability) *availability {
	return &availability{
		up:      up,
		retry:   backoff.Exponential{Base: time.Second, Max: 15 * time.Second},
		recheck: 30 * time.Second,
		relog:   5 * time.Minute,
		clock:   clock.RealClock{},
		usable: prometheus.NewDesc("o2ims_netbox_usable",
			"1 while NetBox may be used: its check passed (version, token, custom fields) and its last call was answered below 500; 0 while it is unreachable or failed its check (requests with hosts wait).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (a *availability) Describe(ch chan<- *prometheus.Desc) { ch <- a.usable }

// Collect implements prometheus.Collector.
func (a *availability) Collect(ch chan<- prometheus.Metric) {
	v := 0.0
	if a.current() == nil && a.up.up.Load() {
		v = 1
	}
	ch <- prometheus.MustNewConstMetric(a.usable, prometheus.GaugeValue, v)
}

// current is the problem that keeps NetBox unusable, nil once its check passed (or when Start never
// found one).
func (a *availability) current() *Error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.gated {
		return nil
	}
	return a.problem
}

func (a *availability) set(problem *Error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.gated, a.problem = problem != nil, problem
}

// shouldLog says whether a check's failure is news (another text, or the same one relog later).
func (a *availability) shouldLog(text string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.clock.Now()
	if text == a.logged && now.Sub(a.loggedAt) < a.relog {
		return false
	}
	a.logged, a.loggedAt = text, now
	return true
}

// IsOutage reports whether err is NetBox being unavailable rather than wrong: a connection that failed, no
// answer in time, a 5xx or a 429 — retrying later helps and nothing in our configuration is at fault. A
// KindUnavailable refusal is an outage when the check that keeps the client gated failed so.
func IsOutage(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	if e.Kind == KindUnavailable {
		var inner *Error
		return errors.As(e.Err, &inner) && IsOutage(inner)
	}
	switch e.Kind {
	case KindServer, KindTimeout, KindTransport, KindRateLimited:
		return e.Retryable // a TLS verification failure is a transport error that retrying cannot mend
	}
	return false
}

// Start is the startup activity: the check, once, bounded by about one attempt's timeout (a second more,
// so that a NetBox that does not answer is seen as such, with its time, by the attempt itself). It returns
// the error that must stop the operator — a configuration error or a stop — and nil when the check passed
// or NetBox is merely unavailable; then the check goes on in the background (until ctx ends) and the
// client refuses every other call until it passes.
func (c *Gate) Start(ctx context.Context) error {
	a := c.metrics.avail
	first, cancel := context.WithTimeout(ctx, c.cfg.Timeout+time.Second)
	err := c.schema.Check(first)
	cancel()
	if err == nil || !IsOutage(err) || ctx.Err() != nil {
		return err
	}
	var e *Error
	errors.As(err, &e)
	a.set(e)
	a.shouldLog(e.Error())
	c.log.Warn("NetBox is unreachable at start; starting without it: requests with hosts wait, the inventory answers 503 until NetBox answers",
		zap.Error(err))
	go c.keepChecking(ctx)
	return nil
}

// keepChecking retries the check until it passes or ctx ends: with a capped backoff while NetBox does not
// answer, every recheck interval while it answers but fails the check.
func (c *Gate) keepChecking(ctx context.Context) {
	a := c.metrics.avail
	for attempt := 0; ; attempt++ {
		delay := a.retry.Delay(attempt)
		if p := a.current(); p != nil && !IsOutage(p) {
			delay = a.recheck
		}
		t := a.clock.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		err := c.schema.Check(ctx)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			a.set(nil)
			c.log.Info("NetBox answers and passed its check: requests with hosts go on")
			return
		}
		var e *Error
		if !errors.As(err, &e) {
			e = &Error{Kind: KindProtocol, Op: "check", Err: err}
		}
		a.set(e)
		if !a.shouldLog(e.Error()) {
			continue
		}
		if IsOutage(e) {
			c.log.Warn("NetBox is still unreachable; retrying its check", zap.Error(e))
			continue
		}
		// Too late to stop the operator for it (it serves the NBI and the requests without hosts by now):
		// said here, in /readyz, in o2ims_netbox_usable and in the waiting requests' messages.
		c.log.Error("NetBox answers but cannot be used: requests with hosts wait until this is fixed; the check is retried", zap.Error(e))
	}
}

// usable is the gate of every call but the check: nil, or why nothing is sent (KindUnavailable, wrapping
// the check's own error; retryable, and nothing was sent, so nothing may have landed).
func (c *conn) usable(op string) error {
	if p := c.metrics.avail.current(); p != nil {
		return &Error{Kind: KindUnavailable, Op: op, Retryable: true, Err: p}
	}
	return nil
}

// DownSince is when NetBox stopped answering as last seen; zero while it answers.
func (c *Gate) DownSince() time.Time {
	if o := c.metrics.up.outage(); o != nil {
		return o.since
	}
	return time.Time{}
}

// Unavailability says in one line why err means NetBox cannot be used now — "NetBox unreachable since
// <time> (HTTP 503)", or "NetBox cannot be used until its configuration is fixed: …" — and false for
// any other error (a request's own problem, a conflict, a missing device).
func (c *Gate) Unavailability(err error) (string, bool) {
	var e *Error
	if !errors.As(err, &e) {
		return "", false
	}
	if e.Kind == KindUnavailable {
		var inner *Error
		if !errors.As(e.Err, &inner) {
			return "", false
		}
		return c.describe(inner), true
	}
	if !IsOutage(e) {
		return "", false
	}
	return c.describe(e), true
}

// describe words what keeps NetBox unusable. An outage is worded from the reachability — when the failures
// began and what the first one met — so the message a waiting request shows stays the same from pass to
// pass while the outage lasts, whichever call failed (a status write each pass otherwise).
func (c *Gate) describe(e *Error) string {
	if !IsOutage(e) {
		return "NetBox cannot be used until its configuration is fixed: " + e.Error()
	}
	if o := c.metrics.up.outage(); o != nil {
		return fmt.Sprintf("NetBox unreachable since %s (%s)", o.since.UTC().Format(time.RFC3339), o.cause)
	}
	// A 429: NetBox answers, it only asks us to slow down.
	cause := string(e.Kind)
	if e.Status != 0 {
		cause = fmt.Sprintf("HTTP %d", e.Status)
	}
	return fmt.Sprintf("NetBox unavailable (%s)", cause)
}

// Degraded is what /readyz says about NetBox: "" while it may be used, else why not and what waits.
func (c *Gate) Degraded() string {
	if p := c.metrics.avail.current(); p != nil {
		return c.describe(p) + "; requests with hosts wait"
	}
	if o := c.metrics.up.outage(); o != nil {
		return fmt.Sprintf("NetBox unreachable since %s (%s); requests with hosts wait", o.since.UTC().Format(time.RFC3339), o.cause)
	}
	return ""
}
