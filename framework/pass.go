package framework

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"time"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/framework/kopf"
)

// passResult tells the queue what to do with the key after a pass.
type passResult struct {
	now     bool          // run again as soon as possible
	after   time.Duration // run again after this delay
	backoff bool          // rate-limited retry (capped exponential)
}

func soonest(a, b time.Duration) time.Duration {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	case a < b:
		return a
	default:
		return b
	}
}

// pass is one run over one object: decide the cause, run at most one handler (plus due timers once the
// cause is done), apply at most one status and one object patch, and say when to come back. It carries
// what every step of the run needs; the steps are its methods, in the files named after their concern
// (progress.go, patch.go, events.go, outcome.go, timers.go).
type pass struct {
	c      *controller
	ctx    context.Context
	key    string
	cached *unstructured.Unstructured // the informer's object: never modified (events refer to it)
	obj    *unstructured.Unstructured // the pass's own copy; handlers get copies of it
	patch  *Patch
	st     *objectState // st.shared only under c.mu
	own    *workerState // &st.own: this pass's alone
	now    time.Time    // the operator's clock, read once: every decision of the pass uses the same instant
	log    *zap.Logger

	// The cause being handled: why, the essence now and the diff-base it is compared with (both nil for
	// a deletion), and whether the object came with the initial listing (kopf's resume rule).
	reason    Reason
	ess, base map[string]any
	initial   bool
	recheck   bool
	// timersBefore is the timers' schedule before this pass ran them, put back when its writes are
	// refused (forgetPass).
	timersBefore map[string]timerState
}

// sync runs one pass over the object behind key, once the cache holds our own last write to it.
func (c *controller) sync(ctx context.Context, key string) passResult {
	obj, exists, err := c.informer.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		c.forget(key)
		return passResult{}
	}
	cached, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return passResult{}
	}
	now := c.op.opts.Clock.Now()
	log := c.log.With(zap.String("object", key))
	st, fresh := c.fresh(key, cached, now, log)
	if !fresh {
		// Our own last write has not reached the cache: acting now would decide on a stale object.
		return passResult{after: c.op.opts.FreshnessTimeout}
	}
	p := &pass{c: c, ctx: ctx, key: key, cached: cached, obj: cached.DeepCopy(), patch: newPatch(),
		st: st, own: &st.own, now: now, log: log}
	// Events describe the pass's outcome, so they are posted after its writes.
	defer p.flushEvents()
	return p.run()
}

// run decides the cause and handles it.
func (p *pass) run() passResult {
	w := p.c.w
	if p.obj.GetDeletionTimestamp() != nil {
		if !p.hasFinalizer() || w.finalizer == "" {
			// Being deleted and nothing of ours holds it: kopf's "free" cause, nothing to do.
			p.c.forget(p.key)
			return passResult{}
		}
		return p.handleCause(ReasonDelete)
	}
	if res, ended := p.ensureFinalizer(); ended {
		return res
	}

	base, hasBase, err := p.diffBase()
	if err != nil {
		// Someone wrote something unreadable: it must not crash or block the object. Treat it as absent
		// (create handlers are idempotent), say so once, and the next completion overwrites it.
		p.warnOnce("diffbase", fmt.Sprintf("Ignoring an unreadable diff-base: %v", err))
		hasBase = false
	}
	p.ess, p.base = essence(p.obj, p.c.namer.Prefix), base
	p.c.mu.Lock()
	p.initial = p.st.shared.initial
	recheck := p.st.shared.recheck
	p.recheck = recheck
	p.c.mu.Unlock()
	switch {
	case !hasBase:
		return p.handleCause(ReasonCreate)
	case !kopf.SameEssence(p.ess, p.base):
		return p.handleCause(ReasonUpdate)
	case p.initial || recheck:
		return p.handleCause(ReasonResume)
	default:
		return p.finish(passResult{})
	}
}

func (p *pass) hasFinalizer() bool { return slices.Contains(p.obj.GetFinalizers(), p.c.w.finalizer) }

// ensureFinalizer makes the object's finalizer what the watch needs (finalizer.go says when). Adding it is
// a pass of its own, before any handler runs, so nothing a handler creates can outlive the object
// unnoticed: then ended is true and res says when to come back. Removing it (no handler needs it any more)
// rides along this pass's patch. An optional delete handler's finalizer rides along later (pass.finish).
func (p *pass) ensureFinalizer() (res passResult, ended bool) {
	switch p.c.finalizerBefore(p.obj, p.hasFinalizer()) {
	case finalizerAdd:
		p.patch.finalizers = append(append([]string{}, p.obj.GetFinalizers()...), p.c.w.finalizer)
		if res, ok := p.apply(); !ok {
			return res, true
		}
		return passResult{now: true}, true
	case finalizerRemove:
		p.patch.finalizers = removeString(p.obj.GetFinalizers(), p.c.w.finalizer)
	}
	return passResult{}, false
}

