package framework

import (
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
)

// A handler returns nil when its work is done, or one of these errors; any other error is retried with a
// capped exponential backoff. Outcomes are data: the framework interprets them in one place (this file:
// classify, settleHandler, settleTimer).

// TemporaryError asks for another pass after Delay: the handler is waiting for something (rendering, a
// cluster, a host) or hit a failure that time will fix.
type TemporaryError struct {
	Message string
	// Delay until the next pass; zero means kopf's default of 60 s. Ignored when Again is set.
	Delay time.Duration
	// Again asks for the next pass as soon as this pass's own writes are visible: the handler wrote
	// what its next step reads (a claim record, a status). The freshness gate holds that pass until the
	// cache has caught up, so it never decides on the state from before the writes.
	Again bool
	Err   error
}

func (e *TemporaryError) Error() string {
	if e.Err != nil && e.Message == "" {
		return e.Err.Error()
	}
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *TemporaryError) Unwrap() error { return e.Err }

// PermanentError ends the handler: no retry, the failure is recorded and a Warning event is posted. The
// handler writes its business status into the patch before returning it; the framework applies that patch.
type PermanentError struct {
	Message string
	Err     error
}

func (e *PermanentError) Error() string {
	if e.Err != nil && e.Message == "" {
		return e.Err.Error()
	}
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *PermanentError) Unwrap() error { return e.Err }

// Temporary builds a TemporaryError.
func Temporary(delay time.Duration, format string, args ...any) error {
	return &TemporaryError{Message: fmt.Sprintf(format, args...), Delay: delay}
}

// Again builds a TemporaryError that asks for the next pass as soon as this pass's writes are visible.
func Again(message string) error {
	return &TemporaryError{Message: message, Again: true}
}

// Permanent builds a PermanentError.
func Permanent(format string, args ...any) error {
	return &PermanentError{Message: fmt.Sprintf(format, args...)}
}

type outcomeKind string

const (
	outcomeSuccess   outcomeKind = "success"
	outcomeTemporary outcomeKind = "temporary"
	outcomeError     outcomeKind = "error"
	outcomePermanent outcomeKind = "permanent"
)

// outcome is what one handler run came to.
type outcome struct {
	kind    outcomeKind
	delay   time.Duration // temporary only; errors use the queue's backoff
	message string
	err     error
}

// defaultTemporaryDelay is kopf's default for a TemporaryError without a delay.
const defaultTemporaryDelay = 60 * time.Second

// againDelay is the delay of Again. The freshness gate does the waiting for the writes; this only keeps a
// handler that asks again without having written anything from spinning its worker.
const againDelay = time.Millisecond

func classify(err error) outcome {
	if err == nil {
		return outcome{kind: outcomeSuccess}
	}
	var perm *PermanentError
	if errors.As(err, &perm) {
		return outcome{kind: outcomePermanent, message: err.Error(), err: err}
	}
	var temp *TemporaryError
	if errors.As(err, &temp) {
		d := temp.Delay
		if temp.Again {
			d = againDelay
		} else if d <= 0 {
			d = defaultTemporaryDelay
		}
		return outcome{kind: outcomeTemporary, delay: d, message: err.Error(), err: err}
	}
	return outcome{kind: outcomeError, message: err.Error(), err: err}
}

// exhausted says whether a limit ended the handler before this run: its timeout has passed or its
// retries are spent. The outcome is then permanent without a call.
func (h *handlerSpec) exhausted(hs *handlerState, now time.Time) (outcome, bool) {
	switch {
	case h.timeout > 0 && now.Sub(hs.started) >= h.timeout:
		return outcome{kind: outcomePermanent, message: fmt.Sprintf("Handler %q has timed out after %s.", h.id, h.timeout)}, true
	case h.retries > 0 && hs.retries >= h.retries:
		return outcome{kind: outcomePermanent, message: fmt.Sprintf("Handler %q has exceeded %d retries.", h.id, h.retries)}, true
	}
	return outcome{}, false
}

// lookahead fails a retry now, as kopf does, when the next try (at next) would exceed a limit anyway.
func (h *handlerSpec) lookahead(hs *handlerState, out outcome, next time.Time) outcome {
	if out.kind != outcomeTemporary && out.kind != outcomeError {
		return out
	}
	switch {
	case h.retries > 0 && hs.retries+1 >= h.retries:
		return outcome{kind: outcomePermanent, message: fmt.Sprintf("Handler %q has exceeded %d retries: %s", h.id, h.retries, out.message)}
	case h.timeout > 0 && next.Sub(hs.started) >= h.timeout:
		return outcome{kind: outcomePermanent, message: fmt.Sprintf("Handler %q has timed out after %s: %s", h.id, h.timeout, out.message)}
	}
	return out
}

