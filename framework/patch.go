package framework

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/o2ims-operator/o2ims-operator/framework/kopf"
)

// Patch collects what one pass wants changed on the object. Handlers fill it; the framework turns it into at
// most one JSON merge patch on the object (labels, annotations, finalizers) and one on /status, and sends
// neither when it would change nothing.
type Patch struct {
	// Status is a JSON merge patch (RFC 7386) for the status subresource: nested maps merge, a nil value
	// deletes the key.
	Status map[string]any
	// Labels and Annotations: a value sets the key, nil deletes it.
	Labels      map[string]*string
	Annotations map[string]*string

	// progress: the top-level status keys set only by SetProgress (true) or by SetStatus too (false).
	progress map[string]bool
	// finalizers, when non-nil, is the complete desired finalizer list (framework only).
	finalizers []string
	// finalizerRides: the finalizer was added only because the object is written anyway (finalizer.go).
	finalizerRides bool
}

func newPatch() *Patch {
	return &Patch{Status: map[string]any{}, Labels: map[string]*string{}, Annotations: map[string]*string{}}
}

// SetStatus sets one status field at a path, creating the intermediate maps: SetStatus(v, "a", "b") patches
// status.a.b = v and leaves a's other keys alone.
func (p *Patch) SetStatus(value any, path ...string) {
	if len(path) == 0 {
		return
	}
	p.markStatus(path[0], false)
	p.set(value, path)
}

// SetProgress is SetStatus for a field that only reports progress (a message while the state stays the
// same): a status write made only of such fields yields when the resource's client-side bucket has no
// token free or a round of passes waits for a worker, and is tried again, newest value first (yield.go).
func (p *Patch) SetProgress(value any, path ...string) {
	if len(path) == 0 {
		return
	}
	p.markStatus(path[0], true)
	p.set(value, path)
}

// markStatus records how a top-level status key was set: once by SetStatus, it never yields.
func (p *Patch) markStatus(key string, progress bool) {
	if p.progress == nil {
		p.progress = map[string]bool{}
	}
	if prev, set := p.progress[key]; set && !prev {
		return
	}
	p.progress[key] = progress
}

// onlyProgress says whether every status field of the patch was set by SetProgress (a key written into
// Status directly counts as state).
func (p *Patch) onlyProgress() bool {
	for k := range p.Status {
		if !p.progress[k] {
			return false
		}
	}
	return len(p.Status) > 0
}

func (p *Patch) set(value any, path []string) {
	m := p.Status
	for _, f := range path[:len(path)-1] {
		next, ok := m[f].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[f] = next
		}
		m = next
	}
	m[path[len(path)-1]] = value
}

// SetAnnotation sets an annotation; DeleteAnnotation removes one.
func (p *Patch) SetAnnotation(key, value string) { p.Annotations[key] = &value }

// DeleteAnnotation removes an annotation.
func (p *Patch) DeleteAnnotation(key string) { p.Annotations[key] = nil }

// mergeInto applies an RFC 7386 merge patch to target in place and returns the result.
func mergeInto(target any, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return kopf.DeepCopyJSON(patch)
	}
	tm, ok := target.(map[string]any)
	if !ok {
		tm = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(tm, k)
			continue
		}
		tm[k] = mergeInto(tm[k], v)
	}
	return tm
}

// statusPatch returns the /status merge patch body, or nil when applying it would change nothing. It
// carries the resourceVersion the pass read (fence.go): the API server takes a merge patch's
// metadata.resourceVersion as a precondition and does not retry it, so a status decided on an object
// someone has changed since (a new leader, a user, the NBI) is refused with 409 Conflict, never merged,
// and the pass runs again on the newer object (writeFailed). Nothing of it is stored.
func (p *Patch) statusPatch(obj *unstructured.Unstructured) []byte {
	if len(p.Status) == 0 {
		return nil
	}
	current, _ := obj.Object["status"].(map[string]any)
	desired := mergeInto(kopf.DeepCopyJSON(current), normalizeJSON(p.Status))
	if current == nil {
		current = map[string]any{}
	}
	if reflect.DeepEqual(normalizeJSON(current), normalizeJSON(desired)) {
		return nil
	}
	patch := map[string]any{"status": p.Status}
	if rv := obj.GetResourceVersion(); rv != "" {
		patch["metadata"] = map[string]any{"resourceVersion": rv}
	}
	body, _ := json.Marshal(patch)
	return body
}

