package framework

import (
	"context"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/o2ims-operator/o2ims-operator/framework/kopf"
	"github.com/o2ims-operator/o2ims-operator/internal/backoff"
)

// controller drives one watched resource: its informer feeds a rate-limited queue of object keys, and
// workers run one pass per key at a time (the queue never hands one key to two workers).
type controller struct {
	op       *Operator
	w        *Watch
	resource string
	informer cache.SharedIndexInformer
	queue    workqueue.TypedRateLimitingInterface[string]
	client   dynamic.NamespaceableResourceInterface
	namer    kopf.Namer
	keys     *kopf.KeyCache
	log      *zap.Logger

	mu sync.Mutex
	// handling is set once this process handles objects (leading, or without leader election). Until
	// then events are not remembered or queued — a standby replica keeps only the informer's cache (for
	// the NBI), no state or queue entry per object — and run queues every cached object when it starts.
	handling bool
	objects  map[string]*objectState
}

// objectState is what the process remembers about one object between passes. Losing it (a restart) is
// safe: it only avoids redundant passes and writes; everything that must survive is on the object.
// It has two owners, kept apart so each field's locking rule is visible where it is used.
type objectState struct {
	shared sharedState // under controller.mu
	own    workerState // owned by the worker running the object's pass; no lock
}

// sharedState is written by the informer's event handlers as well as by passes: every access holds
// controller.mu.
type sharedState struct {
	uid types.UID
	// initial: seen in the initial listing and not yet fully handled once (kopf's resume rule).
	initial bool
	// recheck: a Resuming related object changed; the resume handlers run once more when no other cause
	// is pending (unlike initial, they never ride along an update).
	recheck bool
	// ownRVs are resourceVersions of our own writes whose watch events have not arrived yet; those events
	// are echoes and do not wake handlers.
	ownRVs map[string]struct{}
	// waitRV: a pass must not act on a cache older than our last write to the object.
	waitRV    string
	waitSince time.Time
	parked    bool
	// staleRV: a write of ours on this version was refused as stale (409); passes wait for a newer one.
	staleRV    string
	staleSince time.Time
	// changedAt is the last external change (of the object or a related one); it wakes delayed handlers.
	changedAt time.Time
	// changedRV is the version whose update event set changedAt, and changedBefore what changedAt was
	// until then: when that event turns out to be the echo of our own write (it arrived before the
	// write's answer), wrote takes the change back, so it wakes no handler.
	changedRV     string
	changedBefore time.Time
}

// changed records an external change at now; rv is the object's version when an update event says so.
func (st *sharedState) changed(now time.Time, rv string) {
	st.changedRV, st.changedBefore = rv, st.changedAt
	st.changedAt = now
}

// workerState is touched only by the pass over the object. The queue never hands one key to two
// workers, so one pass at a time owns it and needs no lock.
type workerState struct {
	cause      Reason
	handlers   map[string]*handlerState
	delaySetAt map[string]time.Time
	lastRetry  map[string]string
	timers     map[string]*timerState
	warned     map[string]bool
	events     []pendingEvent
	// yielded is the status progress that yielded, to try again, held back since yieldedSince (yield.go).
	yielded      map[string]any
	yieldedSince time.Time
	// baseRaw/base cache the parsed diff-base while its annotation is unchanged.
	baseRaw string
	base    map[string]any
}

func newController(op *Operator, w *Watch, informer cache.SharedIndexInformer) *controller {
	name := w.gvr.Resource
	if w.gvr.Group != "" {
		name += "." + w.gvr.Group
	}
	rl := workqueue.NewTypedItemExponentialFailureRateLimiter[string](op.opts.BackoffBase, op.opts.BackoffMax)
	c := &controller{
		op:       op,
		w:        w,
		resource: name,
		informer: informer,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig[string](rl, workqueue.TypedRateLimitingQueueConfig[string]{
			Name: name, MetricsProvider: op.metrics.workqueue, Clock: op.opts.Clock,
		}),
		client:  op.clients.Dynamic.Resource(w.gvr),
		namer:   kopf.Namer{Prefix: op.opts.Prefix},
		keys:    &kopf.KeyCache{Namer: kopf.Namer{Prefix: op.opts.Prefix}},
		log:     op.log.With(zap.String("resource", name)),
		objects: map[string]*objectState{},
	}
	op.metrics.initWatch(name, w)
	return c
}

