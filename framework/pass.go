package framework

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

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

// Event reasons the framework posts.
const (
	EventHandlerSucceeded = "HandlerSucceeded"
	EventHandlerRetrying  = "HandlerRetrying"
	EventHandlerFailed    = "HandlerFailed"
	EventStateUnreadable  = "StateUnreadable"
)

// sync is one pass over one object: decide the cause, run at most one handler (plus due timers once the
// cause is done), apply at most one status and one object patch, and say when to come back.
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

	c.mu.Lock()
	st := c.stateLocked(key, cached.GetUID())
	if st.waitRV != "" {
		switch {
		case rvReached(cached.GetResourceVersion(), st.waitRV):
			st.waitRV, st.parked = "", false
		case now.Sub(st.waitSince) < c.op.opts.FreshnessTimeout:
			// Our own last write has not reached the cache: acting now would decide on a stale object.
			st.parked = true
			c.mu.Unlock()
			return passResult{after: c.op.opts.FreshnessTimeout}
		default:
			log.Warn("own write never appeared in the cache; proceeding", zap.String("resourceVersion", st.waitRV))
			st.waitRV, st.parked = "", false
		}
	}
	c.mu.Unlock()

	u := cached.DeepCopy()
	// Events describe the pass's outcome, so they are posted after its writes.
	defer c.flushEvents(cached, st)
	p := newPatch()
	w := c.w
	hasFinalizer := slices.Contains(u.GetFinalizers(), w.finalizer)

	if u.GetDeletionTimestamp() != nil {
		if !hasFinalizer || w.finalizer == "" {
			// Being deleted and nothing of ours holds it: kopf's "free" cause, nothing to do.
			c.forget(key)
			return passResult{}
		}
		return c.handleCause(ctx, key, u, p, st, ReasonDelete, nil, nil, false, now, log)
	}

	switch c.finalizerBefore(u, hasFinalizer) {
	case finalizerAdd:
		// Added in a pass of its own, before any handler runs, so nothing a handler creates can outlive
		// the object unnoticed (finalizer.go: when it is needed).
		p.finalizers = append(append([]string{}, u.GetFinalizers()...), w.finalizer)
		if res, ok := c.apply(ctx, key, u, p, log); !ok {
			return res
		}
		return passResult{now: true}
	case finalizerRemove:
		p.finalizers = removeString(u.GetFinalizers(), w.finalizer)
	}

	base, hasBase, err := c.diffBase(u, st)
	if err != nil {
		// Someone wrote something unreadable: it must not crash or block the object. Treat it as absent
		// (create handlers are idempotent), say so once, and the next completion overwrites it.
		c.warnOnce(u, st, "diffbase", fmt.Sprintf("Ignoring an unreadable diff-base: %v", err), log)
		hasBase = false
	}
	ess := essence(u, c.namer.Prefix)
	c.mu.Lock()
	initial := st.initial
	c.mu.Unlock()
	switch {
	case !hasBase:
		return c.handleCause(ctx, key, u, p, st, ReasonCreate, ess, nil, initial, now, log)
	case !kopf.SameEssence(ess, base):
		return c.handleCause(ctx, key, u, p, st, ReasonUpdate, ess, base, initial, now, log)
	case initial:
		return c.handleCause(ctx, key, u, p, st, ReasonResume, ess, base, initial, now, log)
	default:
		return c.finishPass(ctx, key, u, p, st, passResult{}, now, log)
	}
}