// diffBase returns the stored diff-base with our own annotations cleared, parsing it only when its
// annotation changed since the last pass.
func (p *pass) diffBase() (map[string]any, bool, error) {
	c, own := p.c, p.own
	ann := p.obj.GetAnnotations()
	raw := ""
	for _, k := range c.keys.Keys(kopf.DiffBaseName) {
		if v, ok := ann[k]; ok {
			raw = v
			break
		}
	}
	if raw != "" && raw == own.baseRaw && own.base != nil {
		return own.base, true, nil
	}
	base, has, err := fetchDiffBase(p.obj, c.keys.Keys(kopf.DiffBaseName))
	if err != nil || !has {
		own.baseRaw, own.base = "", nil
		return nil, has, err
	}
	base = kopf.ClearOwn(base, c.namer.Prefix)
	own.baseRaw, own.base = raw, base
	return base, true, nil
}

// handlersFor lists the handlers of a cause; resume handlers ride along an update seen at start (kopf's
// "cuckoo" rule), once.
func (c *controller) handlersFor(reason Reason, initial bool) []*handlerSpec {
	hs := append([]*handlerSpec{}, c.w.handlers[reason]...)
	if reason == ReasonUpdate && initial {
		seen := map[string]bool{}
		for _, h := range hs {
			seen[h.id] = true
		}
		for _, h := range c.w.handlers[ReasonResume] {
			if !seen[h.id] {
				hs = append(hs, h)
			}
		}
	}
	return hs
}

// handleCause runs the first unfinished handler of the cause, then either stores the progress that must
// survive a restart or, when every handler has finished, completes the cause.
func (p *pass) handleCause(reason Reason) passResult {
	own := p.own
	p.reason = reason
	every := p.c.handlersFor(reason, p.initial)
	if own.cause != reason {
		// A new cause starts from what the object says, not from what the previous cause left in memory.
		own.cause = reason
		own.handlers = map[string]*handlerState{}
		own.delaySetAt = map[string]time.Time{}
		own.lastRetry = map[string]string{}
	}
	// Field filters (Field("spec")): an update that touches no handler's field runs none of them.
	handlers := concerned(every, reason, p.base, p.ess, own.handlers)
	for _, h := range handlers {
		if _, ok := own.handlers[h.id]; ok {
			continue
		}
		if hs := p.loadProgress(h.id); hs != nil {
			own.handlers[h.id] = hs
		}
	}

	res := passResult{}
	if h := p.unfinished(handlers); h != nil {
		hs := own.handlers[h.id]
		p.c.mu.Lock()
		changedAt := p.st.shared.changedAt
		p.c.mu.Unlock()
		if hs != nil && !hs.delayed.IsZero() && p.now.Before(hs.delayed) && !changedAt.After(own.delaySetAt[h.id]) {
			// Sleeping until its delay and nothing changed since: no observation to make yet; only
			// progress that yielded to a busy bucket or queue is tried again (yield.go).
			res := passResult{after: hs.delayed.Sub(p.now)}
			if own.yielded != nil {
				return p.finish(res)
			}
			return res
		}
		if hs == nil {
			hs = &handlerState{started: p.now, purpose: string(reason)}
			own.handlers[h.id] = hs
		}
		res = p.runHandler(h, hs)
	}

	if p.unfinished(handlers) != nil {
		p.storeProgress(handlers)
		if res == (passResult{}) {
			// The handler that just finished leaves others to run: next pass right away.
			res = passResult{now: true}
		}
		return p.finish(res)
	}
	return p.complete(every, res)
}

// unfinished is the first handler that has not finished in this cause, or nil.
func (p *pass) unfinished(handlers []*handlerSpec) *handlerSpec {
	for _, h := range handlers {
		if hs := p.own.handlers[h.id]; hs == nil || !hs.finished() {
			return h
		}
	}
	return nil
}

