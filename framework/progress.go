package framework

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// progressRecord is kopf's per-handler progress, stored as compact JSON in one annotation per handler (both
// key forms). Field names and meanings are kopf's; absent fields are omitted as kopf omits None.
type progressRecord struct {
	Started *string  `json:"started,omitempty"`
	Stopped *string  `json:"stopped,omitempty"`
	Delayed *string  `json:"delayed,omitempty"`
	Purpose *string  `json:"purpose,omitempty"`
	Retries *int     `json:"retries,omitempty"`
	Success *bool    `json:"success,omitempty"`
	Failure *bool    `json:"failure,omitempty"`
	Message *string  `json:"message,omitempty"`
	Subrefs []string `json:"subrefs,omitempty"`
}

// handlerState is the in-memory view of one handler's progress in the current cause.
type handlerState struct {
	started time.Time
	stopped time.Time
	delayed time.Time
	purpose string
	retries int
	success bool
	failure bool
	message string
	subrefs []string
	// persisted is the record as last read from or written to the object, to write only on change.
	persisted *progressRecord
}

func (s *handlerState) finished() bool { return s.success || s.failure }

// kopf 1.36 (the Python image) writes naive UTC ISO-8601 with microseconds and compares naive datetimes, so
// an offset suffix would make it raise on rollback. Write naive, read both forms.
const kopfTimeLayout = "2006-01-02T15:04:05.000000"

func formatKopfTime(t time.Time) string { return t.UTC().Format(kopfTimeLayout) }

func parseKopfTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	// kopf 1.44 writes "+00:00" offsets, which RFC3339 accepts; anything else is not a time we can trust.
	return time.Time{}, fmt.Errorf("unparseable progress time %q", s)
}

// decodeProgress reads a record written by us or by kopf. A malformed record (someone else's JSON, a
// truncated write) must neither crash nor block the object: it is reported and treated as absent, so the
// handler starts afresh — the safe direction for idempotent handlers.
func decodeProgress(raw string, now time.Time) (*handlerState, error) {
	var rec progressRecord
	dec := json.NewDecoder(strings.NewReader(raw))
	if err := dec.Decode(&rec); err != nil {
		return nil, fmt.Errorf("malformed progress record: %w", err)
	}
	st := &handlerState{persisted: &rec, started: now}
	var err error
	parse := func(p *string, into *time.Time) {
		if p == nil || err != nil {
			return
		}
		var t time.Time
		if t, err = parseKopfTime(*p); err == nil {
			*into = t
		}
	}
	parse(rec.Started, &st.started)
	parse(rec.Stopped, &st.stopped)
	parse(rec.Delayed, &st.delayed)
	if err != nil {
		return nil, err
	}
	if rec.Purpose != nil {
		st.purpose = *rec.Purpose
	}
	if rec.Retries != nil {
		if *rec.Retries < 0 {
			return nil, fmt.Errorf("malformed progress record: negative retries %d", *rec.Retries)
		}
		st.retries = *rec.Retries
	}
	st.success = rec.Success != nil && *rec.Success
	st.failure = rec.Failure != nil && *rec.Failure
	if rec.Message != nil {
		st.message = *rec.Message
	}
	st.subrefs = rec.Subrefs
	return st, nil
}

// record renders the state as kopf stores it: every field kopf writes, booleans and retries always present.
func (s *handlerState) record() *progressRecord {
	str := func(v string) *string { return &v }
	rec := &progressRecord{
		Started: str(formatKopfTime(s.started)),
		Retries: &s.retries,
		Success: &s.success,
		Failure: &s.failure,
	}
	retries, success, failure := s.retries, s.success, s.failure
	rec.Retries, rec.Success, rec.Failure = &retries, &success, &failure
	if !s.stopped.IsZero() {
		rec.Stopped = str(formatKopfTime(s.stopped))
	}
	if !s.delayed.IsZero() {
		rec.Delayed = str(formatKopfTime(s.delayed))
	}
	if s.purpose != "" {
		rec.Purpose = str(s.purpose)
	}
	if s.message != "" {
		rec.Message = str(s.message)
	}
	if len(s.subrefs) > 0 {
		rec.Subrefs = append([]string(nil), s.subrefs...)
	}
	return rec
}

func encodeProgress(rec *progressRecord) string {
	b, _ := json.Marshal(rec) // a struct of strings, ints and bools always marshals
	return string(b)
}

func sameRecord(a, b *progressRecord) bool {
	if a == nil || b == nil {
		return a == b
	}
	return encodeProgress(a) == encodeProgress(b)
}
