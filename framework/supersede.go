package framework

import (
	"context"
	"net/url"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/framework/kopf"
)

// Superseding held writes. When a resource's client-side limiter (--kube-api-qps/--kube-api-burst) is
// what bounds the operator, a pass's write would wait in the limiter while the world moves on, and then
// write a state that the next pass overwrites at once: each intermediate state costs a token the
// bottleneck cannot spare. Instead, a write that would wait is held: the framework reserves its tokens
// in the resource's bucket (its place in the line, as the wait would have kept it) and frees the worker.
// Until the tokens are due, every pass over the object runs on the object as the held write will leave
// it (the cache with the held patch applied), as if the write had landed, and its own changes are
// composed onto the held patch; when they are due, the composed patch is sent once on those tokens. So
// only the latest state is written, with the message and time of that state, and the metadata changes
// of every pass (progress, diff-base) ride along in the same write.
//
// Why this is safe:
//   - Handlers see the object as if the held write had landed, which is exactly what they would have seen
//     after it: nothing is decided twice, and no handler runs again for a side effect it already had
//     (a create handler that finished is finished in memory and in the held progress).
//   - A patch that changes the finalizers is never held: the finalizer must be on the object before a
//     handler creates anything, and its removal ends the object's story. A held patch is sent with it.
//   - Events wait with the held write and are posted after it, as after any pass's writes; if the object
//     disappears first, they are posted all the same (none is lost).
//   - Losing a held write (a restart, a lost lease) loses nothing that must survive: it is the same as
//     losing a pass just before its write, which kopf's resume rule and idempotent handlers cover.

// prepaidLimiter is a resource's client-side token bucket, the one client-go would build from QPS and
// Burst, whose Wait lets a request through at once when its context carries tokens the framework took
// ahead for it (a held write's reservation), so that a held write never pays twice.
type prepaidLimiter struct {
	lim *rate.Limiter
	qps float32
}

func newPrepaidLimiter(qps float32, burst int) *prepaidLimiter {
	return &prepaidLimiter{lim: rate.NewLimiter(rate.Limit(qps), burst), qps: qps}
}

type prepaidKey struct{}

// prepaid counts the tokens reserved ahead for the requests sent with one context.
type prepaid struct{ n atomic.Int32 }

func withPrepaid(ctx context.Context, n int) context.Context {
	if n <= 0 {
		return ctx
	}
	p := &prepaid{}
	p.n.Store(int32(n))
	return context.WithValue(ctx, prepaidKey{}, p)
}

func (l *prepaidLimiter) Wait(ctx context.Context) error {
	if p, ok := ctx.Value(prepaidKey{}).(*prepaid); ok && p.n.Add(-1) >= 0 {
		return nil
	}
	return l.lim.Wait(ctx)
}

func (l *prepaidLimiter) TryAccept() bool { return l.lim.Allow() }
func (l *prepaidLimiter) Accept()         { _ = l.lim.Wait(context.Background()) }
func (l *prepaidLimiter) Stop()           {}
func (l *prepaidLimiter) QPS() float32    { return l.qps }

// heldWrite is a pass's write waiting for its tokens, with the changes of the passes since composed in.
type heldWrite struct {
	patch  *Patch
	tokens int
	res    []*rate.Reservation
	due    time.Time                  // when the reserved tokens are ours (the limiter's clock: real time)
	since  time.Time                  // when it was first held
	cached *unstructured.Unstructured // the latest object seen, for its events if it disappears first
}

// cancel gives the reserved tokens back (the held write will not be sent on them).
func (h *heldWrite) cancel() {
	for _, r := range h.res {
		r.Cancel()
	}
}

// limiterFor is the watched resource's limiter when the framework can hold writes for it: the clients are
// NewClients' and the resource has a client-side limit.
func (c *controller) limiterFor() *prepaidLimiter {
	pr, ok := c.op.clients.Dynamic.(*perResource)
	if !ok {
		return nil
	}
	return pr.limiter(c.w.gvr.GroupResource())
}

// onHeld is the object a pass runs on while a write is held: the cached one as the held write will leave it.
func onHeld(cached *unstructured.Unstructured, p *Patch) *unstructured.Unstructured {
	u := afterStatus(cached, p).DeepCopy()
	ann := u.GetAnnotations()
	for k, v := range p.Annotations {
		setOrDelete(&ann, k, v)
	}
	u.SetAnnotations(ann)
	labels := u.GetLabels()
	for k, v := range p.Labels {
		setOrDelete(&labels, k, v)
	}
	u.SetLabels(labels)
	return u
}

func setOrDelete(m *map[string]string, k string, v *string) {
	if v == nil {
		delete(*m, k)
		return
	}
	if *m == nil {
		*m = map[string]string{}
	}
	(*m)[k] = *v
}