// diffBase returns the stored diff-base with our own annotations cleared, parsing it only when its
// annotation changed since the last pass.
func (c *controller) diffBase(u *unstructured.Unstructured, st *objectState) (map[string]any, bool, error) {
	ann := u.GetAnnotations()
	raw := ""
	for _, k := range c.keys.Keys(kopf.DiffBaseName) {
		if v, ok := ann[k]; ok {
			raw = v
			break
		}
	}
	if raw != "" && raw == st.baseRaw && st.base != nil {
		return st.base, true, nil
	}
	base, has, err := fetchDiffBase(u, c.keys.Keys(kopf.DiffBaseName))
	if err != nil || !has {
		st.baseRaw, st.base = "", nil
		return nil, has, err
	}
	base = kopf.ClearOwn(base, c.namer.Prefix)
	st.baseRaw, st.base = raw, base
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

func (c *controller) handleCause(ctx context.Context, key string, u *unstructured.Unstructured, p *Patch,
	st *objectState, reason Reason, ess, base map[string]any, initial bool, now time.Time, log *zap.Logger) passResult {
	every := c.handlersFor(reason, initial)
	if st.cause != reason {
		// A new cause starts from what the object says, not from what the previous cause left in memory.
		st.cause = reason
		st.handlers = map[string]*handlerState{}
		st.delaySetAt = map[string]time.Time{}
		st.lastRetry = map[string]string{}
	}
	// Field filters (Field("spec")): an update that touches no handler's field runs none of them.
	handlers := concerned(every, reason, base, ess, st.handlers)
	for _, h := range handlers {
		if _, ok := st.handlers[h.id]; ok {
			continue
		}
		if hs := c.loadProgress(u, st, h.id, now, log); hs != nil {
			st.handlers[h.id] = hs
		}
	}

	var h *handlerSpec
	for _, spec := range handlers {
		if hs := st.handlers[spec.id]; hs == nil || !hs.finished() {
			h = spec
			break
		}
	}

	res := passResult{}
	if h != nil {
		hs := st.handlers[h.id]
		c.mu.Lock()
		changedAt := st.changedAt
		c.mu.Unlock()
		if hs != nil && !hs.delayed.IsZero() && now.Before(hs.delayed) && !changedAt.After(st.delaySetAt[h.id]) {
			// Sleeping until its delay and nothing changed since: no observation to make yet.
			return passResult{after: hs.delayed.Sub(now)}
		}
		if hs == nil {
			hs = &handlerState{started: now, purpose: string(reason)}
			st.handlers[h.id] = hs
		}
		res = c.runHandler(ctx, key, u, p, st, h, hs, reason, now, log)
	}

	done := true
	for _, spec := range handlers {
		if hs := st.handlers[spec.id]; hs == nil || !hs.finished() {
			done = false
		}
	}
	if !done {
		c.storeProgress(u, p, st, handlers)
		if res == (passResult{}) {
			// The handler that just finished leaves others to run: next pass right away.
			res = passResult{now: true}
		}
		return c.finishPass(ctx, key, u, p, st, res, now, log)
	}

	// The cause is done: purge progress, then record it as kopf does.
	c.purgeProgress(u, p, st, every)
	switch reason {
	case ReasonDelete:
		p.finalizers = removeString(u.GetFinalizers(), c.w.finalizer)
	default:
		if base == nil || !kopf.SameEssence(base, ess) {
			enc := kopf.EncodeDiffBase(ess)
			for _, k := range c.keys.Keys(kopf.DiffBaseName) {
				p.SetAnnotation(k, enc)
			}
			c.mark(u, p)
		}
		c.mu.Lock()
		st.initial = false
		c.mu.Unlock()
	}
	st.cause, st.handlers = "", map[string]*handlerState{}
	if reason == ReasonDelete {
		res, _ = c.apply(ctx, key, u, p, log)
		return res
	}
	return c.finishPass(ctx, key, u, p, st, res, now, log)
}

// runHandler runs one handler once and folds its outcome into the handler's state (kopf's with_outcome).
func (c *controller) runHandler(ctx context.Context, key string, u *unstructured.Unstructured, p *Patch,
	st *objectState, h *handlerSpec, hs *handlerState, reason Reason, now time.Time, log *zap.Logger) passResult {
	hlog := log.With(zap.String("handler", h.id), zap.String("cause", string(reason)))
	var out outcome
	switch {
	case h.timeout > 0 && now.Sub(hs.started) >= h.timeout:
		out = outcome{kind: outcomePermanent, message: fmt.Sprintf("Handler %q has timed out after %s.", h.id, h.timeout)}
	case h.retries > 0 && hs.retries >= h.retries:
		out = outcome{kind: outcomePermanent, message: fmt.Sprintf("Handler %q has exceeded %d retries.", h.id, h.retries)}
	default:
		cause := &Cause{
			Reason: reason, HandlerID: h.id, Object: u.DeepCopy(), Patch: p, Logger: hlog,
			Retries: hs.retries, Started: hs.started, Now: now, Cache: c.op.cache,
		}
		start := time.Now()
		out = classify(c.call(ctx, h, cause))
		c.op.metrics.HandlerDuration.WithLabelValues(c.resource, h.id).Observe(time.Since(start).Seconds())
		c.postEvents(st, cause.events)
	}

	res := passResult{}
	delay := out.delay
	if out.kind == outcomeError {
		delay = c.backoffFor(key)
	}
	// Look ahead as kopf does: if the next try would exceed a limit, fail now rather than after waiting.
	if out.kind == outcomeTemporary || out.kind == outcomeError {
		switch {
		case h.retries > 0 && hs.retries+1 >= h.retries:
			out = outcome{kind: outcomePermanent, message: fmt.Sprintf("Handler %q has exceeded %d retries: %s", h.id, h.retries, out.message)}
		case h.timeout > 0 && now.Add(delay).Sub(hs.started) >= h.timeout:
			out = outcome{kind: outcomePermanent, message: fmt.Sprintf("Handler %q has timed out after %s: %s", h.id, h.timeout, out.message)}
		}
	}

	hs.retries++
	c.op.metrics.HandlerRuns.WithLabelValues(c.resource, h.id, string(out.kind)).Inc()
	switch out.kind {
	case outcomeSuccess:
		hs.success, hs.stopped, hs.delayed, hs.message = true, now, time.Time{}, ""
		hlog.Info("handler succeeded")
		// Handlers that post their own progress events (a "Fulfilled") would only be echoed here.
		if reason != ReasonResume && !h.ownProgress {
			c.post(st, corev1.EventTypeNormal, EventHandlerSucceeded, fmt.Sprintf("Handler %q succeeded.", h.id))
		}
	case outcomePermanent:
		hs.failure, hs.stopped, hs.delayed, hs.message = true, now, time.Time{}, out.message
		c.op.metrics.PermanentFailures.WithLabelValues(c.resource, h.id).Inc()
		hlog.Error("handler failed permanently", zap.String("error", out.message))
		c.post(st, corev1.EventTypeWarning, EventHandlerFailed, fmt.Sprintf("Handler %q failed permanently: %s", h.id, out.message))
	case outcomeTemporary, outcomeError:
		hs.delayed, hs.message = now.Add(delay), out.message
		st.delaySetAt[h.id] = now
		c.op.metrics.HandlerRetries.WithLabelValues(c.resource, h.id, string(out.kind)).Inc()
		eventType, verb := corev1.EventTypeNormal, "will run again"
		if out.kind == outcomeError {
			eventType, verb = corev1.EventTypeWarning, "failed; retrying"
			hlog.Warn("handler failed; retrying with backoff", zap.Duration("delay", delay), zap.String("error", out.message))
			res = passResult{backoff: true}
		} else {
			hlog.Debug("handler asked for another pass", zap.Duration("delay", delay), zap.String("message", out.message))
			res = passResult{after: delay}
		}
		// A retry event is posted when its message changes, not on every pass: waiting is normal, and a
		// request waiting an hour must not post 360 identical events.
		if st.lastRetry[h.id] != out.message && !(h.ownProgress && out.kind == outcomeTemporary) {
			st.lastRetry[h.id] = out.message
			c.post(st, eventType, EventHandlerRetrying, fmt.Sprintf("Handler %q %s in %s: %s", h.id, verb, delay.Round(time.Millisecond), out.message))
		}
	}
	return res
}

// call runs the handler with its per-call bound, turning a panic into an error (retried) instead of a crash.
func (c *controller) call(ctx context.Context, h *handlerSpec, cause *Cause) (err error) {
	callCtx, cancel := context.WithTimeout(ctx, h.callTimeout)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			cause.Logger.Error("handler panicked", zap.Any("panic", r), zap.ByteString("stack", debug.Stack()))
			err = fmt.Errorf("handler panicked: %v", r)
		}
	}()
	return h.fn(callCtx, cause)
}

