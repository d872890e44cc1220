package framework

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/o2ims-operator/o2ims-operator/framework/kopf"
)

// Reason is why a handler runs, decided as kopf decides it (causes.go).
type Reason string

const (
	ReasonCreate Reason = "create"
	ReasonResume Reason = "resume"
	ReasonUpdate Reason = "update"
	ReasonDelete Reason = "delete"
	ReasonTimer  Reason = "timer"
)

// HandlerFunc handles one pass: it observes once, fills c.Patch, and returns nil (done), a TemporaryError,
// a PermanentError, or any other error (retried with backoff).
type HandlerFunc func(ctx context.Context, c *Cause) error

// HandlerOption tunes one handler.
type HandlerOption func(*handlerSpec)

// Retries fails the handler permanently once it has been tried n times without success.
func Retries(n int) HandlerOption { return func(h *handlerSpec) { h.retries = n } }

// Timeout fails the handler permanently once d has passed since it first started (kopf's timeout=),
// measured from the persisted "started" time, so a restart grants no fresh budget.
func Timeout(d time.Duration) HandlerOption { return func(h *handlerSpec) { h.timeout = d } }

// CallTimeout bounds one call of the handler (default 60s); a call that exceeds it is an error (retried).
func CallTimeout(d time.Duration) HandlerOption { return func(h *handlerSpec) { h.callTimeout = d } }

// OwnProgressEvents is for handlers that post their own events as their object's state changes: the
// framework then posts no event for a TemporaryError (waiting is their own story) nor for success, only for
// errors and permanent failures. Under a burst client-go's broadcaster drops events beyond its queue, so
// every redundant event costs one that matters.
func OwnProgressEvents() HandlerOption { return func(h *handlerSpec) { h.ownProgress = true } }

type handlerSpec struct {
	ownProgress bool
	// neededWhen makes a delete handler optional except for objects it answers true for (finalizer.go).
	neededWhen HoldsFunc
	// field limits an update handler to changes under this path of the essence (nil = any change).
	field       []string
	id          string
	reason      Reason
	fn          HandlerFunc
	retries     int
	timeout     time.Duration
	callTimeout time.Duration
	// timers only
	interval     time.Duration
	initialDelay time.Duration
}

// Field limits an update handler to changes of one field of the object (kopf's on.update(field=...)):
// Field("spec") is not run when only labels or annotations changed. An update that concerns no handler
// still completes: its diff-base is stored, so the same edit is never looked at again.
func Field(path ...string) HandlerOption {
	if len(path) == 0 {
		panic("framework: Field needs a path")
	}
	return func(h *handlerSpec) { h.field = append([]string(nil), path...) }
}

// concerns tells whether an update from base to ess touches the handler's field.
func (h *handlerSpec) concerns(base, ess map[string]any) bool {
	if h.field == nil {
		return true
	}
	before, _ := fieldAt(base, h.field)
	after, _ := fieldAt(ess, h.field)
	return !kopf.SameEssence(map[string]any{"v": before}, map[string]any{"v": after})
}

