package handlers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/framework"
	"github.com/o2ims-operator/o2ims-operator/handlers/hosts"
)

// Adoption: which PackageVariant the released Python image made for a request, and taking it over. The
// image's objects are captured in testdata/reference/python-image-objects (SOURCES.md there).

// adopt makes the Python image's PackageVariant ours: our annotations, the owner label and the
// ownerReference our own PackageVariants carry, written with an update under its resourceVersion (the
// shipped role grants update, not patch; a PackageVariant changed meanwhile is looked at again, never
// overwritten). Once annotated it is ours like any other, so this happens, and is logged and posted, once.
// The downstream annotation names the Cluster the image rendered (a clusterName changed since is refused
// as for our own), and the ids the image recorded are replaced in this pass's status write (imageIDs).
func (h *Handlers) adopt(ctx context.Context, c *framework.Cause, pv *unstructured.Unstructured, req Request) (*unstructured.Unstructured, error) {
	pr := c.Object
	want := h.desiredPackageVariant(pr, req)
	pv = pv.DeepCopy()
	ann := pv.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	for k, v := range want.GetAnnotations() {
		ann[k] = v
	}
	ann[AnnotationDownstream] = pvDownstream(pv)
	pv.SetAnnotations(ann)
	labels := pv.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	for k, v := range want.GetLabels() {
		labels[k] = v
	}
	pv.SetLabels(labels)
	pv.SetOwnerReferences(append(pv.GetOwnerReferences(), want.GetOwnerReferences()...))
	adopted, err := h.kube.Update(ctx, external.PackageVariantGVR, pv)
	if err != nil {
		if framework.IsClass(err, framework.ClassConflict) {
			// Changed since we looked: most likely our own adoption a pass ago, not yet in the cache.
			if live, gerr := h.kube.Get(ctx, c, external.PackageVariantGVR, pv.GetNamespace(), pv.GetName()); gerr == nil && pvOwnedByRequest(live, pr) {
				return live, nil
			}
		}
		if framework.IsClass(err, framework.ClassConflict) || framework.IsClass(err, framework.ClassNotFound) {
			return nil, h.wait(c, msgRenderingAdoptionRaced.with())
		}
		return nil, h.retryOrFail(c, err)
	}
	msg := fmt.Sprintf("Adopted package variant %s: the Python image created it for this request", pvRef(adopted))
	c.Logger.Info("adopted the Python image's package variant", stringField("packageVariant", pvRef(adopted)), stringField("uid", string(adopted.GetUID())))
	c.Normal(EventAdopted, msg)
	h.replaceImageIDs(c, adopted)
	return adopted, nil
}

// replaceImageIDs: the Python image recorded random uuid4s as a fulfilled request's ids (and fresh ones at
// every start), which resolve to nothing. On adoption, the request's first change, they become the real
// ones — the Cluster's uid, the inventory ids of the hosts it holds (none: the image claimed none) —
// together, in the pass's one status write. A request the image had not fulfilled has no ids to replace.
func (h *Handlers) replaceImageIDs(c *framework.Cause, pv *unstructured.Unstructured) {
	st, _ := c.Object.Object["status"].(map[string]any)
	if _, recorded := st[v1alpha1.FieldProvisionedResourceSet]; !recorded {
		return
	}
	before := v1alpha1.ResourceSetOf(c.Object)
	clusterID := "" // no Cluster (removed since): no id rather than one that resolves to nothing
	if cl, found, err := c.Cache.Get(h.clusterGVR, h.cfg.ClusterNamespace, pvDownstream(pv)); err == nil && found {
		clusterID = string(cl.GetUID())
	}
	infra := []string{}
	if held := hosts.Held(c.Object); h.hosts != nil && len(held) > 0 {
		infra, _ = h.hosts.ResourceIDs(held)
	}
	setResourceSet(c, clusterID, infra)
	c.Logger.Info("replaced the Python image's ids with the real ones",
		stringField("nodeClusterIdWas", before.NodeClusterID), stringField("nodeClusterId", clusterID))
}
