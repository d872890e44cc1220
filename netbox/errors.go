package netbox

import (
	"errors"
	"fmt"
	"strings"
)

// Kind classifies an Error so callers can decide between "fix the
// configuration", "retry later" and "pick another host" without parsing text.
type Kind string

const (
	KindConfig       Kind = "config"       // bad settings (env, token file, CA file)
	KindSchema       Kind = "schema"       // NetBox custom fields / selector do not fit: a configuration error, never "no capacity"
	KindUnsupported  Kind = "unsupported"  // NetBox too old
	KindInvalid      Kind = "invalid"      // a caller passed something unusable (empty uid, device without ETag…)
	KindUnauthorized Kind = "unauthorized" // HTTP 401
	KindForbidden    Kind = "forbidden"    // HTTP 403 (NetBox's answer to a bad or missing token)
	KindNotFound     Kind = "notFound"     // HTTP 404
	KindBadRequest   Kind = "badRequest"   // HTTP 400 (NetBox validation)
	KindConflict     Kind = "conflict"     // HTTP 409
	KindPrecondition Kind = "precondition" // HTTP 412, or the device changed under us
	KindRateLimited  Kind = "rateLimited"  // HTTP 429
	KindServer       Kind = "server"       // HTTP 5xx
	KindTimeout      Kind = "timeout"      // per-call timeout or caller deadline
	KindCanceled     Kind = "canceled"     // caller canceled the context
	KindTransport    Kind = "transport"    // connection, TLS, DNS…
	KindProtocol     Kind = "protocol"     // undecodable answer, redirect, unexpected status
	KindUnavailable  Kind = "unavailable"  // not sent: NetBox has not passed its check since an outage at start (availability.go)
	KindFenced       Kind = "fenced"       // not sent: a write this process may no longer make (Config.WriteFence)
)

// Error is the only error type the client returns (besides ErrNoFreeHost).
// Its text is one line and never contains the API token or BMC data.
type Error struct {
	Kind   Kind
	Op     string // client operation: check, schema, find, get, claim, quarantine, release, config…
	Status int    // HTTP status when NetBox answered, else 0
	// Retryable: the same call may succeed later without a configuration change.
	Retryable bool
	// MayHaveLanded: a write was sent and its outcome is unknown (timeout, 5xx,
	// lost answer). The write is never replayed; re-read the device instead.
	MayHaveLanded bool
	Err           error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("netbox ")
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteString(": ")
	}
	b.WriteString(string(e.Kind))
	if e.Status != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.Status)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.MayHaveLanded {
		b.WriteString(" (the write may have been applied; it is not replayed)")
	}
	// Defence in depth: whatever an inner error says, the text stays one line
	// and anything token-shaped is masked.
	return sanitizeText(b.String(), 1000)
}

func (e *Error) Unwrap() error { return e.Err }

// ErrNoFreeHost: no staged, unowned pool device matches the selector right now.
var ErrNoFreeHost = errors.New("netbox: no free host matches the selector")

// IsKind reports whether err is an *Error of the given kind.
func IsKind(err error, k Kind) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == k
}

func newError(kind Kind, op string, format string, args ...any) *Error {
	return &Error{Kind: kind, Op: op, Err: fmt.Errorf(format, args...)}
}
