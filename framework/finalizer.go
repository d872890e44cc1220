package framework

import (
	"context"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/framework/kopf"
)

// HoldsFunc tells whether an object holds something that only its delete handler can release (a claim in
// an external inventory, an object without an ownerReference the garbage collector could follow). It is
// called on the cached object, and on the object as the pass's status patch leaves it; it must be cheap
// and read nothing but the object and the caches.
type HoldsFunc func(obj *unstructured.Unstructured, cache *Cache) bool

// NeededWhen makes a delete handler optional (kopf's on.delete(optional=True)) for objects that hold
// nothing it alone can release: what they hold is removed by the garbage collector through
// ownerReferences, so deleting them needs no finalizer and no pass. The finalizer is added:
//   - in a pass of its own, before any handler runs, when holds answers true for the cached object (the
//     safety net: a handler never acquires more while the finalizer is missing);
//   - with the pass's own writes, when holds answers true for the object as the pass's status patch
//     leaves it (a handler just recorded what it is about to acquire, e.g. a host it will claim next);
//   - riding along any write of the object's metadata the pass makes anyway (the diff-base once the
//     create cause is done), where it costs no request: a handled object is then cleaned up by its delete
//     handler as before, and only an object deleted mid-create goes at once.
//
// A finalizer already on the object stays until the delete handlers are done.
func NeededWhen(holds HoldsFunc) HandlerOption {
	return func(h *handlerSpec) { h.neededWhen = holds }
}

// requiresFinalizer is kopf's rule: a timer or a non-optional delete handler needs the finalizer on every
// object, before any handler runs.
func (w *Watch) requiresFinalizer() bool {
	if len(w.timers) > 0 {
		return true
	}
	for _, h := range w.handlers[ReasonDelete] {
		if h.neededWhen == nil {
			return true
		}
	}
	return false
}

// usesFinalizer: some handler may need the finalizer on some object.
func (w *Watch) usesFinalizer() bool {
	return len(w.timers) > 0 || len(w.handlers[ReasonDelete]) > 0
}

// holds asks the optional delete handlers whether the object holds something only they release.
func (w *Watch) holds(u *unstructured.Unstructured, cache *Cache) bool {
	for _, h := range w.handlers[ReasonDelete] {
		if h.neededWhen != nil && h.neededWhen(u, cache) {
			return true
		}
	}
	return false
}

// finalizerStep is what a live object's finalizer needs before any handler runs.
type finalizerStep int

const (
	finalizerKeep   finalizerStep = iota // nothing to do now
	finalizerAdd                         // add it in a pass of its own, then run handlers
	finalizerRemove                      // no handler needs it any more: remove it with the pass's writes
)

func (c *controller) finalizerBefore(u *unstructured.Unstructured, has bool) finalizerStep {
	w := c.w
	switch {
	case w.finalizer == "":
		return finalizerKeep
	case !has && (w.requiresFinalizer() || w.holds(u, c.op.cache)):
		return finalizerAdd
	case has && !w.usesFinalizer():
		return finalizerRemove
	default:
		return finalizerKeep
	}
}

// rideFinalizer adds the finalizer of an optional delete handler to the pass's writes when the pass
// writes the object's metadata anyway, or when what the pass records makes the object hold something.
func (c *controller) rideFinalizer(u *unstructured.Unstructured, p *Patch) {
	w := c.w
	if w.finalizer == "" || !w.usesFinalizer() || u.GetDeletionTimestamp() != nil || p.finalizers != nil ||
		slices.Contains(u.GetFinalizers(), w.finalizer) {
		return
	}
	writes := p.metadataPatch(u) != nil
	needed := w.holds(afterStatus(u, p), c.op.cache)
	if !writes && !needed {
		return
	}
	p.finalizers = append(append([]string{}, u.GetFinalizers()...), w.finalizer)
	p.finalizerRides = !needed
}

// patchObject sends the object's merge patch. A finalizer change carries the cached resourceVersion, so a
// concurrent change of the object fails it with a conflict; when the finalizer only rode along (nothing
// needs it yet), that conflict must not cost the pass's other changes: they are sent again without it, as
// they would have been without the ride (the diff-base computed from the object this pass handled, so a
// spec change that raced it is seen as an update next pass, not folded into a re-run create).
func (c *controller) patchObject(ctx context.Context, u *unstructured.Unstructured, p *Patch, body []byte) (written, error) {
	out, err := c.mergePatch(ctx, u, body)
	if err == nil || !p.finalizerRides || !apierrors.IsConflict(err) {
		return out, err
	}
	p.finalizers, p.finalizerRides = nil, false
	if body = p.metadataPatch(u); body == nil {
		return written{}, err
	}
	return c.mergePatch(ctx, u, body)
}

// afterStatus is the object as the pass's status patch will leave it.
func afterStatus(u *unstructured.Unstructured, p *Patch) *unstructured.Unstructured {
	if len(p.Status) == 0 {
		return u
	}
	out := &unstructured.Unstructured{Object: make(map[string]any, len(u.Object))}
	for k, v := range u.Object {
		out.Object[k] = v
	}
	current, _ := u.Object["status"].(map[string]any)
	out.Object["status"] = mergeInto(kopf.DeepCopyJSON(current), normalizeJSON(p.Status))
	return out
}
