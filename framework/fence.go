package framework

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// A deposed leader writes nothing. Two fences keep it so:
//
//   - In time (this file). Another replica may take the Lease once it has gone unrenewed for
//     LeaseDuration as that replica saw it, and it sees a renewal only after the renewal was sent. So a
//     renewal sent at t keeps the Lease ours until t + LeaseDuration at the earliest. This replica acts —
//     starts a pass, sends a pass's write — only until t + RenewDeadline after the send of its last
//     successful renewal; when that passes without another, the passes in flight are cancelled, their
//     writes dropped, and the operator fails (it restarts and campaigns again). RenewDeadline must be
//     shorter than LeaseDuration (client-go refuses it otherwise); the difference (5 s by default: 15 s
//     vs 10 s) is the margin for a write already on the wire and for the clocks' rates. client-go's own
//     renewal loop gives up later (a retry period more, and its release), and a process that was paused
//     (SIGSTOP, a long GC) wakes up to a lapsed fence rather than to a "leading" flag nobody cleared.
//   - In the data (patch.go). Every write of a pass carries the resourceVersion the pass read: a write
//     that would land after someone else's — the new leader's, a user's — is refused with 409 Conflict
//     and never merged, whatever the timing.
type leaseFence struct {
	window  time.Duration // RenewDeadline
	onLapse func()        // the renewals stopped: called once, from the timer

	mu     sync.Mutex
	until  time.Time // monotonic: acting is allowed before it
	ended  bool      // lapsed or released: never valid again in this process
	timer  *time.Timer
	cancel context.CancelFunc // the leader's context (passes), cancelled when the fence ends
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

// check runs when the fence may have lapsed: it re-arms while a renewal extended it meanwhile.
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

// end closes the fence for good (lapsed, lost or released) and cancels the leader's context.
func (f *leaseFence) end() {
	f.mu.Lock()
	f.ended = true
	f.until = time.Time{}
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
// this identity (timed from before the request was sent) and ends it when this identity writes the
// Lease away (client-go's release).
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
	switch {
	case ler.HolderIdentity != l.Identity():
		// Released (or written for someone else): whatever the answer, we no longer act.
		l.fence.end()
	case err == nil:
		l.fence.renewed(sent)
	}
}

// mayAct reports whether this process may start a pass or send a pass's write: always without leader
// election, else while the lease fence holds.
func (o *Operator) mayAct() bool {
	return o.fence == nil || o.fence.valid()
}
