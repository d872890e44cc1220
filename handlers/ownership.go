package handlers

// Who owns what the chain touches, in one place: a PackageVariant is this request's by the uid annotation
// the operator writes on it, or — before any edit of a request the Python image fulfilled — by matching
// what that image wrote (adoption.go then makes it ours); a request needs its finalizer only while it
// holds something the garbage collector would not remove with it. The host step decides the same for a
// BareMetalHost (handlers/hosts/consumer.go, metal3.go) and NetBox for a device (netbox/claim.go).

import (
	"encoding/json"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/framework"
	"github.com/o2ims-operator/o2ims-operator/framework/kopf"
	"github.com/o2ims-operator/o2ims-operator/handlers/hosts"
)

// ownedByRequest: the name is chosen by the request, so a PackageVariant of that name proves nothing; it
// is this request's if it carries this request's uid — the uid alone, so a refused clusterName change
// (the request now names another cluster than the one its PackageVariant targets) does not make our own
// PackageVariant look foreign to the release.
func pvOwnedByRequest(pv, pr *unstructured.Unstructured) bool {
	uid := string(pr.GetUID())
	return uid != "" && pv.GetAnnotations()[AnnotationRequestUID] == uid
}

// holdsForRelease is the delete handler's framework.NeededWhen: a request needs the finalizer (and its
// deletion a Release) only while it holds something the garbage collector would not remove with it:
//   - hosts recorded on it (claimed, or a candidate whose claim may land): NetBox and Metal3 know nothing
//     of ownerReferences. The candidate record lands before the claim, and the finalizer with it;
//   - a PackageVariant of this request without an ownerReference to it: the one the Python image made
//     (never adopted when its request was fulfilled already).
//
// Our own PackageVariants carry an ownerReference to the request, so a request that holds nothing else
// and is deleted before it was handled goes at once and the garbage collector removes its PackageVariant.
// Once handled, the finalizer rides along the diff-base write anyway (no extra write), and deleting the
// request runs Release as before. A cache that cannot answer counts as holding: the safe side.
func (h *Handlers) holdsForRelease(pr *unstructured.Unstructured, cache *framework.Cache) bool {
	if len(hosts.Held(pr)) > 0 {
		return true
	}
	pv, found, err := cache.Get(external.PackageVariantGVR, h.cfg.PackageVariantNamespace, pr.GetName())
	switch {
	case err != nil:
		return true
	case !found || ownerRefTo(pv, pr):
		return false
	default:
		return h.isOurs(pv, pr)
	}
}

// ownerRefTo tells whether obj names the request (by uid) among its owners.
func ownerRefTo(obj, pr *unstructured.Unstructured) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == pr.GetUID() && ref.UID != "" {
			return true
		}
	}
	return false
}

// ownedByAnEarlierRequest: a PackageVariant whose owner is a ProvisioningRequest of this name with another
// uid — the one deleted before this request was created, whose PackageVariant the garbage collector has
// not removed yet (a request deleted before it was handled carries no finalizer, so nothing waited).
func ownedByAnEarlierRequest(pv, pr *unstructured.Unstructured) bool {
	for _, ref := range pv.GetOwnerReferences() {
		if ref.Kind == "ProvisioningRequest" && ref.APIVersion == v1alpha1.GVR.GroupVersion().String() &&
			ref.Name == pr.GetName() && ref.UID != pr.GetUID() {
			return true
		}
	}
	return false
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

// pvDownstream is the downstream package a PackageVariant renders: the Cluster's name.
func pvDownstream(pv *unstructured.Unstructured) string {
	s, _, _ := unstructured.NestedString(pv.Object, "spec", "downstream", "package")
	return s
}
