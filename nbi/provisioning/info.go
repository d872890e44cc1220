package provisioning

import (
	"time"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
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
func (a *API) infoOf(u *unstructured.Unstructured) ProvisioningRequestInfo {
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
			UpdateTime:        a.updateTime(u, status.UpdateTime),
			Message:           status.Message,
			ProvisioningPhase: a.phaseOf(u, status.State),
		},
		ProvisionedResourceSet: ProvisionedResourceSet{
			NodeClusterID:             rset.NodeClusterID,
			InfrastructureResourceIDs: a.ids(rset.InfrastructureResourceIDs),
		},
	}
}

// phaseOf: a request with a deletionTimestamp is DELETING whatever its recorded state; no state (not yet
// reconciled) and a state the mapping does not know are PENDING, the latter logged since it means the
// CRD and this mapping disagree.
func (a *API) phaseOf(u *unstructured.Unstructured, state string) string {
	if u.GetDeletionTimestamp() != nil {
		return PhaseDeleting
	}
	if p, ok := phases[state]; ok {
		return p
	}
	if state != "" {
		a.log.Warn("provisioning request has a provisioningState with no O2IMS phase; answering PENDING",
			zap.String("provisioningRequestId", u.GetName()), zap.String(v1alpha1.FieldProvisioningState, state))
	}
	return PhasePending
}

// updateTime is provisioningUpdateTime, or the creation time when the status has none (the reference
// requires a date-time); both are answered in UTC RFC 3339.
func (a *API) updateTime(u *unstructured.Unstructured, recorded string) string {
	if recorded != "" {
		if t, err := time.Parse(time.RFC3339Nano, recorded); err == nil {
			return t.UTC().Format(time.RFC3339)
		}
		a.log.Warn("provisioning request has an unreadable provisioningUpdateTime; answering its creation time",
			zap.String("provisioningRequestId", u.GetName()), zap.String(v1alpha1.FieldProvisioningUpdateTime, recorded))
	}
	return u.GetCreationTimestamp().UTC().Format(time.RFC3339)
}

// attributes is the Info as the tree query.Filter.Match walks, read in place rather than copied into
// maps (kept per request, those maps were a fifth of the heap of an NBI under list load): its members are
// the attribute paths package query checks filters and attribute selectors against. templateParameters
// is the Store's object's own: nothing may change it.
func (i *ProvisioningRequestInfo) attributes() query.Tree { return infoTree{i} }

type (
	infoTree   struct{ i *ProvisioningRequestInfo }
	dataTree   struct{ d *ProvisioningRequestData }
	statusTree struct{ s *ProvisioningStatus }
	rsetTree   struct{ r *ProvisionedResourceSet }
)

func (t infoTree) Child(name string) (any, bool) {
	switch name {
	case "provisioningRequestData":
		return dataTree{&t.i.ProvisioningRequestData}, true
	case "provisioningRequestReference":
		return t.i.ProvisioningRequestReference, true
	case "status":
		return statusTree{&t.i.Status}, true
	case "provisionedResourceSet":
		return rsetTree{&t.i.ProvisionedResourceSet}, true
	}
	return nil, false
}

func (t dataTree) Child(name string) (any, bool) {
	switch name {
	case "provisioningRequestId":
		return t.d.ProvisioningRequestID, true
	case "name":
		return t.d.Name, true
	case "description":
		return t.d.Description, true
	case "templateName":
		return t.d.TemplateName, true
	case "templateVersion":
		return t.d.TemplateVersion, true
	case "templateParameters":
		return t.d.TemplateParameters, true
	}
	return nil, false
}

func (t statusTree) Child(name string) (any, bool) {
	switch name {
	case "updateTime":
		return t.s.UpdateTime, true
	case "message":
		return t.s.Message, true
	case "provisioningPhase":
		return t.s.ProvisioningPhase, true
	}
	return nil, false
}

func (t rsetTree) Child(name string) (any, bool) {
	switch name {
	case "nodeClusterId":
		return t.r.NodeClusterID, true
	case "infrastructureResourceIds":
		return t.r.InfrastructureResourceIDs, true
	}
	return nil, false
}

// ids answers a request's infrastructureResourceIds as the inventory answers them (see New).
func (a *API) ids(ids []string) []string {
	if a.resourceIDs == nil {
		return ids
	}
	return a.resourceIDs(ids)
}
