package nbi

import (
	"time"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// provisioningRequests is the custom resource behind the API (cluster-scoped).
var provisioningRequests = schema.GroupVersionResource{
	Group: "o2ims.provisioning.oran.org", Version: "v1alpha1", Resource: "provisioningrequests",
}

const provisioningRequestKind = "ProvisioningRequest"

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
	"progressing": PhaseProgressing,
	"fulfilled":   PhaseFulfilled,
	"failed":      PhaseFailed,
	"deleting":    PhaseDeleting,
}

// infoOf maps a ProvisioningRequest to its Info without changing it (List hands out shared objects). A
// request written straight to the API server may lack name, description or a status: they answer "" and
// PENDING with the creation time, so every answer has what the reference requires.
func (s *Server) infoOf(u *unstructured.Unstructured) ProvisioningRequestInfo {
	obj := u.Object
	spec, _ := obj["spec"].(map[string]any)
	status, _ := obj["status"].(map[string]any)
	pstatus, _ := status["provisioningStatus"].(map[string]any)
	rset, _ := status["provisionedResourceSet"].(map[string]any)

	params, _ := spec["templateParameters"].(map[string]any)
	if params == nil {
		params = map[string]any{}
	}
	info := ProvisioningRequestInfo{
		ProvisioningRequestData: ProvisioningRequestData{
			ProvisioningRequestID: u.GetName(),
			Name:                  str(spec["name"]),
			Description:           str(spec["description"]),
			TemplateName:          str(spec["templateName"]),
			TemplateVersion:       str(spec["templateVersion"]),
			TemplateParameters:    params,
		},
		ProvisioningRequestReference: string(u.GetUID()),
		Status: ProvisioningStatus{
			UpdateTime:        s.updateTime(u, str(pstatus["provisioningUpdateTime"])),
			Message:           str(pstatus["provisioningMessage"]),
			ProvisioningPhase: s.phaseOf(u, str(pstatus["provisioningState"])),
		},
		ProvisionedResourceSet: ProvisionedResourceSet{
			NodeClusterID:             str(rset["oCloudNodeClusterId"]),
			InfrastructureResourceIDs: s.resourceIDs(strs(rset["oCloudInfrastructureResourceIds"])),
		},
	}
	return info
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
			zap.String("provisioningRequestId", u.GetName()), zap.String("provisioningState", state))
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
			zap.String("provisioningRequestId", u.GetName()), zap.String("provisioningUpdateTime", recorded))
	}
	return u.GetCreationTimestamp().UTC().Format(time.RFC3339)
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func strs(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
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