func fieldAt(m map[string]any, path []string) (any, bool) {
	var cur any = m
	for _, k := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = mm[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// concerned keeps the handlers an update concerns. A handler already running in this cause stays: the
// change that started it was its own, and dropping it halfway (say, the spec was reverted while it ran)
// would leave its work half done with nothing to finish it.
func concerned(handlers []*handlerSpec, reason Reason, base, ess map[string]any, running map[string]*handlerState) []*handlerSpec {
	if reason != ReasonUpdate {
		return handlers
	}
	out := handlers[:0:0]
	for _, h := range handlers {
		if hs := running[h.id]; (hs != nil && !hs.finished()) || h.concerns(base, ess) {
			out = append(out, h)
		}
	}
	return out
}

// limited handlers persist their progress on every pass: the retry count and start time are what make
// their limits hold across restarts. Others persist only what kopf needs to resume (see pass.go).
func (h *handlerSpec) limited() bool { return h.retries > 0 || h.timeout > 0 }

// MapFunc maps a related object to the keys of the watched objects it concerns.
type MapFunc func(related *unstructured.Unstructured, owners OwnerIndex) []string

// OwnerIndex looks watched objects up by a named index (see Watch.Index; "uid" always exists).
type OwnerIndex interface {
	Keys(index, value string) []string
}

// IndexFunc computes index values of a watched object.
type IndexFunc func(obj *unstructured.Unstructured) []string

type relatedSpec struct {
	gvr       schema.GroupVersionResource
	namespace string
	mapFn     MapFunc
	resume    bool
}

// RelatedOption tunes a related watch.
type RelatedOption func(*relatedSpec)

// Resuming makes a change of the related object run the watched object's resume handlers once more, as
// at start: an object whose handling is finished is looked at again (from the cache; a handler decides
// whether that writes anything), one with a cause pending is handled as usual.
func Resuming() RelatedOption { return func(r *relatedSpec) { r.resume = true } }

// Watch is the registration of handlers for one resource.
type Watch struct {
	gvr        schema.GroupVersionResource
	namespaced bool
	namespace  string
	handlers   map[Reason][]*handlerSpec
	timers     []*handlerSpec
	related    []relatedSpec
	indexers   map[string]IndexFunc
	finalizer  string
	selector   string
	ctrl       atomic.Pointer[controller] // set when the operator builds its controllers (Wake)
}

// WatchOptions tune a Watch.
type WatchOptions struct {
	// Namespaced is true for namespaced resources.
	Namespaced bool
	// Namespace restricts a namespaced watch to one namespace ("" = all).
	Namespace string
	// Finalizer is the name added while delete handlers or timers exist (required then; see NeededWhen for
	// when it is added).
	Finalizer string
	// LabelSelector restricts the watch to matching objects (kopf's labels= filter).
	LabelSelector string
}

// Watch registers a resource to handle.
func (o *Operator) Watch(gvr schema.GroupVersionResource, opts WatchOptions) *Watch {
	w := &Watch{
		gvr: gvr, namespaced: opts.Namespaced, namespace: opts.Namespace,
		handlers: map[Reason][]*handlerSpec{}, indexers: map[string]IndexFunc{},
		finalizer: opts.Finalizer, selector: opts.LabelSelector,
	}
	o.watches = append(o.watches, w)
	return w
}

func (w *Watch) add(reason Reason, id string, fn HandlerFunc, opts []HandlerOption) {
	h := &handlerSpec{id: id, reason: reason, fn: fn, callTimeout: 60 * time.Second}
	for _, o := range opts {
		o(h)
	}
	for _, existing := range w.handlers[reason] {
		if existing.id == id {
			panic(fmt.Sprintf("framework: handler %q registered twice for %s", id, reason))
		}
	}
	w.handlers[reason] = append(w.handlers[reason], h)
}

// OnCreate registers a handler for objects without a diff-base. The id names its progress annotation;
// registering the same function under the same id for create and resume (as kopf does) is the norm.
func (w *Watch) OnCreate(id string, fn HandlerFunc, opts ...HandlerOption) {
	w.add(ReasonCreate, id, fn, opts)
}

// OnResume registers a handler run once per process for objects found at start with no essential change.
func (w *Watch) OnResume(id string, fn HandlerFunc, opts ...HandlerOption) {
	w.add(ReasonResume, id, fn, opts)
}

// OnUpdate registers a handler for essential changes against the diff-base.
func (w *Watch) OnUpdate(id string, fn HandlerFunc, opts ...HandlerOption) {
	w.add(ReasonUpdate, id, fn, opts)
}

// OnDelete registers a handler run while the object is being deleted; the finalizer stays until all delete
// handlers are done. With NeededWhen it is optional for objects that hold nothing only it releases.
func (w *Watch) OnDelete(id string, fn HandlerFunc, opts ...HandlerOption) {
	w.add(ReasonDelete, id, fn, opts)
}

// OnTimer registers a handler run every interval on each live object, first after initialDelay.
func (w *Watch) OnTimer(id string, interval, initialDelay time.Duration, fn HandlerFunc, opts ...HandlerOption) {
	if interval <= 0 {
		panic("framework: timer interval must be positive")
	}
	h := &handlerSpec{id: id, reason: ReasonTimer, fn: fn, interval: interval, initialDelay: initialDelay, callTimeout: 60 * time.Second}
	for _, o := range opts {
		o(h)
	}
	w.timers = append(w.timers, h)
}

// Index adds a named index over watched objects, for related-watch mapping and handler lookups.
func (w *Watch) Index(name string, fn IndexFunc) { w.indexers[name] = fn }

// Related wakes watched objects when objects of another resource change. namespace "" watches all.
func (w *Watch) Related(gvr schema.GroupVersionResource, namespace string, mapFn MapFunc, opts ...RelatedOption) {
	r := relatedSpec{gvr: gvr, namespace: namespace, mapFn: mapFn}
	for _, o := range opts {
		o(&r)
	}
	w.related = append(w.related, r)
}

// Wake wakes one watched object as a related object's change would: its next pass runs now, also a
// handler delayed until later. It is for sources outside the API server (the inventory telling a request
// that a host it waits for came free). Before handling starts it does nothing (handling starts with a
// pass of every object); never blocks.
func (w *Watch) Wake(namespace, name string) {
	c := w.ctrl.Load()
	if c == nil {
		return
	}
	key := name
	if w.namespaced {
		key = namespace + "/" + name
	}
	c.wake(key)
}

// SameName maps a related object to the watched object of the same name (in the related object's
// namespace when the watched resource is namespaced).
func SameName(namespaced bool) MapFunc {
	return func(related *unstructured.Unstructured, _ OwnerIndex) []string {
		if namespaced {
			return []string{related.GetNamespace() + "/" + related.GetName()}
		}
		return []string{related.GetName()}
	}
}

// ByAnnotation maps a related object through one of its annotations looked up in an owner index (e.g. the
// owner's uid in the "uid" index).
func ByAnnotation(annotation, index string) MapFunc {
	return func(related *unstructured.Unstructured, owners OwnerIndex) []string {
		v := related.GetAnnotations()[annotation]
		if v == "" {
			return nil
		}
		return owners.Keys(index, v)
	}
}

// ByLabel is ByAnnotation for a label.
func ByLabel(label, index string) MapFunc {
	return func(related *unstructured.Unstructured, owners OwnerIndex) []string {
		v := related.GetLabels()[label]
		if v == "" {
			return nil
		}
		return owners.Keys(index, v)
	}
}

// ByIndexedName maps a related object by its name looked up in an owner index (e.g. a Cluster named after
// the request's clusterName).
func ByIndexedName(index string) MapFunc {
	return func(related *unstructured.Unstructured, owners OwnerIndex) []string {
		return owners.Keys(index, related.GetName())
	}
}

// Anyof combines mappers.
func AnyOf(fns ...MapFunc) MapFunc {
	return func(related *unstructured.Unstructured, owners OwnerIndex) []string {
		seen := map[string]bool{}
		var out []string
		for _, fn := range fns {
			for _, k := range fn(related, owners) {
				if !seen[k] {
					seen[k] = true
					out = append(out, k)
				}
			}
		}
		return out
	}
}

// ActivityFunc is a startup or cleanup activity.
type ActivityFunc func(ctx context.Context) error

// ProbeFunc answers a liveness probe; an error makes /healthz answer 500.
type ProbeFunc func(ctx context.Context) (any, error)

type activity struct {
	id string
	fn ActivityFunc
}

type probe struct {
	id string
	fn ProbeFunc
}

// OnStartup registers an activity that must succeed before watching starts; a failure stops the operator
// with a non-zero exit and the error as its one-line reason.
func (o *Operator) OnStartup(id string, fn ActivityFunc) {
	o.startup = append(o.startup, activity{id, fn})
}

// OnCleanup registers an activity run after the workers have stopped.
func (o *Operator) OnCleanup(id string, fn ActivityFunc) {
	o.cleanup = append(o.cleanup, activity{id, fn})
}

// OnProbe registers a liveness probe answered under its id on the liveness endpoint.
func (o *Operator) OnProbe(id string, fn ProbeFunc) {
	o.probes = append(o.probes, probe{id, fn})
}

// DegradedFunc says why a part the operator can run without is unusable now ("" while it is usable).
type DegradedFunc func() string

// OnDegraded registers a part the operator runs without while it is unusable: /readyz adds a line
// "degraded: <id>: <why>" while fn says why, and its status stays what readiness alone makes it.
func (o *Operator) OnDegraded(id string, fn DegradedFunc) {
	o.readiness.mu.Lock()
	defer o.readiness.mu.Unlock()
	o.readiness.degraded = append(o.readiness.degraded, degradation{id, fn})
}
