package handlers

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/framework"
	"github.com/o2ims-operator/o2ims-operator/handlers/hosts"
)

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
