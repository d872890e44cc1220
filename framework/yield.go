package framework

import (
	"context"
	"time"

	"github.com/o2ims-operator/o2ims-operator/framework/kopf"
)

// Progress writes yield to state writes (issue 39).
//
// Every write of a resource takes a token of its client-side bucket (clientlimits.go). When a burst empties
// it, calls wait their turn in arrival order, so a status that only reports progress (a new message while
// the state stays the same) takes a token a write that changes the state would have had: the one FOCOM
// waits for, or the one that finishes work. So a pass's status write made only of Patch.SetProgress fields,
// with no object patch beside it, is sent only when a token is free at once (bucket.takeAhead); else it
// yields: the object keeps it as its pending progress and comes back once the calls already waiting have had
// theirs (bucket.backlog). It yields as well while a whole round of passes waits for a worker. Either way
// for at most yieldHoldMax in all.
//
// The pending progress is never written over something newer and never lost while it is still news:
//   - the next pass that runs no handler sends it, merged under its own status fields (a yield again when
//     the bucket is still busy);
//   - a handler run drops it: its observation is newer and sets again whatever still differs;
//   - a refused write drops it with the rest of the pass (forgetPass): it was decided on an older object;
//   - a write that failed otherwise keeps it pending (keepYielded).
//
// What it costs: with the bucket empty or the queue full, a request may skip a progress message whose
// successor comes before it could go. Otherwise every message is written as before.

// Progress that yielded comes back after the bucket's backlog, within these bounds: not sooner, so a
// busy bucket is not polled, and not later, so the message is not left behind for long.
const (
	yieldRetryMin = 50 * time.Millisecond
	yieldRetryMax = 5 * time.Second
)

// yieldBusyRetry is when progress that yielded to a busy queue is tried again, and yieldHoldMax how long
// progress may be held back in all: past it, it waits for its turn as any write, so a request's progress
// shows within seconds under any load and any limit.
const (
	yieldBusyRetry = time.Second
	yieldHoldMax   = 10 * time.Second
)

// yield decides the pass's status write: the context to send it with (carrying a token taken ahead when it
// could have yielded), or yielded with when to come back. Progress yields to a busy bucket, and to a busy
// queue: when a whole round of passes waits for a worker, the API server's time goes to the writes that
// move requests on, and a newer message is likely to replace this one before the queue drains.
func (p *pass) yield() (ctx context.Context, yielded bool, after time.Duration) {
	if !p.patch.onlyProgress() || p.patch.metadataPatch(p.obj) != nil {
		return p.ctx, false, 0
	}
	own := p.own
	if !own.yieldedSince.IsZero() && p.now.Sub(own.yieldedSince) >= yieldHoldMax {
		return p.ctx, false, 0 // held back long enough: it waits for its turn as any write
	}
	if p.c.queue.Len() >= p.c.op.opts.Workers {
		after = yieldBusyRetry
	} else {
		pr, ok := p.c.op.clients.Dynamic.(*perResource)
		if !ok {
			return p.ctx, false, 0
		}
		b := pr.client(p.c.w.gvr.GroupResource()).bucket
		if b == nil {
			return p.ctx, false, 0
		}
		if ctx, ok := b.takeAhead(p.ctx); ok {
			return ctx, false, 0
		}
		after = min(max(b.backlog(), yieldRetryMin), yieldRetryMax)
	}
	own.yielded = kopf.DeepCopyJSON(p.patch.Status).(map[string]any)
	if own.yieldedSince.IsZero() {
		own.yieldedSince = p.now
	}
	p.c.op.metrics.Yields.WithLabelValues(p.c.resource).Inc()
	return p.ctx, true, after
}

// statusWritten ends the hold: the object shows the newest status.
func (w *workerState) statusWritten() { w.yieldedSince = time.Time{} }

// keepYielded puts progress whose write failed back as pending: the next pass without a handler run
// sends it again (a handler run replaces it).
func (w *workerState) keepYielded(patch *Patch) {
	if patch.onlyProgress() && w.yielded == nil {
		w.yielded = patch.Status
	}
}

// restoreYielded puts the pending progress under the pass's patch (its own fields win) and clears it.
func (w *workerState) restoreYielded(patch *Patch) {
	y := w.yielded
	if y == nil {
		return
	}
	w.yielded = nil
	for k := range y {
		if _, set := patch.Status[k]; !set {
			patch.markStatus(k, true)
		}
	}
	patch.Status = overlay(y, patch.Status)
}

// overlay writes top over base (base is modified): maps merge, anything else in top replaces, a nil
// included (it deletes the key when the patch is applied, so it must reach the patch).
func overlay(base, top map[string]any) map[string]any {
	for k, v := range top {
		bm, bok := base[k].(map[string]any)
		tm, tok := v.(map[string]any)
		if bok && tok {
			base[k] = overlay(bm, tm)
			continue
		}
		base[k] = v
	}
	return base
}
