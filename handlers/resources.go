package handlers

import "k8s.io/apimachinery/pkg/runtime/schema"

// Resources the chain reads and writes.
var (
	ProvisioningRequestGVR = schema.GroupVersionResource{Group: "o2ims.provisioning.oran.org", Version: "v1alpha1", Resource: "provisioningrequests"}
	PackageVariantGVR      = schema.GroupVersionResource{Group: "config.porch.kpt.dev", Version: "v1alpha1", Resource: "packagevariants"}
	BareMetalHostGVR       = schema.GroupVersionResource{Group: "metal3.io", Version: "v1alpha1", Resource: "baremetalhosts"}
	SecretGVR              = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// ClusterGVR is the CAPI Cluster at a served version.
func ClusterGVR(version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: version, Resource: "clusters"}
}

// Names shared with the Python operator (its kopf prefix and finalizer setting) and with Porch/Metal3.
const (
	// Prefix is the Python operator's kopf persistence prefix; progress and diff-base live under it.
	Prefix = "provisioningrequests.o2ims.provisioning.oran.org"
	// Finalizer is the name the Python operator configured (it never added one: it had no delete handler).
	Finalizer = "provisioningrequests.o2ims.provisioning.oran.org"
	// HandlerCreate and HandlerDelete are the handler ids; create_fn is the Python operator's, so its
	// progress records resume here.
	HandlerCreate = "create_fn"
	HandlerDelete = "delete_fn"

	// AnnotationRequestUID and AnnotationDownstream mark a PackageVariant as this request's: both must match.
	AnnotationRequestUID = "o2ims.provisioning.oran.org/request-uid"
	AnnotationDownstream = "o2ims.provisioning.oran.org/downstream-package"
	// LabelOwner is the Python image's owner label on PackageVariants.
	LabelOwner      = "owner"
	LabelOwnerValue = "o2ims.provisioning.oran.org.provisioningrequests"

	// IndexClusterName indexes requests by templateParameters.clusterName (Cluster watch → request).
	IndexClusterName = "clusterName"
	// IndexUID is the framework's built-in uid index.
	IndexUID = "uid"
)

// Provisioning states of the CRD (FOCOM reads these exact lowercase values).
const (
	StateProgressing = "progressing"
	StateFulfilled   = "fulfilled"
	StateFailed      = "failed"
	StateDeleting    = "deleting"
)

// Event reasons of the chain, next to their meaning.
const (
	EventProgressing = "Progressing" // state became progressing
	EventFulfilled   = "Fulfilled"   // the cluster is provisioned
	EventFailed      = "Failed"      // the request failed; the message says why
	EventDeleting    = "Deleting"    // deletion started
	EventConflict    = "Conflict"    // a PackageVariant of that name belongs to someone else
	EventCreated     = "Created"     // we created an object (PackageVariant, BareMetalHost, Secret)
	EventAdopted     = "Adopted"     // we took over the PackageVariant the Python image made for the request
	EventDeleted     = "Deleted"     // we deleted an object
	// the host step's own reasons are in package hosts (HostClaimed, HostReleased, HostQuarantined)
)
