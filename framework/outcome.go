package framework

import (
	"errors"
	"fmt"
	"time"
)

// A handler returns nil when its work is done, or one of these errors; any other error is retried with a
// capped exponential backoff. Outcomes are data: the framework interprets them in one place (pass.go).

// TemporaryError asks for another pass after Delay: the handler is waiting for something (rendering, a
// cluster, a host) or hit a failure that time will fix.
type TemporaryError struct {
	Message string
	Delay   time.Duration
	Err     error
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
		if d <= 0 {
			d = defaultTemporaryDelay
		}
		return outcome{kind: outcomeTemporary, delay: d, message: err.Error(), err: err}
	}
	return outcome{kind: outcomeError, message: err.Error(), err: err}
}