// then composes two patches of one object: the result applied once leaves it as p then next would. Status
// maps merge key by key (a later value wins, a later nil deletes); so do labels and annotations; the
// finalizer list is the later one's when it sets one.
func (p *Patch) then(next *Patch) *Patch {
	out := &Patch{Status: composeMerge(kopf.DeepCopyJSON(p.Status), next.Status).(map[string]any),
		Labels: map[string]*string{}, Annotations: map[string]*string{},
		finalizers: p.finalizers, finalizerRides: p.finalizerRides}
	for _, m := range []struct{ into, a, b map[string]*string }{
		{out.Labels, p.Labels, next.Labels}, {out.Annotations, p.Annotations, next.Annotations}} {
		for k, v := range m.a {
			m.into[k] = v
		}
		for k, v := range m.b {
			m.into[k] = v
		}
	}
	if next.finalizers != nil {
		out.finalizers, out.finalizerRides = next.finalizers, next.finalizerRides
	}
	return out
}

// composeMerge folds the merge patch b into the merge patch a: unlike applying it (mergeInto), a nil of b
// stays a nil (it must still delete on the server). One case merge patches cannot express is kept
// approximate: a key a deletes and b sets to a map keeps the server's other keys of that map.
func composeMerge(a, b any) any {
	bm, ok := b.(map[string]any)
	if !ok {
		return kopf.DeepCopyJSON(b)
	}
	am, ok := a.(map[string]any)
	if !ok {
		am = map[string]any{}
	}
	for k, v := range bm {
		if v == nil {
			am[k] = nil
			continue
		}
		am[k] = composeMerge(am[k], v)
	}
	return am
}

// absorbHeld composes the held write's patch before this pass's own, once per pass: from then on the
// pass's patch is everything the write will carry.
func (p *pass) absorbHeld() {
	if p.absorbed || p.own.held == nil {
		return
	}
	p.absorbed = true
	p.patch = p.own.held.patch.then(p.patch)
}

// hold decides whether the pass's write (writes bodies) waits as a held write: true with how long until
// its tokens are due. false means send now, on the context answered (which carries any tokens reserved).
func (p *pass) hold(writes int) (ctx context.Context, wait time.Duration, held bool) {
	lim, h := p.c.limiterFor(), p.own.held
	if lim == nil || p.patch.finalizers != nil {
		// Not holdable: a reservation of an earlier pass is given back, the write waits in the limiter.
		p.dropHeld()
		return p.ctx, 0, false
	}
	now := time.Now()
	if h == nil {
		h = &heldWrite{}
	}
	if more := writes - h.tokens; more > 0 {
		r := lim.lim.ReserveN(now, more)
		if !r.OK() { // more than the burst: nothing to reserve, wait as any request does
			p.dropHeld()
			return p.ctx, 0, false
		}
		h.res, h.tokens = append(h.res, r), writes
		if due := now.Add(r.DelayFrom(now)); due.After(h.due) {
			h.due = due
		}
	}
	if wait := h.due.Sub(now); wait > 0 {
		if h.since.IsZero() {
			h.since = now
		}
		h.patch, h.cached = p.patch, p.cached
		p.own.held = h
		return nil, wait, true
	}
	if !h.since.IsZero() {
		p.c.observeHeld(now.Sub(h.since))
	}
	p.own.held = nil
	return withPrepaid(p.ctx, h.tokens), 0, false
}

// observeHeld counts a held write's wait as time in the client-side limiter
// (rest_client_rate_limiter_duration_seconds), where it would have been spent without holding: the
// O2IMSKubeAPIRateLimited alert reads it. The request's own pass through the limiter adds ~0.
func (c *controller) observeHeld(wait time.Duration) {
	host := ""
	if cfg := c.op.clients.Config; cfg != nil {
		if u, err := url.Parse(cfg.Host); err == nil {
			host = u.Host
		}
	}
	restRateLimiter.WithLabelValues("PATCH", host).Observe(wait.Seconds())
}

// dropHeld gives a held write's reservation back; its changes are in the pass's patch (absorbHeld).
func (p *pass) dropHeld() {
	if h := p.own.held; h != nil {
		h.cancel()
		p.own.held = nil
	}
}

// settleHeld sends a held write that has come due on a pass that wrote nothing itself (it ended before
// its writes, e.g. a handler asleep until its delay), and otherwise brings the object back when it does.
func (p *pass) settleHeld(res passResult) passResult {
	h := p.own.held
	if h == nil {
		return res
	}
	if wait := time.Until(h.due); wait > 0 {
		return p.notBefore(res, wait)
	}
	applied, ok := p.apply()
	if !ok {
		return applied
	}
	return p.notBefore(res, applied.after)
}

// notBefore brings the object back within wait (a held write's tokens), whatever else res asks.
func (p *pass) notBefore(res passResult, wait time.Duration) passResult {
	if wait > 0 && !res.now && !res.backoff {
		res.after = soonest(res.after, wait)
	}
	return res
}

// forgetHeld is the end of an object that vanished with a write held: its tokens go back and its events
// are still posted (about the last object seen).
func (c *controller) forgetHeld(st *objectState) {
	h := st.own.held
	if h == nil {
		return
	}
	h.cancel()
	st.own.held = nil
	events := st.own.events
	st.own.events = nil
	if c.op.events == nil {
		return
	}
	for _, e := range events {
		c.op.events.post(h.cached, e.eventType, e.reason, e.message)
	}
}
