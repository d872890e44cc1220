package performance

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/o2ims-operator/o2ims-operator/internal/quote"
	"github.com/o2ims-operator/o2ims-operator/inventory"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

// Request is a MeasurementJobRequest (clause 3.7.6.2.3) as read and bounded.
type Request struct {
	ConsumerID   string
	Interval     int
	Scope        Scope
	Measurements []string
	Extensions   map[string]any
}

// wireRequest is the body as the spec spells it.
type wireRequest struct {
	ConsumerID *string                    `json:"consumerPerformanceJobId,omitempty"`
	Interval   *int                       `json:"collectionInterval"`
	Scope      map[string]json.RawMessage `json:"resourceScopeCriteria,omitempty"`
	Selection  map[string]json.RawMessage `json:"measurementSelectionCriteria"`
	Extensions map[string]any             `json:"extensions,omitempty"`
}

// maxExtensionsBytes bounds a job's extensions as JSON: they are stored with it.
const maxExtensionsBytes = 4 << 10

// ParseRequest reads a MeasurementJobRequest body: collectionInterval in seconds within the bounds,
// measurementSelectionCriteria.performanceMeasurementId naming measurements of the performance
// dictionaries (inventory.Measurements), resourceScopeCriteria narrowing by resourceId, resourceTypeId
// and resourcePoolId (each a UUID or a list of them). An error says what is wrong, for a 400.
func ParseRequest(data []byte, b Bounds) (Request, error) {
	var w wireRequest
	if err := query.DecodeJSON(data, &w); err != nil {
		return Request{}, fmt.Errorf("the body is not a MeasurementJobRequest: %v", err)
	}
	var req Request
	if w.ConsumerID != nil {
		if len(*w.ConsumerID) > maxConsumerID {
			return Request{}, fmt.Errorf("consumerPerformanceJobId: at most %d bytes", maxConsumerID)
		}
		req.ConsumerID = *w.ConsumerID
	}
	if w.Interval == nil {
		return Request{}, fmt.Errorf("collectionInterval is required (seconds)")
	}
	if *w.Interval < b.MinInterval || *w.Interval > MaxInterval {
		return Request{}, fmt.Errorf("collectionInterval %d: want seconds from %d to %d", *w.Interval, b.MinInterval, MaxInterval)
	}
	req.Interval = *w.Interval
	var err error
	if req.Measurements, err = parseSelection(w.Selection); err != nil {
		return Request{}, err
	}
	if req.Scope, err = parseScope(w.Scope); err != nil {
		return Request{}, err
	}
	if _, reserved := w.Extensions[extCollection]; reserved {
		return Request{}, fmt.Errorf("extensions.%s is the operator's (the collection's state): choose another key", extCollection)
	}
	if raw, err := json.Marshal(w.Extensions); err != nil || len(raw) > maxExtensionsBytes {
		return Request{}, fmt.Errorf("extensions: at most %d bytes of JSON", maxExtensionsBytes)
	}
	req.Extensions = w.Extensions
	return req, nil
}

// parseSelection reads measurementSelectionCriteria: {"performanceMeasurementId": id or [ids]}.
func parseSelection(sel map[string]json.RawMessage) ([]string, error) {
	known := make([]string, len(inventory.Measurements))
	for i, m := range inventory.Measurements {
		known[i] = m.ID
	}
	for k := range sel {
		if k != "performanceMeasurementId" {
			return nil, fmt.Errorf("measurementSelectionCriteria.%s: only performanceMeasurementId selects measurements", quote.Truncate(k, 60))
		}
	}
	ids, err := stringOrList(sel["performanceMeasurementId"], "measurementSelectionCriteria.performanceMeasurementId")
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("measurementSelectionCriteria.performanceMeasurementId is required: one or more of %s", strings.Join(known, ", "))
	}
	var out []string
	for _, id := range known { // the dictionaries' order, each once
		if slices.Contains(ids, id) {
			out = append(out, id)
		}
	}
	for _, id := range ids {
		if !slices.Contains(known, id) {
			return nil, fmt.Errorf("performanceMeasurementId %q is in no performance dictionary; known: %s", quote.Truncate(id, 60), strings.Join(known, ", "))
		}
	}
	return out, nil
}

// parseScope reads resourceScopeCriteria.
func parseScope(scope map[string]json.RawMessage) (Scope, error) {
	if len(scope) > maxCriteriaKeys {
		return Scope{}, fmt.Errorf("resourceScopeCriteria: only resourceId, resourceTypeId and resourcePoolId select resources")
	}
	var s Scope
	for k, raw := range scope {
		ids, err := stringOrList(raw, "resourceScopeCriteria."+quote.Truncate(k, 60))
		if err != nil {
			return Scope{}, err
		}
		for _, id := range ids {
			if u, err := uuid.Parse(id); err != nil || u.String() != id {
				return Scope{}, fmt.Errorf("resourceScopeCriteria.%s: %q is not an inventory id (a lowercase UUID)", k, quote.Truncate(id, 60))
			}
		}
		switch k {
		case "resourceId":
			s.ResourceIDs = ids
		case "resourceTypeId":
			s.TypeIDs = ids
		case "resourcePoolId":
			s.PoolIDs = ids
		default:
			return Scope{}, fmt.Errorf("resourceScopeCriteria.%s: only resourceId, resourceTypeId and resourcePoolId select resources", quote.Truncate(k, 60))
		}
	}
	return s, nil
}

// stringOrList reads a string or an array of strings (absent: none), at most maxListed.
func stringOrList(raw json.RawMessage, what string) ([]string, error) {
	if raw == nil {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("%s: want a string or an array of strings", what)
	}
	if len(list) > maxListed {
		return nil, fmt.Errorf("%s: at most %d values", what, maxListed)
	}
	return list, nil
}

const maxListed = 1000
