// Package performance is the O2IMS Infrastructure Performance model: measurement jobs, their store, the
// table from measurements to PromQL and the evaluator that collects them from Prometheus.
package performance

import (
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/o2ims-operator/o2ims-operator/inventory"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

// A Performance Measurement Job (O2IMS clause 3.7.6.2.2 MeasurementJob, API 2.0.0): what an SMO asked
// to be measured (resourceScopeCriteria, measurementSelectionCriteria, collectionInterval) and what the
// leader's evaluator last collected for it. Its report is its own representation: collectedMeasurements
// holds the latest value of every measurement on every measured resource, with the time Prometheus
// answered it; extensions.collection says when the last collection was attempted and succeeded and
// keeps the gaps (clause 3.7.5 specifies no notification, so nothing is pushed).

// States and statuses of a job (Tables 3.7.6.3.3.1-1 and 3.7.6.3.3.2-1). Jobs here are ACTIVE while
// they exist: the API has no suspend operation, and a deleted job's measurements go with it, so it is
// never DEPRECATED for longer than the DELETE.
const (
	StateActive     = "ACTIVE"
	StatusRunning   = "RUNNING"
	StatusDegraded  = "DEGRADED"
	StatusFailed    = "FAILED"
	extCollection   = "collection"
	maxGaps         = 10
	maxConsumerID   = 256
	maxCriteriaKeys = 3
)

// Result is one collected measurement of one resource: the latest value Prometheus answered.
type Result struct {
	MeasurementID string    `json:"m"`
	ResourceID    string    `json:"r"`
	Value         float64   `json:"v"`
	At            time.Time `json:"t"`
}

// Measured is a resource in the job's history: measured since Since, until Until (nil: still).
type Measured struct {
	ResourceID string     `json:"r"`
	TypeID     string     `json:"type"`
	Since      time.Time  `json:"since"`
	Until      *time.Time `json:"until,omitempty"`
}

// Gap is a time the job collected nothing: From the first failed attempt, To the next success (nil: still).
type Gap struct {
	From   time.Time  `json:"from"`
	To     *time.Time `json:"to,omitempty"`
	Reason string     `json:"reason"`
}

// Job is a stored measurement job.
type Job struct {
	ID           string         `json:"id"`
	ConsumerID   string         `json:"consumerId,omitempty"`
	Interval     int            `json:"interval"` // seconds
	Scope        Scope          `json:"scope"`
	Measurements []string       `json:"measurements"` // performanceMeasurementIds, in the dictionaries' order
	Extensions   map[string]any `json:"extensions,omitempty"`
	Created      time.Time      `json:"created"`

	Status      string     `json:"status"`
	Message     string     `json:"message,omitempty"` // why the status is not RUNNING, or what it waits for
	LastAttempt *time.Time `json:"lastAttempt,omitempty"`
	LastSuccess *time.Time `json:"lastSuccess,omitempty"`
	Gaps        []Gap      `json:"gaps,omitempty"`
	Measured    []Measured `json:"measured,omitempty"`
	Results     []Result   `json:"results,omitempty"`
}

// Scope is the resourceScopeCriteria a job was created with: each non-empty list narrows the resources
// (a resource must match every list given); none given is every resource the inventory knows.
type Scope struct {
	ResourceIDs []string `json:"resourceId,omitempty"`
	TypeIDs     []string `json:"resourceTypeId,omitempty"`
	PoolIDs     []string `json:"resourcePoolId,omitempty"`
}

// Matches reports whether target t is in the scope.
func (s Scope) Matches(t Target) bool {
	in := func(list []string, v string) bool { return len(list) == 0 || slices.Contains(list, v) }
	return in(s.ResourceIDs, t.ResourceID) && in(s.TypeIDs, t.TypeID) && in(s.PoolIDs, t.PoolID)
}

func (s Scope) criteria() map[string]any {
	out := map[string]any{}
	for k, v := range map[string][]string{"resourceId": s.ResourceIDs, "resourceTypeId": s.TypeIDs, "resourcePoolId": s.PoolIDs} {
		if len(v) > 0 {
			out[k] = stringsAny(v)
		}
	}
	return out
}

func stringsAny(v []string) []any {
	out := make([]any, len(v))
	for i, s := range v {
		out[i] = s
	}
	return out
}

// Schema is the MeasurementJob, for filters and attribute selectors.
var Schema = query.Object("MeasurementJob", map[string]query.Attr{
	"performanceMeasurementJobId": query.Simple(), "consumerPerformanceJobId": query.Simple().Optional(),
	"state": query.Simple(), "collectionInterval": query.Simple(), "resourceScopeCriteria": query.Freeform().Optional(),
	"measurementSelectionCriteria": query.Freeform(), "status": query.Simple(), "preinstalledJob": query.Simple(),
	"qualifiedResourceTypes": query.Array(), "measuredResources": query.Array(), "collectedMeasurements": query.Array(),
	"extensions": query.Freeform().Optional(),
})

// DefaultExcluded are the attributes a list leaves out unless all_fields or fields asks for them
// (clause 3.7.4.2.3.2, exclude_default).
var DefaultExcluded = []string{"measuredResources", "collectedMeasurements"}

// Attrs is the job's MeasurementJob.
func (j *Job) Attrs() map[string]any {
	types := []any{}
	measured := make([]any, 0, len(j.Measured))
	for _, m := range j.Measured {
		if !slices.Contains(types, any(m.TypeID)) {
			types = append(types, m.TypeID)
		}
		e := map[string]any{"resourceId": m.ResourceID, "resourceTypeId": m.TypeID, "measuredSince": stamp(m.Since)}
		if m.Until != nil {
			e["measuredUntil"] = stamp(*m.Until)
		}
		measured = append(measured, e)
	}
	collected := make([]any, 0, len(j.Results))
	for _, r := range j.Results {
		collected = append(collected, map[string]any{
			"performanceMeasurementId": r.MeasurementID, "resourceId": r.ResourceID, "value": r.Value,
			"measurementUnit": unitOf(r.MeasurementID), "collectedAt": stamp(r.At),
		})
	}
	ext := map[string]any{}
	for k, v := range j.Extensions {
		ext[k] = v
	}
	ext[extCollection] = j.collection()
	out := map[string]any{
		"performanceMeasurementJobId": j.ID, "state": StateActive, "collectionInterval": j.Interval,
		"resourceScopeCriteria": j.Scope.criteria(), "measurementSelectionCriteria": map[string]any{"performanceMeasurementId": stringsAny(j.Measurements)},
		"status": j.Status, "preinstalledJob": false, "qualifiedResourceTypes": types,
		"measuredResources": measured, "collectedMeasurements": collected, "extensions": ext,
	}
	if j.ConsumerID != "" {
		out["consumerPerformanceJobId"] = j.ConsumerID
	}
	return out
}

// collection is extensions.collection: the evaluator's own account of the job.
func (j *Job) collection() map[string]any {
	c := map[string]any{"source": "prometheus"}
	if j.LastAttempt != nil {
		c["lastAttempt"] = stamp(*j.LastAttempt)
	}
	if j.LastSuccess != nil {
		c["lastSuccess"] = stamp(*j.LastSuccess)
	}
	if j.Message != "" {
		c["message"] = j.Message
	}
	gaps := make([]any, 0, len(j.Gaps))
	for _, g := range j.Gaps {
		e := map[string]any{"from": stamp(g.From), "reason": g.Reason}
		if g.To != nil {
			e["to"] = stamp(*g.To)
		}
		gaps = append(gaps, e)
	}
	c["gaps"] = gaps
	return c
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func unitOf(id string) string {
	for _, m := range inventory.Measurements {
		if m.ID == id {
			return m.Unit
		}
	}
	return ""
}

// NewJob is a new job of request req at now, with a fresh id.
func NewJob(req Request, now time.Time) *Job {
	return &Job{
		ID: uuid.NewString(), ConsumerID: req.ConsumerID, Interval: req.Interval, Scope: req.Scope,
		Measurements: req.Measurements, Extensions: req.Extensions, Created: now.UTC(),
		Status: StatusRunning, Message: "waiting for the first collection from Prometheus",
	}
}

func (j *Job) clone() *Job {
	c := *j
	c.Gaps = slices.Clone(j.Gaps)
	c.Measured = slices.Clone(j.Measured)
	c.Results = slices.Clone(j.Results)
	return &c
}

// String names the job in logs.
func (j *Job) String() string { return fmt.Sprintf("measurement job %s", j.ID) }