func (c *controller) eventHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, isInInitialList bool) {
			key, u := c.keyOf(obj)
			if key == "" {
				return
			}
			c.mu.Lock()
			if !c.handling {
				c.mu.Unlock()
				return
			}
			st := &c.stateLocked(key, u.GetUID()).shared
			if isInInitialList {
				st.initial = true
			}
			st.changed(c.op.opts.Clock.Now(), "")
			c.mu.Unlock()
			c.queue.Add(key)
		},
		UpdateFunc: func(_, newObj any) {
			key, u := c.keyOf(newObj)
			if key == "" || !c.isHandling() {
				return
			}
			if c.observe(key, u) {
				c.queue.Add(key)
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			key, _ := c.keyOf(obj)
			if key != "" && c.isHandling() {
				c.queue.Add(key)
			}
		},
	}
}

// observe records an update event and says whether it should wake the object. Echoes of our own writes
// do not, unless a pass is parked waiting for exactly that freshness.
func (c *controller) observe(key string, u *unstructured.Unstructured) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := &c.stateLocked(key, u.GetUID()).shared
	rv := u.GetResourceVersion()
	_, own := st.ownRVs[rv]
	for r := range st.ownRVs {
		// Events come in order: a write of ours at or before this version has had its event.
		if rvReached(rv, r) {
			delete(st.ownRVs, r)
		}
	}
	if own {
		if st.parked && rvReached(rv, st.waitRV) {
			st.parked = false
			return true
		}
		return false
	}
	st.changed(c.op.opts.Clock.Now(), rv)
	return true
}

func (c *controller) keyOf(obj any) (string, *unstructured.Unstructured) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return "", nil
	}
	key, err := cache.MetaNamespaceKeyFunc(u)
	if err != nil {
		return "", nil
	}
	return key, u
}

// stateLocked returns the object's state, starting afresh when the uid changed (deleted and re-created
// under the same name). c.mu must be held.
func (c *controller) stateLocked(key string, uid types.UID) *objectState {
	st := c.objects[key]
	if st == nil || (uid != "" && st.shared.uid != "" && st.shared.uid != uid) {
		st = &objectState{
			shared: sharedState{uid: uid, ownRVs: map[string]struct{}{}},
			own: workerState{
				handlers: map[string]*handlerState{}, delaySetAt: map[string]time.Time{}, lastRetry: map[string]string{},
				timers: map[string]*timerState{}, warned: map[string]bool{},
			},
		}
		c.objects[key] = st
	}
	if st.shared.uid == "" {
		st.shared.uid = uid
	}
	return st
}

func (c *controller) forget(key string) {
	c.mu.Lock()
	delete(c.objects, key)
	c.mu.Unlock()
}

// wake marks an external change (e.g. of a related object) and enqueues the key; resume: the object's
// resume handlers run once more (Resuming).
func (c *controller) wake(key string, resume ...bool) {
	c.mu.Lock()
	handling := c.handling
	if st, ok := c.objects[key]; ok {
		st.shared.changed(c.op.opts.Clock.Now(), "")
		if len(resume) > 0 && resume[0] {
			st.shared.recheck = true
		}
	}
	c.mu.Unlock()
	if handling {
		c.queue.Add(key)
	}
}

func (c *controller) isHandling() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.handling
}

// startHandling queues every cached object, each found at the start of handling: kopf's resume rule
// applies to what this process finds when it starts handling, whether that is at its start or when
// it wins the lease later. Events from here on are remembered and queued as they come.
func (c *controller) startHandling() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.handling = true
	now := c.op.opts.Clock.Now()
	for _, obj := range c.informer.GetIndexer().List() {
		key, u := c.keyOf(obj)
		if key == "" {
			continue
		}
		st := &c.stateLocked(key, u.GetUID()).shared
		st.initial = true
		st.changed(now, "")
		c.queue.Add(key)
	}
}

