package alarms

import (
	"time"

	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

// Alarm is one stored alarm: the reference's AlarmEventRecord and what the raiser keeps beside it.
type Alarm struct {
	ID              string         `json:"alarmEventRecordId"`
	DefinitionID    string         `json:"alarmDefinitionID"`
	ProbableCauseID string         `json:"probableCauseID"`
	Raised          time.Time      `json:"alarmRaisedTime"`
	Changed         time.Time      `json:"alarmChangedTime"`
	Cleared         *time.Time     `json:"alarmClearedTime,omitempty"`
	AcknowledgedAt  *time.Time     `json:"alarmAcknowledgedTime,omitempty"`
	Acknowledged    bool           `json:"alarmAcknowledged"`
	ResourceTypeID  string         `json:"resourceTypeID"`
	ResourceID      string         `json:"resourceID"`
	Severity        Severity       `json:"perceivedSeverity"`
	Extensions      map[string]any `json:"extensions"`
	// Subject is what the fault is about (a resource, pool or request uid, the O-Cloud): with the
	// definition, what the id is derived from.
	Subject string `json:"subject"`
	// Held: cleared by hand while the fault lasts; the raiser leaves it cleared until the fault has gone
	// once, and raises it again only if it comes back.
	Held bool `json:"held,omitempty"`
}

// Active reports whether the alarm is raised (not cleared).
func (a *Alarm) Active() bool { return a.Cleared == nil }

// Definition is the alarm's definition (nil for one the table no longer has).
func (a *Alarm) Definition() *Definition {
	d, _ := ByID(a.DefinitionID)
	return d
}

// timeForm is how times are answered: RFC 3339 in UTC with milliseconds.
const timeForm = "2006-01-02T15:04:05.000Z07:00"

// Attrs is the reference's AlarmEventRecord, as the API answers it and filters walk it.
func (a *Alarm) Attrs() map[string]any {
	ext := make(map[string]any, len(a.Extensions))
	for k, v := range a.Extensions {
		ext[k] = v
	}
	out := map[string]any{
		"alarmEventRecordId": a.ID, "alarmDefinitionID": a.DefinitionID, "probableCauseID": a.ProbableCauseID,
		"alarmRaisedTime": a.Raised.UTC().Format(timeForm), "alarmChangedTime": a.Changed.UTC().Format(timeForm),
		"alarmAcknowledged": a.Acknowledged, "resourceTypeID": a.ResourceTypeID, "resourceID": a.ResourceID,
		"perceivedSeverity": int64(a.Severity), "extensions": ext,
	}
	if a.Cleared != nil {
		out["alarmClearedTime"] = a.Cleared.UTC().Format(timeForm)
	}
	if a.AcknowledgedAt != nil {
		out["alarmAcknowledgedTime"] = a.AcknowledgedAt.UTC().Format(timeForm)
	}
	return out
}

// clone is a copy the caller may change.
func (a *Alarm) clone() *Alarm {
	c := *a
	c.Extensions = make(map[string]any, len(a.Extensions))
	for k, v := range a.Extensions {
		c.Extensions[k] = v
	}
	if a.Cleared != nil {
		t := *a.Cleared
		c.Cleared = &t
	}
	if a.AcknowledgedAt != nil {
		t := *a.AcknowledgedAt
		c.AcknowledgedAt = &t
	}
	return &c
}

// Schema is the reference's AlarmEventRecord, for filters and attribute selectors.
var Schema = query.Object("AlarmEventRecord", map[string]query.Attr{
	"alarmEventRecordId": query.Simple(), "alarmDefinitionID": query.Simple(), "probableCauseID": query.Simple(),
	"alarmRaisedTime": query.Simple(), "alarmChangedTime": query.Simple().Optional(),
	"alarmClearedTime": query.Simple().Optional(), "alarmAcknowledgedTime": query.Simple().Optional(),
	"alarmAcknowledged": query.Simple(), "resourceTypeID": query.Simple(), "resourceID": query.Simple(),
	"perceivedSeverity": query.Simple(), "extensions": query.Freeform(),
})

// Extension keys of an alarm.
const (
	ExtAlarmName      = "alarmName"
	ExtRaisedOn       = "raisedOn" // the definition's Scope
	ExtDictionaryID   = "alarmDictionaryId"
	ExtResourcePoolID = "resourcePoolId"
	ExtRequestID      = "provisioningRequestId"
	ExtRequestUID     = "provisioningRequestReference"
	ExtReason         = "reason"
	ExtRunbook        = "runbookUrl"
	ExtHost           = "hostIdentity"
	ExtWaiting        = "waitingRequests"
)
