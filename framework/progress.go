package framework

import (
	"fmt"
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

// loadProgress reads a handler's record (ours or kopf's) from the object.
func (p *pass) loadProgress(id string) *handlerState {
	ann := p.obj.GetAnnotations()
	for _, k := range p.c.keys.Keys(id) {
		raw, ok := ann[k]
		if !ok {
			continue
		}
		hs, err := decodeProgress(raw, p.now)
		if err != nil {
			p.warnOnce("progress/"+id, fmt.Sprintf("Ignoring unreadable progress of handler %q: %v", id, err))
			// Keep a marker that a record exists, so it is rewritten or purged rather than left behind.
			return &handlerState{started: p.now, purpose: string(p.own.cause), persisted: &kopf.ProgressRecord{}}
		}
		return hs
	}
	return nil
}

// storeProgress writes the records that must survive a restart. kopf rewrites a record on every retry;
// that turns every waiting object into a write per pass. Here a record is written when it carries
// something a restart needs: the start time and retry count of a handler with limits, a finished handler
// whose siblings are still running, or a record already on the object (kept truthful, e.g. kopf's).
func (p *pass) storeProgress(handlers []*handlerSpec) {
	for _, h := range handlers {
		hs := p.own.handlers[h.id]
		if hs == nil {
			continue
		}
		if !(h.limited() || hs.finished() || hs.persisted != nil) {
			continue
		}
		rec := hs.record(p.c.op.opts.TimeForm)
		if sameRecord(rec, hs.persisted) {
			continue
		}
		enc := encodeProgress(rec)
		for _, k := range p.c.keys.Keys(h.id) {
			p.patch.SetAnnotation(k, enc)
		}
		hs.persisted = rec
		p.mark()
	}
}

// purgeProgress removes every record of the cause's handlers and their sub-handlers (kopf's subrefs, as
// the Python image's create_fn/create_fn.<locals>.sub_* records).
func (p *pass) purgeProgress(handlers []*handlerSpec) {
	ann := p.obj.GetAnnotations()
	purge := func(id string) {
		for _, k := range p.c.keys.Keys(id) {
			if _, ok := ann[k]; ok {
				p.patch.DeleteAnnotation(k)
			}
		}
	}
	for _, h := range handlers {
		purge(h.id)
		if hs := p.own.handlers[h.id]; hs != nil {
			for _, sub := range hs.subrefs {
				purge(sub)
			}
		}
	}
}

// mark adds kopf's marker so other kopf operators leave our annotations out of their essence.
func (p *pass) mark() {
	k := p.c.namer.Prefix + "/" + kopf.Marker
	if _, ok := p.obj.GetAnnotations()[k]; !ok {
		p.patch.SetAnnotation(k, "yes")
	}
}
