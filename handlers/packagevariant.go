package handlers

import (
	"context"
	"reflect"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/framework"
)

// setLabelsImage is the kpt function the Python image used to apply templateParameters.labels.
const setLabelsImage = "gcr.io/kpt-fn/set-labels:v0.2.0"

// desiredPackageVariant is the PackageVariant the Python image creates, plus the two ownership annotations
// and an ownerReference (so the garbage collector removes it even if the request disappears without our
// finalizer running).
func (h *Handlers) desiredPackageVariant(pr *unstructured.Unstructured, req Request) *unstructured.Unstructured {
	spec := h.packageVariantSpec(req)
	pv := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": external.PackageVariantGVR.GroupVersion().String(),
		"kind":       external.PackageVariantKind,
		"spec":       spec,
	}}
	pv.SetName(pr.GetName())
	pv.SetNamespace(h.cfg.PackageVariantNamespace)
	pv.SetLabels(map[string]string{LabelOwner: LabelOwnerValue})
	pv.SetAnnotations(map[string]string{
		AnnotationRequestUID: string(pr.GetUID()),
		AnnotationDownstream: req.ClusterName,
	})
	pv.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.Kind,
		Name: pr.GetName(), UID: pr.GetUID(),
	}})
	return pv
}

// packageVariantSpec is the spec, byte for byte as the released Python image writes it
// (testdata/reference/python-image-objects): it always sends spec.pipeline.mutators — an empty list when
// the request has no templateParameters.labels, one set-labels mutator with them — so one spec shape
// serves creation and adoption alike.
func (h *Handlers) packageVariantSpec(req Request) map[string]any {
	mutators := []any{}
	if req.Labels != nil {
		cm := map[string]any{}
		for k, v := range req.Labels {
			cm[k] = v
		}
		mutators = append(mutators, map[string]any{"image": setLabelsImage, "configMap": cm})
	}
	return map[string]any{
		"upstream": map[string]any{
			"repo": h.cfg.UpstreamRepo, "package": req.TemplateName, "workspaceName": req.TemplateVersion,
		},
		"downstream":  map[string]any{"repo": h.cfg.DownstreamRepo, "package": req.ClusterName},
		"annotations": map[string]any{"approval.nephio.org/policy": "initial"},
		"pipeline":    map[string]any{"mutators": mutators},
	}
}

// rendersAlike: Porch renders an absent pipeline and one with no mutators alike, so a PackageVariant this
// operator created before it wrote the Python image's empty list is not rewritten for that alone.
func rendersAlike(have, want any) bool {
	strip := func(spec any) any {
		m, ok := spec.(map[string]any)
		if !ok {
			return spec
		}
		p, ok := m["pipeline"].(map[string]any)
		if !ok || len(p) != 1 {
			return spec
		}
		if mut, ok := p["mutators"].([]any); !ok || len(mut) != 0 {
			return spec
		}
		out := make(map[string]any, len(m))
		for k, v := range m {
			if k != "pipeline" {
				out[k] = v
			}
		}
		return out
	}
	return reflect.DeepEqual(strip(have), strip(want))
}

func pvRef(pv *unstructured.Unstructured) string { return pv.GetNamespace() + "/" + pv.GetName() }

// conflict fails the request over a PackageVariant that is not its own. That object is never modified.
func (h *Handlers) conflict(c *framework.Cause, pv *unstructured.Unstructured) error {
	msg := msgPackageVariantConflict.with(pvRef(pv))
	c.Event(corev1.EventTypeWarning, EventConflict, msg.text)
	return h.fail(c, msg)
}

// ensurePackageVariant returns this request's PackageVariant, creating it when absent. It returns a nil
// object with the handler's outcome when there is nothing more to observe in this pass.
func (h *Handlers) ensurePackageVariant(ctx context.Context, c *framework.Cause, req Request) (*unstructured.Unstructured, error) {
	pr := c.Object
	ns, name := h.cfg.PackageVariantNamespace, pr.GetName()
	pv, found, err := c.Cache.Get(external.PackageVariantGVR, ns, name)
	if err != nil {
		return nil, err
	}
	if found {
		if !pvOwnedByRequest(pv, pr) && ownedByAnEarlierRequest(pv, pr) {
			// The garbage collector removes it shortly (its owner is gone); failing over it would make a
			// delete-and-re-create of the same name fail whenever it outran the collector.
			return nil, h.waitWithinBudget(c, "rendering", msgRenderingEarlierRequest.with(), "")
		}
		if !pvOwnedByRequest(pv, pr) {
			if !h.madeByThePythonImage(pv, pr, req) {
				return nil, h.conflict(c, pv)
			}
			if pv, err = h.adopt(ctx, c, pv, req); pv == nil {
				return nil, err
			}
		}
		if pv.GetAnnotations()[AnnotationDownstream] != req.ClusterName {
			// Ours, but for another cluster: the request's clusterName changed after creation.
			return nil, h.fail(c, msgClusterNameChanged.with(strconv.Quote(pv.GetAnnotations()[AnnotationDownstream]), strconv.Quote(req.ClusterName)))
		}
		// Whatever the request is doing: a spec changed while it was in flight must reach Porch before the
		// request can be fulfilled (the create handler runs until it finishes, not the update handler).
		return h.updatePackageVariant(ctx, c, pv, req)
	}

	created, err := h.kube.Create(ctx, external.PackageVariantGVR, h.desiredPackageVariant(pr, req))
	if err == nil {
		c.Normal(EventCreated, "Created package variant "+pvRef(created))
		return created, nil
	}
	ae, _ := framework.AsAPIError(err)
	if ae != nil && (ae.Class == framework.ClassConflict || ae.MayHaveLanded) {
		// The answer was lost, or someone (maybe our own earlier create) got there first: only reading it
		// back tells which; a blind retry could not.
		live, gerr := h.kube.Get(ctx, c, external.PackageVariantGVR, ns, name)
		switch {
		case gerr == nil && pvOwnedByRequest(live, pr) && live.GetAnnotations()[AnnotationDownstream] == req.ClusterName:
			c.Logger.Info("package variant create settled by read-back: it is ours", errField(err))
			return live, nil
		case gerr == nil && h.madeByThePythonImage(live, pr, req):
			// Not in our cache yet when we looked: the Python image's, made for this request.
			return h.adopt(ctx, c, live, req)
		case gerr == nil && ownedByAnEarlierRequest(live, pr):
			return nil, h.waitWithinBudget(c, "rendering", msgRenderingEarlierRequest.with(), "")
		case gerr == nil:
			return nil, h.conflict(c, live)
		case framework.IsClass(gerr, framework.ClassNotFound):
			// It did not land: the next pass creates it again, which is then not blind.
			return nil, h.wait(c, msgRenderingCreateLost.with())
		default:
			return nil, h.retryOrFail(c, gerr)
		}
	}
	return nil, h.retryOrFail(c, err)
}