// complete ends a cause whose handlers have all finished: purge their progress, then record the cause as
// kopf does (the diff-base after create/update/resume; the finalizer's removal after delete).
func (p *pass) complete(every []*handlerSpec, res passResult) passResult {
	p.purgeProgress(every)
	if p.reason == ReasonDelete {
		p.patch.finalizers = removeString(p.obj.GetFinalizers(), p.c.w.finalizer)
	} else {
		if p.base == nil || !kopf.SameEssence(p.base, p.ess) {
			enc := kopf.EncodeDiffBase(p.ess)
			for _, k := range p.c.keys.Keys(kopf.DiffBaseName) {
				p.patch.SetAnnotation(k, enc)
			}
			p.mark()
		}
		p.c.mu.Lock()
		p.st.shared.initial, p.st.shared.recheck = false, false
		p.c.mu.Unlock()
	}
	p.own.cause, p.own.handlers = "", map[string]*handlerState{}
	if p.reason == ReasonDelete {
		res, _ = p.apply()
		return res
	}
	return p.finish(res)
}

// runHandler runs one handler once, unless a limit has already ended it, and settles its outcome.
func (p *pass) runHandler(h *handlerSpec, hs *handlerState) passResult {
	hlog := p.log.With(zap.String("handler", h.id), zap.String("cause", string(p.reason)))
	out, exhausted := h.exhausted(hs, p.now)
	// The handler's observation is newer than any progress that yielded: it sets again what still differs.
	p.own.yielded = nil
	if !exhausted {
		out = p.execute(h, &Cause{Reason: p.reason, Logger: hlog, Retries: hs.retries, Started: hs.started})
	}
	return p.settleHandler(h, hs, hlog, out)
}

// execute runs a handler or a timer once and says what it came to. The caller's cause says why, with which
// logger, retry count and start; execute adds a private copy of the object, the pass's patch, clock and
// the caches, observes the run's duration and queues the events the handler posted.
func (p *pass) execute(h *handlerSpec, cause *Cause) outcome {
	cause.HandlerID, cause.Object, cause.Patch, cause.Now, cause.Cache = h.id, p.obj.DeepCopy(), p.patch, p.now, p.c.op.cache
	start := time.Now()
	out := classify(p.call(h, cause))
	p.c.op.metrics.HandlerDuration.WithLabelValues(p.c.resource, h.id).Observe(time.Since(start).Seconds())
	p.postEvents(cause.events)
	return out
}

// call runs the handler with its per-call bound, turning a panic into an error (retried) instead of a crash.
func (p *pass) call(h *handlerSpec, cause *Cause) (err error) {
	callCtx, cancel := context.WithTimeout(p.ctx, h.callTimeout)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			cause.Logger.Error("handler panicked", zap.Any("panic", r), zap.ByteString("stack", debug.Stack()))
			err = fmt.Errorf("handler panicked: %v", r)
		}
	}()
	return h.fn(callCtx, cause)
}

// finish runs due timers when no cause is pending, applies the patches and merges the requeue times.
func (p *pass) finish(res passResult) passResult {
	if len(p.c.w.timers) > 0 && p.own.cause == "" {
		p.timersBefore = make(map[string]timerState, len(p.own.timers))
		for id, ts := range p.own.timers {
			p.timersBefore[id] = *ts
		}
		next := p.runTimers()
		if !res.now && !res.backoff {
			res.after = soonest(res.after, next)
		}
	}
	// An optional delete handler's finalizer rides along this pass's writes when they make it needed or
	// write the object anyway (finalizer.go).
	p.c.rideFinalizer(p.obj, p.patch)
	applied, ok := p.apply()
	if !ok {
		return applied
	}
	if applied.after > 0 && !res.now && !res.backoff {
		res.after = soonest(res.after, applied.after)
	}
	return res
}

// removeString never answers nil: a nil finalizer list in a patch means "leave them as they are".
func removeString(list []string, s string) []string {
	out := []string{}
	for _, e := range list {
		if e != s {
			out = append(out, e)
		}
	}
	return out
}

// forgetPass drops what this pass decided in memory when its writes were refused (a conflict: the object
// changed since the pass read it; or the lease fence): the cause's progress, the resume flags it cleared
// and the timers it ran. The next pass reads them from the object again and redoes what this one did —
// handlers are idempotent, and their business status was in the write that was refused.
func (p *pass) forgetPass() {
	own := p.own
	own.cause, own.handlers = "", map[string]*handlerState{}
	own.delaySetAt = map[string]time.Time{}
	own.yielded, own.yieldedSince = nil, time.Time{}
	p.c.mu.Lock()
	p.st.shared.initial = p.st.shared.initial || p.initial
	p.st.shared.recheck = p.st.shared.recheck || p.recheck
	p.c.mu.Unlock()
	if p.timersBefore == nil {
		return
	}
	for id := range own.timers {
		if _, ok := p.timersBefore[id]; !ok {
			delete(own.timers, id)
		}
	}
	for id, ts := range p.timersBefore {
		if cur := own.timers[id]; cur != nil {
			*cur = ts
		}
	}
}