// count records a handler's or timer's run and its outcome in the metrics.
func (p *pass) count(h *handlerSpec, out outcome) {
	m, res := p.c.op.metrics, p.c.resource
	m.HandlerRuns.WithLabelValues(res, h.id, string(out.kind)).Inc()
	switch out.kind {
	case outcomePermanent:
		m.PermanentFailures.WithLabelValues(res, h.id).Inc()
	case outcomeTemporary, outcomeError:
		m.HandlerRetries.WithLabelValues(res, h.id, string(out.kind)).Inc()
	}
}

// settleHandler folds a handler's outcome into its state (kopf's with_outcome), counts, logs and posts it,
// and says what the queue does with the key.
func (p *pass) settleHandler(h *handlerSpec, hs *handlerState, log *zap.Logger, out outcome) passResult {
	out = p.redacted(out, log)
	delay := out.delay
	if out.kind == outcomeError {
		delay = p.c.backoffFor(p.key)
	}
	out = h.lookahead(hs, out, p.now.Add(delay))
	hs.retries++
	p.count(h, out)
	now := p.now
	switch out.kind {
	case outcomeSuccess:
		hs.success, hs.stopped, hs.delayed, hs.message = true, now, time.Time{}, ""
		log.Info("handler succeeded")
		// Handlers that post their own progress events (a "Fulfilled") would only be echoed here.
		if p.reason != ReasonResume && !h.ownProgress {
			p.post(corev1.EventTypeNormal, EventHandlerSucceeded, fmt.Sprintf("Handler %q succeeded.", h.id))
		}
		return passResult{}
	case outcomePermanent:
		hs.failure, hs.stopped, hs.delayed, hs.message = true, now, time.Time{}, out.message
		log.Error("handler failed permanently", zap.String("error", out.message))
		p.post(corev1.EventTypeWarning, EventHandlerFailed, fmt.Sprintf("Handler %q failed permanently: %s", h.id, out.message))
		return passResult{}
	}
	hs.delayed, hs.message = now.Add(delay), out.message
	p.own.delaySetAt[h.id] = now
	res, eventType, verb := passResult{after: delay}, corev1.EventTypeNormal, "will run again"
	if out.kind == outcomeError {
		res, eventType, verb = passResult{backoff: true}, corev1.EventTypeWarning, "failed; retrying"
		log.Warn("handler failed; retrying with backoff", zap.Duration("delay", delay), zap.String("error", out.message))
	} else {
		log.Debug("handler asked for another pass", zap.Duration("delay", delay), zap.String("message", out.message))
	}
	// A retry event is posted when its message changes, not on every pass: waiting is normal, and a
	// request waiting an hour must not post 360 identical events.
	if p.own.lastRetry[h.id] != out.message && !(h.ownProgress && out.kind == outcomeTemporary) {
		p.own.lastRetry[h.id] = out.message
		p.post(eventType, EventHandlerRetrying, fmt.Sprintf("Handler %q %s in %s: %s", h.id, verb, delay.Round(time.Millisecond), out.message))
	}
	return res
}

// settleTimer folds a timer's outcome into its schedule, counts and logs it. A timer has no progress
// record and no backoff: an erroring timer keeps its cadence rather than hammering, so its next tick is
// its retry; a permanent failure stops it for this object.
func (p *pass) settleTimer(t *handlerSpec, ts *timerState, log *zap.Logger, out outcome) {
	out = p.redacted(out, log)
	p.count(t, out)
	switch out.kind {
	case outcomeSuccess:
		ts.retries = 0
		ts.due = p.now.Add(t.interval)
	case outcomeTemporary:
		ts.retries++
		ts.due = p.now.Add(out.delay)
	case outcomeError:
		ts.retries++
		ts.due = p.now.Add(t.interval)
		log.Warn("timer failed; retrying at the next tick", zap.String("error", out.message))
	case outcomePermanent:
		ts.stopped = true
		log.Error("timer failed permanently; stopped for this object", zap.String("error", out.message))
		p.post(corev1.EventTypeWarning, EventHandlerFailed, "Timer \""+t.id+"\" failed permanently: "+out.message)
	}
}

// redacted passes a run's error text through Options.Redact before it reaches the progress record, an
// event or a log line above DEBUG; the unmasked text is logged at DEBUG, once per run.
func (p *pass) redacted(out outcome, log *zap.Logger) outcome {
	redact := p.c.op.opts.Redact
	if redact == nil || out.message == "" {
		return out
	}
	if masked := redact(out.message); masked != out.message {
		log.Debug("handler error before redaction", zap.String("error", out.message))
		out.message = masked
	}
	return out
}
