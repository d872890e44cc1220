package handlers

// The resources the chain reads and writes are named in api/v1alpha1 (the ProvisioningRequest) and
// api/external (PackageVariant, Cluster, BareMetalHost).

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

// Event reasons of the chain, next to their meaning.
const (
	EventProgressing = "Progressing" // state became progressing
	EventFulfilled   = "Fulfilled"   // the cluster is provisioned
	EventFailed      = "Failed"      // the request failed; the message says why
	EventDeleting    = "Deleting"    // deletion started
	EventConflict    = "Conflict"    // a PackageVariant of that name belongs to someone else
	EventCreated     = "Created"     // we created an object (PackageVariant, BareMetalHost, Secret)
	EventUpdated     = "Updated"     // we rewrote our PackageVariant's spec for the request's new spec
	EventAdopted     = "Adopted"     // we took over the PackageVariant the Python image made for the request
	EventDeleted     = "Deleted"     // we deleted an object
	// the host step's own reasons are in package hosts (HostClaimed, HostReleased, HostQuarantined)
)