// updatePackageVariant re-asserts the desired spec on our PackageVariant when the request's spec changed
// (an NBI PUT, kubectl, GitOps), in flight or finished: Porch re-renders the downstream package from the
// new template version or labels. The time of the rewrite goes on the PackageVariant with it
// (AnnotationSpecUpdated, observed.go), so rendering waits for Porch to report on the new spec.
func (h *Handlers) updatePackageVariant(ctx context.Context, c *framework.Cause, pv *unstructured.Unstructured, req Request) (*unstructured.Unstructured, error) {
	want := h.packageVariantSpec(req)
	if rendersAlike(pv.Object["spec"], want) {
		return pv, nil
	}
	pv = pv.DeepCopy()
	ann := rewriteAnnotations(c, pv)
	pv.Object["spec"] = want
	pv.SetAnnotations(ann)
	updated, err := h.kube.Update(ctx, external.PackageVariantGVR, pv)
	if ae, _ := framework.AsAPIError(err); ae != nil && (ae.Class == framework.ClassConflict || ae.MayHaveLanded) {
		// A lost answer, or a cache behind our own earlier update: only the live object tells whether
		// the new spec is there; a blind retry could not.
		if live, gerr := h.kube.Get(ctx, c, external.PackageVariantGVR, pv.GetNamespace(), pv.GetName()); gerr == nil &&
			pvOwnedByRequest(live, c.Object) && rendersAlike(live.Object["spec"], want) {
			c.Logger.Info("package variant update settled by read-back: the new spec is there", errField(err))
			if live.GetAnnotations()[AnnotationSpecUpdated] == ann[AnnotationSpecUpdated] {
				// This pass's write landed (its answer was lost): said once, as a write that answered is.
				c.Normal(EventUpdated, "Updated package variant "+pvRef(live)+" to the request's new spec")
			}
			return live, nil
		}
		if ae.Class == framework.ClassConflict {
			return nil, h.wait(c, msgRenderingUpdateRaced.with())
		}
	}
	if err != nil {
		return nil, h.retryOrFail(c, err)
	}
	c.Normal(EventUpdated, "Updated package variant "+pvRef(updated)+" to the request's new spec")
	return updated, nil
}

// rewriteAnnotations are the PackageVariant's annotations with the rewrite's time recorded
// (AnnotationSpecUpdated): porch.go then wants a revision published no earlier.
func rewriteAnnotations(c *framework.Cause, pv *unstructured.Unstructured) map[string]string {
	ann := pv.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[AnnotationSpecUpdated] = c.Now.UTC().Format(time.RFC3339Nano)
	delete(ann, annotationClusterGeneration)
	return ann
}

// retryOrFail turns a classified failure of a PackageVariant call into the request's status: a retryable
// one keeps it progressing with a message that says so (not "failed" next to "progressing"), a
// non-retryable one fails it.
func (r *reporter) retryOrFail(c *framework.Cause, err error) error {
	ae, ok := framework.AsAPIError(err)
	if !ok {
		return err // not an API failure: a bug; the framework retries with backoff
	}
	if ae.Retryable {
		r.setStatus(c, msgRenderingRetrying.with(ae.Error()))
		return &framework.TemporaryError{Message: ae.Error(), Delay: r.requeue}
	}
	return r.fail(c, msgRenderingFailed.with(ae.Error()))
}

// condition finds a status condition by type.
func condition(u *unstructured.Unstructured, fields ...string) (map[string]any, bool) {
	condType := fields[len(fields)-1]
	path := []string{"status", "conditions"}
	if len(fields) > 1 {
		path = fields[:len(fields)-1]
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, path...)
	for _, raw := range conds {
		if m, ok := raw.(map[string]any); ok && m["type"] == condType {
			return m, true
		}
	}
	return nil, false
}
