package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/framework"
	"github.com/o2ims-operator/o2ims-operator/framework/kopf"
	"github.com/o2ims-operator/o2ims-operator/handlers/hosts"
)

// Adoption: which PackageVariant the released Python image made for a request, and taking it over. The
// image's objects are captured in testdata/reference/python-image-objects (SOURCES.md there).

// madeByThePythonImage tells a PackageVariant the released Python image created for this request: it
// writes neither ownership annotation (they came with the unreleased fix) nor any label (it sends
// metadata.label, a string the API server drops). Such a PackageVariant is this request's when it has the
// request's name, in our namespace, carries neither of our annotations nor any label, has exactly the
// spec the Python image writes for one of the request's specs it could have been made from
// (imageSpecs: upstream repo / template / version, downstream package = clusterName, the approval
// annotation, the pipeline's mutators: the labels' one or none) and was created no earlier than the
// request (one created before it is a leftover of an earlier request of that name: the Python image
// never deleted them). Anything else without our annotations stays foreign.
func (h *Handlers) madeByThePythonImage(pv, pr *unstructured.Unstructured, req Request) bool {
	ann := pv.GetAnnotations()
	if _, ok := ann[AnnotationRequestUID]; ok {
		return false
	}
	if _, ok := ann[AnnotationDownstream]; ok {
		return false
	}
	if len(pv.GetLabels()) > 0 {
		return false
	}
	if pv.GetName() != pr.GetName() || pv.GetNamespace() != h.cfg.PackageVariantNamespace || req.ClusterName == "" {
		return false
	}
	if pv.GetCreationTimestamp().Time.Before(pr.GetCreationTimestamp().Time) {
		return false
	}
	for _, r := range h.imageSpecs(pr, req) {
		if reflect.DeepEqual(pv.Object["spec"], h.packageVariantSpec(r)) {
			return true
		}
	}
	return false
}

// imageSpecs are the request's specs the Python image may have made its PackageVariant from: the spec
// as it is (a request in flight, which kopf has no diff-base for yet), and the spec kopf recorded as
// handled when the image's create handler was done (its diff-base, "last-handled-configuration"). The
// image never rewrote a PackageVariant it found, so a request it fulfilled whose spec changed since (an
// edit this operator is handling, or one made while no operator ran) still matches its diff-base's.
func (h *Handlers) imageSpecs(pr *unstructured.Unstructured, req Request) []Request {
	out := []Request{req}
	ann := pr.GetAnnotations()
	for _, key := range (kopf.Namer{Prefix: Prefix}).Keys(kopf.DiffBaseName) {
		raw, ok := ann[key]
		if !ok {
			continue
		}
		base, found, err := kopf.ParseDiffBase(raw)
		if err != nil || !found {
			return out
		}
		// Through JSON once more: the diff-base keeps numbers as json.Number, the spec parser reads
		// what the API server's JSON decodes to.
		var spec map[string]any
		if b, err := json.Marshal(base["spec"]); err != nil || json.Unmarshal(b, &spec) != nil || spec == nil {
			return out
		}
		if handled, err := ParseRequest(spec, h.reservedKeys()); err == nil && handled.ClusterName != "" {
			out = append(out, handled)
		}
		return out
	}
	return out
}

// isOurs is the release's view: ours by uid, or the one the Python image made for this request (deleting
// such a request deletes it without adopting it first: a write for nothing).
func (h *Handlers) isOurs(pv, pr *unstructured.Unstructured) bool {
	if pvOwnedByRequest(pv, pr) {
		return true
	}
	spec, _, _ := unstructured.NestedMap(pr.Object, "spec")
	req, err := ParseRequest(spec, h.reservedKeys())
	if err != nil {
		// A spec that no longer parses does not make the image's PackageVariant foreign: the diff-base's
		// may still name it.
		req = Request{ClusterName: pvDownstream(pv)}
	}
	return h.madeByThePythonImage(pv, pr, req)
}

// pvDownstream is the downstream package a PackageVariant renders: the Cluster's name.
func pvDownstream(pv *unstructured.Unstructured) string {
	s, _, _ := unstructured.NestedString(pv.Object, "spec", "downstream", "package")
	return s
}

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
