package world

import (
	"context"
	"encoding/json"
	"reflect"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/o2ims-operator/o2ims-operator/api/external"
)

const (
	porchFinalizer = "config.porch.kpt.dev/packagevariants"
	// AnnotationTemplate records on a Cluster which template it was rendered from (CAPI's misbehaviour
	// switches key on it).
	AnnotationTemplate = "world.o2ims.io/template"
)

// porch plays Porch's PackageVariant controller: it reports Stalled/Ready conditions as v1.5.8 does, and
// stands in for the GitOps apply of the rendered package by creating the package's Cluster.
type porch struct {
	w        *World
	mu       sync.Mutex
	deleting map[string]time.Time
}

func (p *porch) reconcile(ctx context.Context, pv *unstructured.Unstructured, first time.Time) (time.Duration, error) {
	o := p.w.opts
	dyn := o.Dynamic.Resource(external.PackageVariantGVR).Namespace(pv.GetNamespace())
	if pv.GetDeletionTimestamp() != nil {
		return p.w.releaseFinalizer(ctx, dyn, pv, porchFinalizer, &p.mu, &p.deleting)
	}
	if o.PorchFinalizer && !hasFinalizer(pv, porchFinalizer) {
		return 0, addFinalizer(ctx, dyn, pv, porchFinalizer)
	}
	template, _, _ := unstructured.NestedString(pv.Object, "spec", "upstream", "package")
	downstream, _, _ := unstructured.NestedString(pv.Object, "spec", "downstream", "package")
	if o.NeverRender[template] {
		return 0, nil
	}
	if d := due(first, o.RenderDelay); d > 0 {
		return d, nil
	}
	ready := map[string]any{"type": "Ready", "status": "True", "reason": "NoErrors", "message": "successfully ensured downstream package variant"}
	if msg, failing := o.RenderFailure[template]; failing {
		ready = map[string]any{"type": "Ready", "status": "False", "reason": "Error", "message": msg}
	}
	stalled := map[string]any{"type": "Stalled", "status": "False", "reason": "Valid", "message": "all validation checks passed"}
	var again time.Duration
	if d, ok := o.PorchDegradesAfter[template]; ok {
		if again = due(first, d); again == 0 {
			stalled = map[string]any{"type": "Stalled", "status": "True", "reason": "ValidationError", "message": "could not find upstream package revision"}
			ready = map[string]any{"type": "Ready", "status": "False", "reason": "Error", "message": "invalid packagevariant object"}
		}
	}
	var targets []*unstructured.Unstructured
	pvReady := ready["status"] == "True"
	if p.w.revisionsServed && pvReady {
		var err error
		if targets, err = p.ensureDownstream(ctx, pv); err != nil {
			ready = map[string]any{"type": "Ready", "status": "False", "reason": "Error", "message": err.Error()}
		}
	}
	conds := []any{stalled, ready}
	if o.ReadyFirst[template] {
		conds[0], conds[1] = conds[1], conds[0]
	}
	if err := setConditions(ctx, dyn, pv, conds); err != nil {
		return 0, err
	}
	if !p.w.revisionsServed {
		if ready["status"] != "True" || o.NoCluster[template] || downstream == "" {
			return again, nil
		}
		return again, p.w.ensureCluster(ctx, downstream, template, "", nil)
	}
	if ready["status"] == "True" {
		if err := setTargets(ctx, dyn, pv, targets); err != nil {
			return 0, err
		}
	}
	// The approvers act on their own: an administrator also while the PackageVariant is not Ready (a
	// change that met a pending draft waits for that draft to be published).
	d, err := p.approveAndSync(ctx, pv, ready["status"] == "True", o.NoCluster[template] || downstream == "")
	if again == 0 || (d > 0 && d < again) {
		again = d
	}
	return again, err
}

// setConditions writes status.conditions when they differ (ignoring transition times), keeping a
// condition's lastTransitionTime while its status is unchanged, as meta.SetStatusCondition does.
func setConditions(ctx context.Context, dyn interface {
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, options metav1.PatchOptions, subresources ...string) (*unstructured.Unstructured, error)
}, u *unstructured.Unstructured, want []any) error {
	have, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	now := time.Now().UTC().Format(time.RFC3339)
	prev := map[string]map[string]any{}
	for _, c := range have {
		if m, ok := c.(map[string]any); ok {
			prev[m["type"].(string)] = m
		}
	}
	same := len(have) == len(want)
	for i, c := range want {
		m := c.(map[string]any)
		old := prev[m["type"].(string)]
		if old != nil && old["status"] == m["status"] {
			m["lastTransitionTime"] = old["lastTransitionTime"]
		} else {
			m["lastTransitionTime"] = now
		}
		if same {
			h, _ := have[i].(map[string]any)
			same = reflect.DeepEqual(h, m)
		}
	}
	if same {
		return nil
	}
	body, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": want}})
	_, err := dyn.Patch(ctx, u.GetName(), types.MergePatchType, body, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func hasFinalizer(u *unstructured.Unstructured, f string) bool {
	for _, x := range u.GetFinalizers() {
		if x == f {
			return true
		}
	}
	return false
}

type patcher interface {
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, options metav1.PatchOptions, subresources ...string) (*unstructured.Unstructured, error)
}

func addFinalizer(ctx context.Context, dyn patcher, u *unstructured.Unstructured, f string) error {
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"finalizers": append(u.GetFinalizers(), f), "resourceVersion": u.GetResourceVersion(),
	}})
	_, err := dyn.Patch(ctx, u.GetName(), types.MergePatchType, body, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// releaseFinalizer removes a controller's finalizer DeleteDelay after the deletion was first seen.
func (w *World) releaseFinalizer(ctx context.Context, dyn patcher, u *unstructured.Unstructured, f string,
	mu *sync.Mutex, since *map[string]time.Time) (time.Duration, error) {
	if !hasFinalizer(u, f) {
		return 0, nil
	}
	key := u.GetNamespace() + "/" + u.GetName()
	mu.Lock()
	if *since == nil {
		*since = map[string]time.Time{}
	}
	start, ok := (*since)[key]
	if !ok {
		start = time.Now()
		(*since)[key] = start
	}
	mu.Unlock()
	if d := due(start, w.opts.DeleteDelay); d > 0 {
		return d, nil
	}
	var keep []string
	for _, x := range u.GetFinalizers() {
		if x != f {
			keep = append(keep, x)
		}
	}
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": keep, "resourceVersion": u.GetResourceVersion()}})
	_, err := dyn.Patch(ctx, u.GetName(), types.MergePatchType, body, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		err = nil
	}
	if err == nil {
		mu.Lock()
		delete(*since, key)
		mu.Unlock()
	}
	return 0, err
}
