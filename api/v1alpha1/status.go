package v1alpha1

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// Provisioning states, the CRD's enum for status.provisioningStatus.provisioningState (FOCOM reads these
// exact lowercase values). A request with no state has not been reconciled yet.
const (
	StateProgressing = "progressing"
	StateFulfilled   = "fulfilled"
	StateFailed      = "failed"
	StateDeleting    = "deleting"
)

// States are the CRD's enum, in its order.
var States = []string{StateProgressing, StateFulfilled, StateFailed, StateDeleting}

// WaitingForFreeHosts is the phrase of a progressing request's message while the pool has no (more) free
// host matching one of its roles: written by the hosts step (handlers/hosts), read by the chain's
// pool-exhausted gauge (handlers/metrics.go) and the PoolExhausted alarm (package alarms), so one wording.
const WaitingForFreeHosts = "waiting for free hosts"

// QuarantinesHeld is the phrase of a progressing request's message while BMC-fault quarantines are held
// because several hosts fail together: written by the hosts step, read by the BMCFaultBurst alarm.
const QuarantinesHeld = "quarantines held"

// Status field names: status.provisioningStatus.{provisioningState,provisioningMessage,provisioningUpdateTime},
// status.provisionedResourceSet.{oCloudNodeClusterId,oCloudInfrastructureResourceIds} and status.extensions.
const (
	FieldStatus                  = "status"
	FieldProvisioningStatus      = "provisioningStatus"
	FieldProvisioningState       = "provisioningState"
	FieldProvisioningMessage     = "provisioningMessage"
	FieldProvisioningUpdateTime  = "provisioningUpdateTime"
	FieldProvisionedResourceSet  = "provisionedResourceSet"
	FieldNodeClusterID           = "oCloudNodeClusterId"
	FieldInfrastructureResources = "oCloudInfrastructureResourceIds"
	// FieldExtensions is status.extensions, free-form (x-kubernetes-preserve-unknown-fields): the chain keeps
	// its own records there (host slots, the budget's start).
	FieldExtensions = "extensions"
)

// ProvisioningStatus is status.provisioningStatus. UpdateTime is the stored text (RFC 3339 in UTC when the
// chain wrote it); a field of the wrong type reads as "".
type ProvisioningStatus struct {
	State, Message, UpdateTime string
}

// StatusOf reads status.provisioningStatus.
func StatusOf(u *unstructured.Unstructured) ProvisioningStatus {
	ps, _ := status(u)[FieldProvisioningStatus].(map[string]any)
	return ProvisioningStatus{
		State:      str(ps[FieldProvisioningState]),
		Message:    str(ps[FieldProvisioningMessage]),
		UpdateTime: str(ps[FieldProvisioningUpdateTime]),
	}
}

// Unstructured is s as the value of status.provisioningStatus (all three fields, as the chain writes them).
func (s ProvisioningStatus) Unstructured() map[string]any {
	return map[string]any{
		FieldProvisioningState:      s.State,
		FieldProvisioningMessage:    s.Message,
		FieldProvisioningUpdateTime: s.UpdateTime,
	}
}

// ProvisionedResourceSet is status.provisionedResourceSet: the CAPI Cluster's uid and the hosts' ids.
type ProvisionedResourceSet struct {
	NodeClusterID             string
	InfrastructureResourceIDs []string
}

// ResourceSetOf reads status.provisionedResourceSet; ids that are not strings are skipped, and the list is
// never nil.
func ResourceSetOf(u *unstructured.Unstructured) ProvisionedResourceSet {
	rs, _ := status(u)[FieldProvisionedResourceSet].(map[string]any)
	list, _ := rs[FieldInfrastructureResources].([]any)
	ids := make([]string, 0, len(list))
	for _, e := range list {
		if s, ok := e.(string); ok {
			ids = append(ids, s)
		}
	}
	return ProvisionedResourceSet{NodeClusterID: str(rs[FieldNodeClusterID]), InfrastructureResourceIDs: ids}
}

// Unstructured is r as the value of status.provisionedResourceSet: both fields always present (the O2IMS API
// requires them), the ids as a JSON array.
func (r ProvisionedResourceSet) Unstructured() map[string]any {
	ids := make([]any, 0, len(r.InfrastructureResourceIDs))
	for _, id := range r.InfrastructureResourceIDs {
		ids = append(ids, id)
	}
	return map[string]any{FieldNodeClusterID: r.NodeClusterID, FieldInfrastructureResources: ids}
}

func status(u *unstructured.Unstructured) map[string]any {
	s, _ := u.Object[FieldStatus].(map[string]any)
	return s
}