// loadProgress reads a handler's record (ours or kopf's) from the object.
func (c *controller) loadProgress(u *unstructured.Unstructured, st *objectState, id string, now time.Time, log *zap.Logger) *handlerState {
	ann := u.GetAnnotations()
	for _, k := range c.keys.Keys(id) {
		raw, ok := ann[k]
		if !ok {
			continue
		}
		hs, err := decodeProgress(raw, now)
		if err != nil {
			c.warnOnce(u, st, "progress/"+id, fmt.Sprintf("Ignoring unreadable progress of handler %q: %v", id, err), log)
			// Keep a marker that a record exists, so it is rewritten or purged rather than left behind.
			return &handlerState{started: now, purpose: string(st.cause), persisted: &kopf.ProgressRecord{}}
		}
		return hs
	}
	return nil
}

// storeProgress writes the records that must survive a restart. kopf rewrites a record on every retry;
// that turns every waiting object into a write per pass. Here a record is written when it carries
// something a restart needs: the start time and retry count of a handler with limits, a finished handler
// whose siblings are still running, or a record already on the object (kept truthful, e.g. kopf's).
func (c *controller) storeProgress(u *unstructured.Unstructured, p *Patch, st *objectState, handlers []*handlerSpec) {
	for _, h := range handlers {
		hs := st.handlers[h.id]
		if hs == nil {
			continue
		}
		if !(h.limited() || hs.finished() || hs.persisted != nil) {
			continue
		}
		rec := hs.record(c.op.opts.TimeForm)
		if sameRecord(rec, hs.persisted) {
			continue
		}
		enc := encodeProgress(rec)
		for _, k := range c.keys.Keys(h.id) {
			p.SetAnnotation(k, enc)
		}
		hs.persisted = rec
		c.mark(u, p)
	}
}

