// Package v1alpha1 is the ProvisioningRequest resource as the CRD (manifests/crd) defines it: where it
// lives, its provisioning states, and the names of its spec and status fields, with accessors that read them
// from an unstructured object and build the status the chain writes. The chain writes through it and the NBI
// reads through it, so the two agree by construction, not because two string literals match.
//
// The accessors work on the unstructured maps directly (no reflection, no copy): the NBI maps every cached
// request on each list, and a converter round trip per object would cost more than the rest of the answer.
package v1alpha1

import "k8s.io/apimachinery/pkg/runtime/schema"

// Where the resource lives (cluster-scoped).
const (
	Group    = "o2ims.provisioning.oran.org"
	Version  = "v1alpha1"
	Resource = "provisioningrequests"
	Kind     = "ProvisioningRequest"
)

var (
	// GroupVersion is the API group at the CRD's one served version.
	GroupVersion = schema.GroupVersion{Group: Group, Version: Version}
	// GVR is the resource clients read and write.
	GVR = GroupVersion.WithResource(Resource)
	// APIVersion is the apiVersion of an object ("o2ims.provisioning.oran.org/v1alpha1").
	APIVersion = GroupVersion.String()
)
