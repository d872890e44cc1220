package framework

import (
	"time"

	"github.com/o2ims-operator/o2ims-operator/framework/kopf"
)

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
	// form is the time form the record was read in (kept when it is rewritten, so the Python image that
	// wrote it can read it again); formRead is false for a record we start, which takes the operator's.
	form     kopf.TimeForm
	formRead bool
	// persisted is the record as last read from or written to the object, to write only on change.
	persisted *kopf.ProgressRecord
}

func (s *handlerState) finished() bool { return s.success || s.failure }

// decodeProgress reads a record written by us or by kopf. A malformed record (someone else's JSON, a
// truncated write) must neither crash nor block the object: it is reported and treated as absent, so the
// handler starts afresh — the safe direction for idempotent handlers.
func decodeProgress(raw string, now time.Time) (*handlerState, error) {
	rec, err := kopf.DecodeProgress(raw)
	if err != nil {
		return nil, err
	}
	st := &handlerState{persisted: rec, started: now}
	at := func(p *string, into *time.Time) {
		if p != nil {
			*into, _, _ = kopf.ParseTime(*p) // DecodeProgress checked that they parse
		}
	}
	st.form, st.formRead = rec.TimeForm()
	at(rec.Started, &st.started)
	at(rec.Stopped, &st.stopped)
	at(rec.Delayed, &st.delayed)
	if rec.Purpose != nil {
		st.purpose = *rec.Purpose
	}
	if rec.Retries != nil {
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

// record renders the state as kopf stores it: every field kopf writes, booleans and retries always present,
// times in the form the record was read in, else in form (the operator's setting).
func (s *handlerState) record(form kopf.TimeForm) *kopf.ProgressRecord {
	if s.formRead {
		form = s.form
	}
	str := func(v string) *string { return &v }
	rec := &kopf.ProgressRecord{
		Started: str(kopf.FormatTime(s.started, form)),
		Retries: &s.retries,
		Success: &s.success,
		Failure: &s.failure,
	}
	retries, success, failure := s.retries, s.success, s.failure
	rec.Retries, rec.Success, rec.Failure = &retries, &success, &failure
	if !s.stopped.IsZero() {
		rec.Stopped = str(kopf.FormatTime(s.stopped, form))
	}
	if !s.delayed.IsZero() {
		rec.Delayed = str(kopf.FormatTime(s.delayed, form))
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

func encodeProgress(rec *kopf.ProgressRecord) string { return rec.Encode() }

func sameRecord(a, b *kopf.ProgressRecord) bool { return kopf.SameProgress(a, b) }