// purgeProgress removes every record of the cause's handlers and their sub-handlers (kopf's subrefs, as
// the Python image's create_fn/create_fn.<locals>.sub_* records).
func (c *controller) purgeProgress(u *unstructured.Unstructured, p *Patch, st *objectState, handlers []*handlerSpec) {
	ann := u.GetAnnotations()
	purge := func(id string) {
		for _, k := range c.keys.Keys(id) {
			if _, ok := ann[k]; ok {
				p.DeleteAnnotation(k)
			}
		}
	}
	for _, h := range handlers {
		purge(h.id)
		if hs := st.handlers[h.id]; hs != nil {
			for _, sub := range hs.subrefs {
				purge(sub)
			}
		}
	}
}

// mark adds kopf's marker so other kopf operators leave our annotations out of their essence.
func (c *controller) mark(u *unstructured.Unstructured, p *Patch) {
	k := c.namer.Prefix + "/" + kopf.Marker
	if _, ok := u.GetAnnotations()[k]; !ok {
		p.SetAnnotation(k, "yes")
	}
}

// finishPass runs due timers when no cause is pending, applies the patches and merges the requeue times.
func (c *controller) finishPass(ctx context.Context, key string, u *unstructured.Unstructured, p *Patch,
	st *objectState, res passResult, now time.Time, log *zap.Logger) passResult {
	if len(c.w.timers) > 0 && st.cause == "" {
		next := c.runTimers(ctx, u, p, st, now, log)
		if !res.now && !res.backoff {
			res.after = soonest(res.after, next)
		}
	}
	// An optional delete handler's finalizer rides along this pass's writes when they make it needed or
	// write the object anyway (finalizer.go).
	c.rideFinalizer(u, p)
	applied, ok := c.apply(ctx, key, u, p, log)
	if !ok {
		return applied
	}
	return res
}

// apply sends the status patch, then the object patch; each only when it changes something. Status goes
// first: a handler's business status must land before its completion is recorded.
func (c *controller) apply(ctx context.Context, key string, u *unstructured.Unstructured, p *Patch, log *zap.Logger) (passResult, bool) {
	ri := c.resourceClient(u)
	if body := p.statusPatch(u); body != nil {
		out, err := ri.Patch(ctx, u.GetName(), types.MergePatchType, body, metav1.PatchOptions{}, "status")
		if err != nil {
			return c.writeFailed(key, "status", err, log), false
		}
		c.op.metrics.Writes.WithLabelValues(c.resource, "status").Inc()
		c.wrote(key, out)
		u.SetResourceVersion(out.GetResourceVersion())
	}
	if body := p.metadataPatch(u); body != nil {
		out, err := c.patchObject(ctx, ri, u, p, body)
		if err != nil {
			return c.writeFailed(key, "object", err, log), false
		}
		c.op.metrics.Writes.WithLabelValues(c.resource, "object").Inc()
		c.wrote(key, out)
	}
	return passResult{}, true
}

func (c *controller) writeFailed(key, what string, err error, log *zap.Logger) passResult {
	err = ClassifyAPIError("patch "+what+" of "+key, true, err)
	switch {
	case IsClass(err, ClassNotFound):
		// Gone while we worked; the delete event finishes the story.
		return passResult{}
	case IsClass(err, ClassConflict):
		// The finalizer list changed under us: decide again on the newer object.
		log.Info("object changed during the pass; running it again", zap.Error(err))
		return passResult{after: 100 * time.Millisecond}
	default:
		log.Warn("writing the pass's result failed", zap.Error(err))
		return passResult{backoff: true}
	}
}

func (c *controller) resourceClient(u *unstructured.Unstructured) dynamic.ResourceInterface {
	if c.w.namespaced {
		return c.client.Namespace(u.GetNamespace())
	}
	return c.client
}

func (c *controller) postEvents(st *objectState, events []pendingEvent) {
	st.events = append(st.events, events...)
}

// post queues an event for the end of the pass (the worker owns the key, so st needs no lock here).
func (c *controller) post(st *objectState, eventType, reason, message string) {
	st.events = append(st.events, pendingEvent{eventType, reason, message})
}

func (c *controller) flushEvents(u *unstructured.Unstructured, st *objectState) {
	events := st.events
	st.events = nil
	if c.op.events == nil {
		return
	}
	for _, e := range events {
		c.op.events.post(u, e.eventType, e.reason, e.message)
	}
}

func (c *controller) warnOnce(u *unstructured.Unstructured, st *objectState, what, message string, log *zap.Logger) {
	log.Warn(message)
	if !st.warned[what] {
		st.warned[what] = true
		c.post(st, corev1.EventTypeWarning, EventStateUnreadable, message)
	}
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
