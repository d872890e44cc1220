package nbi

import (
	"time"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
)

// ProvisioningPhase values of the reference's enum.
const (
	PhasePending     = "PENDING"
	PhaseProgressing = "PROGRESSING"
	PhaseFulfilled   = "FULFILLED"
	PhaseFailed      = "FAILED"
	PhaseDeleting    = "DELETING"
)

// ProvisioningRequestData is what the SMO gave: the spec, with metadata.name as the id.
type ProvisioningRequestData struct {
	ProvisioningRequestID string         `json:"provisioningRequestId"`
	Name                  string         `json:"name"`
	Description           string         `json:"description"`
	TemplateName          string         `json:"templateName"`
	TemplateVersion       string         `json:"templateVersion"`
	TemplateParameters    map[string]any `json:"templateParameters"`
}

// ProvisioningStatus is the request's phase as the reference names it.
type ProvisioningStatus struct {
	UpdateTime        string `json:"updateTime"`
	Message           string `json:"message"`
	ProvisioningPhase string `json:"provisioningPhase"`
}

// ProvisionedResourceSet names what the request provisioned; both members are always present ("" and
// [] when nothing is known), as the reference requires.
type ProvisionedResourceSet struct {
	NodeClusterID             string   `json:"nodeClusterId"`
	InfrastructureResourceIDs []string `json:"infrastructureResourceIds"`
}

// ProvisioningRequestInfo is the answer for one request; all four members are required by the reference.
type ProvisioningRequestInfo struct {
	ProvisioningRequestData      ProvisioningRequestData `json:"provisioningRequestData"`
	ProvisioningRequestReference string                  `json:"provisioningRequestReference"`
	Status                       ProvisioningStatus      `json:"status"`
	ProvisionedResourceSet       ProvisionedResourceSet  `json:"provisionedResourceSet"`
}

// ProvisioningRequestList is the answer of a list.
type ProvisioningRequestList struct {
	Items []ProvisioningRequestInfo `json:"items"`
}

// phases maps the CR's provisioningState to the reference's phase.
var phases = map[string]string{
	v1alpha1.StateProgressing: PhaseProgressing,
	v1alpha1.StateFulfilled:   PhaseFulfilled,
	v1alpha1.StateFailed:      PhaseFailed,
	v1alpha1.StateDeleting:    PhaseDeleting,
}

// infoOf maps a ProvisioningRequest to its Info without changing it (List hands out shared objects). A
// request written straight to the API server may lack name, description or a status: they answer "" and
// PENDING with the creation time, so every answer has what the reference requires.
func (s *Server) infoOf(u *unstructured.Unstructured) ProvisioningRequestInfo {
	spec := v1alpha1.SpecOf(u)
	status := v1alpha1.StatusOf(u)
	rset := v1alpha1.ResourceSetOf(u)
	params := spec.TemplateParameters
	if params == nil {
		params = map[string]any{}
	}
	return ProvisioningRequestInfo{
		ProvisioningRequestData: ProvisioningRequestData{
			ProvisioningRequestID: u.GetName(),
			Name:                  spec.Name,
			Description:           spec.Description,
			TemplateName:          spec.TemplateName,
			TemplateVersion:       spec.TemplateVersion,
			TemplateParameters:    params,
		},
		ProvisioningRequestReference: string(u.GetUID()),
		Status: ProvisioningStatus{
			UpdateTime:        s.updateTime(u, status.UpdateTime),
			Message:           status.Message,
			ProvisioningPhase: s.phaseOf(u, status.State),
		},
		ProvisionedResourceSet: ProvisionedResourceSet{
			NodeClusterID:             rset.NodeClusterID,
			InfrastructureResourceIDs: s.resourceIDs(rset.InfrastructureResourceIDs),
		},
	}
}

// phaseOf: a request with a deletionTimestamp is DELETING whatever its recorded state; no state (not yet
// reconciled) and a state the mapping does not know are PENDING, the latter logged since it means the
// CRD and this mapping disagree.
func (s *Server) phaseOf(u *unstructured.Unstructured, state string) string {
	if u.GetDeletionTimestamp() != nil {
		return PhaseDeleting
	}
	if p, ok := phases[state]; ok {
		return p
	}
	if state != "" {
		s.log.Warn("provisioning request has a provisioningState with no O2IMS phase; answering PENDING",
			zap.String("provisioningRequestId", u.GetName()), zap.String(v1alpha1.FieldProvisioningState, state))
	}
	return PhasePending
}

// updateTime is provisioningUpdateTime, or the creation time when the status has none (the reference
// requires a date-time); both are answered in UTC RFC 3339.
func (s *Server) updateTime(u *unstructured.Unstructured, recorded string) string {
	if recorded != "" {
		if t, err := time.Parse(time.RFC3339Nano, recorded); err == nil {
			return t.UTC().Format(time.RFC3339)
		}
		s.log.Warn("provisioning request has an unreadable provisioningUpdateTime; answering its creation time",
			zap.String("provisioningRequestId", u.GetName()), zap.String(v1alpha1.FieldProvisioningUpdateTime, recorded))
	}
	return u.GetCreationTimestamp().UTC().Format(time.RFC3339)
}

// attributes is the Info as a generic tree, the form query.Filter.Match walks; its members are the
// attribute paths package query checks filters and attribute selectors against. It shares
// templateParameters with the Store's object: nothing may change it.
func (i *ProvisioningRequestInfo) attributes() map[string]any {
	ids := make([]any, len(i.ProvisionedResourceSet.InfrastructureResourceIDs))
	for k, id := range i.ProvisionedResourceSet.InfrastructureResourceIDs {
		ids[k] = id
	}
	d := &i.ProvisioningRequestData
	return map[string]any{
		"provisioningRequestData": map[string]any{
			"provisioningRequestId": d.ProvisioningRequestID,
			"name":                  d.Name,
			"description":           d.Description,
			"templateName":          d.TemplateName,
			"templateVersion":       d.TemplateVersion,
			"templateParameters":    d.TemplateParameters,
		},
		"provisioningRequestReference": i.ProvisioningRequestReference,
		"status": map[string]any{
			"updateTime":        i.Status.UpdateTime,
			"message":           i.Status.Message,
			"provisioningPhase": i.Status.ProvisioningPhase,
		},
		"provisionedResourceSet": map[string]any{
			"nodeClusterId":             i.ProvisionedResourceSet.NodeClusterID,
			"infrastructureResourceIds": ids,
		},
	}
}
