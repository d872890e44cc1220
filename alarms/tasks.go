package alarms

import (
	"fmt"
	"slices"
	"time"

	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

// The Purge Alarms task and its task operation occurrences (O2IMS clauses 3.3.4.7–3.3.4.9, 3.3.6.2.6
// PurgeRequest, 3.3.6.2.7 TaskOperationInfo; monitoring API 1.2.0). A purge removes cleared alarms from
// the alarm list: those an SMO names (alarmRecordId) and/or those cleared and acknowledged within a time
// window of their alarmClearedTime (purgeConditions), the intersection when both are given. An active
// alarm is never purged (the window is of cleared alarms; naming an active one is a conflict), nor one
// cleared by hand while its fault lasts (it is what keeps the fault from being raised again). The purge
// and its task record are one write of the alarms' ConfigMap, so the task is COMPLETED when it is
// answered, and it survives restarts and failover with the alarms.

// MaxTasks bounds the kept task operation occurrences: beyond it the oldest terminal ones go (the spec
// lets the O-Cloud remove terminal ones; clause 3.3.4.9.1).
const MaxTasks = 100

// Task operation states and operations.
const (
	TaskCompleted  = "COMPLETED"
	TaskFailed     = "FAILED"
	OperationPurge = "PURGE"
)

// PurgeConditions is PurgeRequest.purgeConditions: a window of alarmClearedTime.
type PurgeConditions struct {
	Start *time.Time `json:"startWindowTime,omitempty"`
	End   time.Time  `json:"endWindowTime"`
}

// PurgeRequest is the PurgeRequest an SMO posts.
type PurgeRequest struct {
	AlarmRecordIDs []string         `json:"alarmRecordId,omitempty"`
	Conditions     *PurgeConditions `json:"purgeConditions,omitempty"`
}

// Task is one task operation occurrence, stored with the alarms.
type Task struct {
	ID        string         `json:"id"`
	State     string         `json:"operationState"`
	Entered   time.Time      `json:"stateEnteredTime"`
	Start     time.Time      `json:"startTime"`
	Operation string         `json:"operation"`
	Params    PurgeRequest   `json:"operationParams"`
	Purged    []string       `json:"purged,omitempty"` // the alarms it removed (answered in extensions)
	Error     map[string]any `json:"error,omitempty"`
}

// TaskSchema is the TaskOperationInfo, for filters and attribute selectors.
var TaskSchema = query.Object("TaskOperationInfo", map[string]query.Attr{
	"id": query.Simple(), "operationState": query.Simple(), "stateEnteredTime": query.Simple(),
	"startTime": query.Simple(), "operation": query.Simple(), "operationParams": query.Freeform().Optional(),
	"error": query.Freeform().Optional(), "extensions": query.Freeform().Optional(),
})

// Attrs is the TaskOperationInfo as answered: the ids it purged in extensions.purgedAlarmEventRecordIds
// (the type has no member for a result).
func (t *Task) Attrs() map[string]any {
	params := map[string]any{}
	if len(t.Params.AlarmRecordIDs) > 0 {
		ids := make([]any, len(t.Params.AlarmRecordIDs))
		for i, id := range t.Params.AlarmRecordIDs {
			ids[i] = id
		}
		params["alarmRecordId"] = ids
	}
	if c := t.Params.Conditions; c != nil {
		cond := map[string]any{"endWindowTime": c.End.UTC().Format(timeForm)}
		if c.Start != nil {
			cond["startWindowTime"] = c.Start.UTC().Format(timeForm)
		}
		params["purgeConditions"] = cond
	}
	purged := make([]any, len(t.Purged))
	for i, id := range t.Purged {
		purged[i] = id
	}
	out := map[string]any{
		"id": t.ID, "operationState": t.State, "stateEnteredTime": t.Entered.UTC().Format(timeForm),
		"startTime": t.Start.UTC().Format(timeForm), "operation": t.Operation, "operationParams": params,
		"extensions": map[string]any{"purgedAlarmEventRecordIds": purged},
	}
	if t.Error != nil {
		out["error"] = t.Error
	}
	return out
}

// UnknownAlarmError is a purge naming an alarm the list does not hold: the caller's error, 400.
type UnknownAlarmError struct{ ID string }

func (e *UnknownAlarmError) Error() string { return fmt.Sprintf("alarm %q not found", e.ID) }

// ConflictError is a purge naming an alarm that cannot be purged (active, or held cleared by hand): 409.
type ConflictError struct{ Message string }

func (e *ConflictError) Error() string { return e.Message }

// Validate refuses a request naming nothing, or a window that ends before it starts.
func (p PurgeRequest) Validate() error {
	if len(p.AlarmRecordIDs) == 0 && p.Conditions == nil {
		return fmt.Errorf("name the alarms to purge (alarmRecordId) or a window of their clearing (purgeConditions), or both")
	}
	if c := p.Conditions; c != nil {
		if c.End.IsZero() {
			return fmt.Errorf("purgeConditions.endWindowTime is required")
		}
		if c.Start != nil && c.Start.After(c.End) {
			return fmt.Errorf("purgeConditions: startWindowTime is after endWindowTime")
		}
	}
	return nil
}

// Purge removes from s what req selects and records the task id as COMPLETED at now; an unknown id is
// an error (the caller's), one that cannot be purged a ConflictError.
func (s *State) Purge(id string, req PurgeRequest, now time.Time) (*Task, error) {
	selected := map[string]bool{}
	for _, rid := range req.AlarmRecordIDs {
		a, ok := s.Get(rid)
		switch {
		case !ok:
			return nil, &UnknownAlarmError{ID: rid}
		case a.Active():
			return nil, &ConflictError{fmt.Sprintf("alarm %q is active: only cleared alarms are purged", rid)}
		case a.Held:
			return nil, &ConflictError{fmt.Sprintf("alarm %q was cleared by hand while its fault lasts: it is kept until the fault goes", rid)}
		}
		selected[rid] = true
	}
	var purged []string
	s.Alarms = slices.DeleteFunc(s.Alarms, func(a *Alarm) bool {
		if a.Active() || a.Held || (len(selected) > 0 && !selected[a.ID]) {
			return false
		}
		if c := req.Conditions; c != nil && (!a.Acknowledged || a.Cleared.After(c.End) || (c.Start != nil && a.Cleared.Before(*c.Start))) {
			return false
		}
		purged = append(purged, a.ID)
		return true
	})
	t := &Task{ID: id, State: TaskCompleted, Entered: now, Start: now, Operation: OperationPurge, Params: req, Purged: purged}
	s.Tasks = append(s.Tasks, t)
	if over := len(s.Tasks) - MaxTasks; over > 0 {
		s.Tasks = s.Tasks[over:] // every kept task is terminal: the oldest go
	}
	return t, nil
}

// Task answers the task with id.
func (s *State) Task(id string) (*Task, bool) {
	for _, t := range s.Tasks {
		if t.ID == id {
			return t, true
		}
	}
	return nil, false
}
