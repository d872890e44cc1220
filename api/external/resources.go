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
	// PackageRevisionResourcesKind is a PackageRevision's content, served by porch-server under the same
	// name: spec.resources maps each file of the package to its text (api/porch/v1alpha1/types.go).
	PackageRevisionResourcesKind = "PackageRevisionResources"
	ClusterGroup                 = "cluster.x-k8s.io"
	ClusterKind                  = "Cluster"
	Metal3Group                  = "metal3.io"
	BareMetalHostKind            = "BareMetalHost"
	// CAPM3's Metal3Machine: a BareMetalHost's spec.consumerRef names one when a CAPI Machine consumes the
	// host; the Machine is its owner (cluster-api-provider-metal3 v1.13.2, baremetal/metal3machine_manager.go
	// setHostConsumerRef; controllers/metal3machine_controller.go, util.GetOwnerMachine).
	InfrastructureGroup = "infrastructure.cluster.x-k8s.io"
	Metal3MachineKind   = "Metal3Machine"
	MachineKind         = "Machine"
)

var (
	PackageVariantGVR = schema.GroupVersionResource{Group: PorchGroup, Version: "v1alpha1", Resource: "packagevariants"}
	BareMetalHostGVR  = schema.GroupVersionResource{Group: Metal3Group, Version: "v1alpha1", Resource: "baremetalhosts"}
	// PackageRevisionGVR is read only: the downstream revision our PackageVariant names, and the upstream
	// one it is cloned from.
	PackageRevisionGVR = schema.GroupVersionResource{Group: PorchAPIGroup, Version: "v1alpha1", Resource: "packagerevisions"}
	// PackageRevisionResourcesGVR is read only: the content of the revision Porch published for a change.
	PackageRevisionResourcesGVR = schema.GroupVersionResource{Group: PorchAPIGroup, Version: "v1alpha1", Resource: "packagerevisionresources"}
)

// Metal3MachineGVR is CAPM3's Metal3Machine at a version (the one a consumerRef names; v1beta1 and v1beta2
// are both served by CAPM3 v1.13).
func Metal3MachineGVR(version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: InfrastructureGroup, Version: version, Resource: "metal3machines"}
}

// ClusterGVR is the CAPI Cluster at a served version (handlers.DetectClusterVersion picks it).
func ClusterGVR(version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: ClusterGroup, Version: version, Resource: "clusters"}
}
