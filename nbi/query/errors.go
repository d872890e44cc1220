package query

import "fmt"

// The HTTP statuses of the refusals, as net/http numbers them (net/http is not imported: this package
// stays light).
const (
	statusBadRequest            = 400
	statusRequestEntityTooLarge = 413
	statusUnsupportedMediaType  = 415
)

// Error is a refusal of what the caller sent: the HTTP status the API answers it with (400, 413, 415)
// and the message the caller reads, which is also the error's text.
type Error struct {
	Status  int
	Message string
}

func (e *Error) Error() string { return e.Message }

// HTTPAnswer is how the NBI answers it (nbi.Answerer): its status and message, no Retry-After.
func (e *Error) HTTPAnswer() (status int, detail string, retryAfter int) {
	return e.Status, e.Message, 0
}

func errorf(status int, format string, args ...any) *Error {
	return &Error{Status: status, Message: fmt.Sprintf(format, args...)}
}

// badRequest is a 400 carrying err's text.
func badRequest(err error) *Error {
	return &Error{Status: statusBadRequest, Message: err.Error()}
}
