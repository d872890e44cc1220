package framework

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// A deposed leader writes nothing. Three fences keep it so:
//
//   - In time (this file). Another replica takes the Lease once it has seen it unrenewed for
//     LeaseDuration, and it sees a renewal only after the renewal was made: a renewal made at t keeps the
//     Lease ours until about t + LeaseDuration at the earliest. This replica acts (starts a pass, sends a
//     pass's write or an event) only until t + RenewDeadline (less, see below) after its last successful
//     renewal; past that, the passes' context is cancelled (a handler's call in flight is refused by its
//     client before sending), nothing more is sent and the operator fails (it restarts and campaigns
//     again). The difference (4 s by default: 15 s less 1 s vs 10 s) is the margin for a write already
//     on the wire and for the two clocks' rates. It is checked against the clock at every write, not
//     only by a timer, so a process paused past it (SIGSTOP, a long GC) wakes up fenced.
//   - At the transport (writefence.go). Every mutating request of the operator's clients, whatever context
//     it was sent with, is refused unsent past the same instant; so is every NetBox write (LeaderWrites).
//   - In the data (patch.go). A pass's status write carries the resourceVersion the pass read: a status
//     decided on an object someone changed since (a new leader, a user, the NBI) is refused with 409 and
//     never merged; the pass runs again on the newer object.
//
// The other replica's view is coarser than LeaseDuration suggests: the Lease stores the duration in whole
// seconds and client-go sees a renewal only when the record changes, and the record's renewTime is
// compared to the second. Renewals within one second look alike, so a standby may date our last renewal
// up to 1 s early. The fence therefore holds min(RenewDeadline, whole seconds of LeaseDuration - 1 s)
// (fenceWindow), timed from the renewal's own renewTime (taken before client-go read and sent the Lease).
type leaseFence struct {
	window  time.Duration // fenceWindow
	onLapse func()        // no renewal within the window: called once, from the timer

	mu     sync.Mutex
	until  time.Time // monotonic: acting is allowed before it
	ended  bool      // lapsed, lost or released: never valid again in this process
	timer  *time.Timer
	cancel context.CancelFunc // the passes' context, cancelled when the fence ends
}

// errFenced is why a write was not sent: the lease fence lapsed (ClassFenced).
var errFenced = errors.New("this replica may no longer be the leader (the lease was not renewed within the renew deadline): not sent")

// leaseRecordGranularity is how coarsely another replica sees a renewal (see leaseFence).
const leaseRecordGranularity = time.Second

// fenceWindow is how long after a renewal this replica may act: never more than RenewDeadline, and less
// than another replica may wait before it takes the Lease (it may be 0 or less: no usable window).
func fenceWindow(leaseDuration, renewDeadline time.Duration) time.Duration {
	return min(renewDeadline, leaseDuration.Truncate(time.Second)-leaseRecordGranularity)
}

func newLeaseFence(window time.Duration, onLapse func()) *leaseFence {
	return &leaseFence{window: window, onLapse: onLapse}
}

// renewed extends the fence after a successful acquisition or renewal whose request was sent at sent.
func (f *leaseFence) renewed(sent time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		return
	}
	if until := sent.Add(f.window); until.After(f.until) {
		f.until = until
	}
	d := time.Until(f.until)
	if f.timer == nil {
		f.timer = time.AfterFunc(d, f.check)
		return
	}
	f.timer.Reset(d)
}

// check runs when the fence may have lapsed; it re-arms when a renewal extended it meanwhile.
func (f *leaseFence) check() {
	f.mu.Lock()
	if !f.ended {
		if d := time.Until(f.until); d > 0 {
			f.timer.Reset(d)
			f.mu.Unlock()
			return
		}
	}
	lapsed := !f.ended
	f.mu.Unlock()
	if lapsed {
		f.end()
		f.onLapse()
	}
}

// end closes the fence for good (lapsed, lost or released) and cancels the passes' context.
func (f *leaseFence) end() {
	f.mu.Lock()
	f.ended = true
	if f.timer != nil {
		f.timer.Stop()
	}
	cancel := f.cancel
	f.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// valid reports whether this replica may still act as the leader.
func (f *leaseFence) valid() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.ended && time.Now().Before(f.until)
}

// standby reports whether this replica never led: no renewal extended the fence and it never ended.
func (f *leaseFence) standby() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.ended && f.until.IsZero()
}

// deadline is the instant the fence lapses (zero before the first renewal).
func (f *leaseFence) deadline() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.until
}

// leaderContext is parent, cancelled when the fence ends.
func (f *leaseFence) leaderContext(parent context.Context) context.Context {
	ctx, cancel := context.WithCancel(parent)
	f.mu.Lock()
	ended := f.ended
	f.cancel = cancel
	f.mu.Unlock()
	if ended {
		cancel()
	}
	return ctx
}

// fencedLock is the Lease lock that extends the fence on every successful acquisition or renewal by
// this identity, timed from before its request was sent, and ends it when this identity writes the Lease
// away (client-go's release on cancel).
type fencedLock struct {
	resourcelock.Interface
	fence *leaseFence
}

func (l *fencedLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	sent := time.Now()
	err := l.Interface.Create(ctx, ler)
	l.settle(sent, ler, err)
	return err
}

func (l *fencedLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	sent := time.Now()
	err := l.Interface.Update(ctx, ler)
	l.settle(sent, ler, err)
	return err
}

func (l *fencedLock) settle(sent time.Time, ler resourcelock.LeaderElectionRecord, err error) {
	if renew := ler.RenewTime.Time; !renew.IsZero() && renew.Before(sent) {
		// client-go took it before reading the Lease: the earlier, the safer.
		sent = renew
	}
	switch {
	case ler.HolderIdentity != l.Identity():
		// Released (or written for someone else): whatever the answer, we no longer act.
		l.fence.end()
	case err == nil:
		l.fence.renewed(sent)
	}
}

// mayAct reports whether this process may start a pass or send a pass's write or event: always without
// leader election, else while the lease fence holds.
func (o *Operator) mayAct() bool {
	return o.fence == nil || o.fence.valid()
}

// fenced counts a write (or pass) the lease fence stopped and says so as a classified error.
func (o *Operator) fenced(what, op string) error {
	o.metrics.Fenced.WithLabelValues(what).Inc()
	return &APIError{Op: op, Class: ClassFenced, Err: errFenced}
}