// wrote remembers the resourceVersion of our own write, unless the cache already holds it (its event won
// the race against our HTTP response).
func (c *controller) wrote(key string, w written) {
	rv := w.ResourceVersion
	if rv == "" {
		return
	}
	cachedRV := ""
	if obj, exists, _ := c.informer.GetIndexer().GetByKey(key); exists {
		if cu, ok := obj.(*unstructured.Unstructured); ok {
			cachedRV = cu.GetResourceVersion()
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := &c.stateLocked(key, w.UID).shared
	if cachedRV != "" && rvReached(cachedRV, rv) {
		switch {
		case st.changedRV == rv:
			// The "change" observe recorded was this write's echo, and nothing changed after it.
			st.changedAt, st.changedRV = st.changedBefore, ""
		case cachedRV == rv:
			// The informer stores an object before it tells the handlers: the echo may not have been
			// observed yet, and is ours when it is (observe drops what no event will match).
			st.ownRVs[rv] = struct{}{}
		}
		return
	}
	st.ownRVs[rv] = struct{}{}
	st.waitRV, st.waitSince = rv, c.op.opts.Clock.Now()
}

// fresh is the freshness gate: a pass must not decide on a cache older than our own last write to the
// object. While it is older, fresh answers false and the key is parked until the echo arrives (observe
// wakes it) or FreshnessTimeout passes.
func (c *controller) fresh(key string, cached *unstructured.Unstructured, now time.Time, log *zap.Logger) (*objectState, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.stateLocked(key, cached.GetUID())
	sh := &st.shared
	if sh.staleRV != "" {
		// Our write on this version was refused (409): decide again only on a newer object.
		if !rvPassed(cached.GetResourceVersion(), sh.staleRV) && now.Sub(sh.staleSince) < c.op.opts.FreshnessTimeout {
			return st, false
		}
		sh.staleRV = ""
	}
	if sh.waitRV == "" {
		return st, true
	}
	switch {
	case rvReached(cached.GetResourceVersion(), sh.waitRV):
		sh.waitRV, sh.parked = "", false
	case now.Sub(sh.waitSince) < c.op.opts.FreshnessTimeout:
		sh.parked = true
		return st, false
	default:
		log.Warn("own write never appeared in the cache; proceeding", zap.String("resourceVersion", sh.waitRV))
		sh.waitRV, sh.parked = "", false
	}
	return st, true
}

// rvReached compares resourceVersions. They are opaque by contract but etcd-backed servers issue
// increasing integers, which lets a relist that skipped our exact version still count as fresh; anything
// non-numeric falls back to equality.
func rvReached(have, want string) bool {
	if want == "" {
		return true
	}
	h, err1 := strconv.ParseUint(have, 10, 64)
	w, err2 := strconv.ParseUint(want, 10, 64)
	if err1 != nil || err2 != nil {
		return have == want
	}
	return h >= w
}

// rvPassed reports whether have is newer than stale (rvReached's reading of resourceVersions).
func rvPassed(have, stale string) bool {
	h, err1 := strconv.ParseUint(have, 10, 64)
	s, err2 := strconv.ParseUint(stale, 10, 64)
	if err1 != nil || err2 != nil {
		return have != stale
	}
	return h > s
}

// refused remembers that a write of ours on resourceVersion rv was refused as stale: the next pass
// waits until the cache holds a newer object (fresh), for FreshnessTimeout at most.
func (c *controller) refused(key, rv string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.objects[key]; ok && rv != "" {
		st.shared.staleRV, st.shared.staleSince = rv, c.op.opts.Clock.Now()
	}
}

func (c *controller) run(ctx context.Context, workers int, wg *sync.WaitGroup) {
	c.startHandling()
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c.processNext(ctx) {
			}
		}()
	}
}

func (c *controller) processNext(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	if !c.op.mayAct() {
		// The lease fence lapsed: no pass starts (the operator is stopping; the next leader handles it).
		c.op.metrics.Fenced.WithLabelValues("pass").Inc()
		c.queue.Forget(key)
		return true
	}
	res := c.sync(ctx, key)
	switch {
	case res.backoff:
		c.queue.AddRateLimited(key)
	case res.now:
		c.queue.Forget(key)
		c.queue.Add(key)
	case res.after > 0:
		c.queue.Forget(key)
		c.queue.AddAfter(key, res.after)
	default:
		c.queue.Forget(key)
	}
	return true
}

// backoffFor predicts the delay AddRateLimited will apply (for the progress record's "delayed"): the
// workqueue's exponential limiter waits BackoffBase·2ⁿ after n requeues, capped at BackoffMax.
func (c *controller) backoffFor(key string) time.Duration {
	return backoff.Exponential{Base: c.op.opts.BackoffBase, Max: c.op.opts.BackoffMax}.Delay(c.queue.NumRequeues(key))
}

// relatedHandler wakes owners when a related object changes.
func (c *controller) relatedHandler(r relatedSpec) cache.ResourceEventHandler {
	owners := c.op.cache.owners(c.w.gvr, c.informer)
	wake := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		for _, key := range r.mapFn(u, owners) {
			c.wake(key, r.resume)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    wake,
		UpdateFunc: func(_, n any) { wake(n) },
		DeleteFunc: wake,
	}
}

func gvrString(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Version + "/" + gvr.Resource
	}
	return gvr.Group + "/" + gvr.Version + "/" + gvr.Resource
}