// metadataPatch returns the object's merge patch body, or nil when it would change nothing. Only keys
// that change are sent. A finalizer change carries the cached resourceVersion, so a concurrent change to
// the list (another controller's finalizer) fails with a conflict instead of being overwritten.
func (p *Patch) metadataPatch(obj *unstructured.Unstructured) []byte {
	meta := map[string]any{}
	if m := changedStrings(obj.GetAnnotations(), p.Annotations); m != nil {
		meta["annotations"] = m
	}
	if m := changedStrings(obj.GetLabels(), p.Labels); m != nil {
		meta["labels"] = m
	}
	if p.finalizers != nil && !slices.Equal(obj.GetFinalizers(), p.finalizers) {
		meta["finalizers"] = p.finalizers
		meta["resourceVersion"] = obj.GetResourceVersion()
	}
	if len(meta) == 0 {
		return nil
	}
	body, _ := json.Marshal(map[string]any{"metadata": meta})
	return body
}

func changedStrings(current map[string]string, want map[string]*string) map[string]any {
	out := map[string]any{}
	for k, v := range want {
		cur, present := current[k]
		switch {
		case v == nil && present:
			out[k] = nil
		case v != nil && (!present || cur != *v):
			out[k] = *v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// apply sends the pass's status patch, then its object patch; each only when it changes something. Status
// goes first: a handler's business status must land before its completion is recorded. ok is false when a
// write failed; res then says when to come back. Neither is sent once the lease fence lapsed (fence.go).
//
// A status write that only reports progress may yield to a busy bucket or queue (yield.go): then res says
// when to come back and try it again.
func (p *pass) apply() (res passResult, ok bool) {
	c, u := p.c, p.obj
	p.own.restoreYielded(p.patch)
	if body := p.patch.statusPatch(u); body != nil {
		if !c.op.mayAct() {
			return p.writeFailed("status", c.op.fenced("status", "patch status of "+p.key)), false
		}
		if ctx, yielded, after := p.yield(); yielded {
			res.after = after
		} else {
			out, err := c.mergePatch(ctx, u, body, "status")
			if err != nil {
				p.own.keepYielded(p.patch)
				return p.writeFailed("status", err), false
			}
			p.own.statusWritten()
			c.op.metrics.Writes.WithLabelValues(c.resource, "status").Inc()
			c.wrote(p.key, out)
			u.SetResourceVersion(out.ResourceVersion)
		}
	}
	if body := p.patch.metadataPatch(u); body != nil {
		if !c.op.mayAct() {
			return p.writeFailed("object", c.op.fenced("object", "patch object of "+p.key)), false
		}
		out, err := c.patchObject(p.ctx, u, p.patch, body)
		if err != nil {
			return p.writeFailed("object", err), false
		}
		c.op.metrics.Writes.WithLabelValues(c.resource, "object").Inc()
		c.wrote(p.key, out)
	}
	return res, true
}

func (p *pass) writeFailed(what string, err error) passResult {
	err = ClassifyAPIError("patch "+what+" of "+p.key, true, err)
	switch {
	case IsClass(err, ClassNotFound):
		// Gone while we worked; the delete event finishes the story.
		return passResult{}
	case IsClass(err, ClassFenced):
		// This replica may no longer lead: nothing of the pass is sent, its events neither (they would
		// describe an outcome nobody recorded); the next leader decides again from the object.
		p.log.Info("the lease fence lapsed: the pass's writes and events are not sent", zap.String("write", what))
		p.own.events = nil
		p.forgetPass()
		return passResult{}
	case IsClass(err, ClassConflict):
		// The object changed since the pass read it (its status write is fenced by the resourceVersion;
		// a finalizer change too): nothing of this write was merged. What the pass decided in memory is
		// forgotten and it runs again on the newer object, once the cache holds it.
		p.log.Info("object changed during the pass; running it again", zap.Error(err))
		p.own.events = nil
		p.forgetPass()
		p.c.refused(p.key, p.obj.GetResourceVersion())
		return passResult{after: 100 * time.Millisecond}
	default:
		p.log.Warn("writing the pass's result failed", zap.Error(err))
		return passResult{backoff: true}
	}
}

// mergePatch sends a JSON merge patch of u (or of its subresource) and answers what it wrote: through
// the identity-only path when the clients are NewClients' (codec.go), else (a fake) the dynamic client.
func (c *controller) mergePatch(ctx context.Context, u *unstructured.Unstructured, body []byte, sub ...string) (written, error) {
	ns := ""
	if c.w.namespaced {
		ns = u.GetNamespace()
	}
	if pr, ok := c.op.clients.Dynamic.(*perResource); ok {
		return pr.patchIdentity(ctx, c.w.gvr, ns, u.GetName(), body, sub...)
	}
	ri := dynamic.ResourceInterface(c.client)
	if c.w.namespaced {
		ri = c.client.Namespace(ns)
	}
	out, err := ri.Patch(ctx, u.GetName(), types.MergePatchType, body, metav1.PatchOptions{}, sub...)
	if err != nil {
		return written{}, err
	}
	return writtenOf(out), nil
}
