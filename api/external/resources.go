// Package external names the resources of other projects that the chain reads and writes: Porch's
// PackageVariant, Cluster API's Cluster and Metal3's BareMetalHost. Their schemas are theirs; this package
// only says where they live, once, for the chain, the NBI and main.
package external

import "k8s.io/apimachinery/pkg/runtime/schema"

// Groups and kinds of the resources we do not own.
const (
	PorchGroup         = "config.porch.kpt.dev"
	PackageVariantKind = "PackageVariant"
	// PorchAPIGroup is Porch's aggregated API (porch-server): PackageRevisions are served there, not by a
	// CRD (api/porch/v1alpha1/types.go of nephio-project/porch).
	PorchAPIGroup       = "porch.kpt.dev"
	PackageRevisionKind = "PackageRevision"
	ClusterGroup        = "cluster.x-k8s.io"
	ClusterKind         = "Cluster"
	Metal3Group         = "metal3.io"
	BareMetalHostKind   = "BareMetalHost"
)

var (
	PackageVariantGVR = schema.GroupVersionResource{Group: PorchGroup, Version: "v1alpha1", Resource: "packagevariants"}
	BareMetalHostGVR  = schema.GroupVersionResource{Group: Metal3Group, Version: "v1alpha1", Resource: "baremetalhosts"}
	// PackageRevisionGVR is read only: the downstream revision our PackageVariant names, and the upstream
	// one it is cloned from.
	PackageRevisionGVR = schema.GroupVersionResource{Group: PorchAPIGroup, Version: "v1alpha1", Resource: "packagerevisions"}
)

// ClusterGVR is the CAPI Cluster at a served version (handlers.DetectClusterVersion picks it).
func ClusterGVR(version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: ClusterGroup, Version: version, Resource: "clusters"}
}
