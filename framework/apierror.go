package framework

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// ErrorClass says what kind of failure an API call met; the caller decides on it, never on the message.
type ErrorClass string

const (
	ClassConfig       ErrorClass = "config"       // no usable client config or token; nothing was sent
	ClassUnauthorized ErrorClass = "unauthorized" // 401/403
	ClassNotFound     ErrorClass = "notFound"
	ClassConflict     ErrorClass = "conflict"    // 409: already exists or a stale resourceVersion
	ClassInvalid      ErrorClass = "invalid"     // 400/422/405/406/413/415: the request itself is wrong
	ClassUnavailable  ErrorClass = "unavailable" // 429/5xx
	ClassProtocol     ErrorClass = "protocol"    // an answer we cannot understand
	ClassTransport    ErrorClass = "transport"   // no answer: connection, timeout, reset
	ClassFenced       ErrorClass = "fenced"      // not sent: the lease fence lapsed (fence.go)
)

// APIError is a classified API failure: whether another attempt can help, and whether a write may have
// landed (so a blind retry of a create could duplicate it; read back first).
type APIError struct {
	Op            string
	Class         ErrorClass
	Code          int
	Retryable     bool
	MayHaveLanded bool
	Err           error
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s: %s (%s)", e.Op, errText(e.Err), e.Summary())
}

// Summary says in words what the class means for a reader of a status message.
func (e *APIError) Summary() string {
	retry := "not retryable"
	if e.Retryable {
		retry = "retryable"
	}
	landed := "no write landed"
	if e.MayHaveLanded {
		landed = "a write may have landed"
	}
	code := ""
	if e.Code != 0 {
		code = fmt.Sprintf(" %d", e.Code)
	}
	return fmt.Sprintf("%s%s, %s, %s", e.Class, code, retry, landed)
}

func (e *APIError) Unwrap() error { return e.Err }

func errText(err error) string {
	if err == nil {
		return "unknown error"
	}
	return err.Error()
}

// ConfigError marks a failure to build a request at all (token unreadable, bad client settings).
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return "client configuration: " + e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// ClassifyAPIError wraps err from a Kubernetes API call. write tells whether the call could change state.
// A nil err stays nil.
func ClassifyAPIError(op string, write bool, err error) error {
	if err == nil {
		return nil
	}
	var already *APIError
	if errors.As(err, &already) {
		return already
	}
	e := &APIError{Op: op, Err: err}
	var cfgErr *ConfigError
	var status apierrors.APIStatus
	switch {
	case errors.As(err, &cfgErr):
		e.Class = ClassConfig
	case errors.As(err, &status) && status.Status().Code != 0:
		e.Code = int(status.Status().Code)
		classifyStatus(e, write)
	case errors.Is(err, ErrRedirectRefused) || runtime.IsNotRegisteredError(err) || isDecodeError(err):
		e.Class, e.MayHaveLanded = ClassProtocol, write
	case errors.Is(err, context.Canceled):
		// We gave up (shutdown or the caller's own deadline); the server may have acted on a write.
		e.Class, e.Retryable, e.MayHaveLanded = ClassTransport, true, write
	default:
		e.Class, e.Retryable, e.MayHaveLanded = ClassTransport, true, write
		if !isTransportError(err) {
			e.Class = ClassProtocol
			e.Retryable = false
		}
	}
	return e
}

func classifyStatus(e *APIError, write bool) {
	switch c := e.Code; {
	case c == 401:
		// A rotated token is re-read on the next request, so another attempt can help; nothing was done.
		e.Class, e.Retryable = ClassUnauthorized, true
	case c == 403:
		e.Class = ClassUnauthorized
	case c == 404 || c == 410:
		e.Class = ClassNotFound
	case c == 409:
		e.Class, e.Retryable = ClassConflict, true
	case c == 429:
		e.Class, e.Retryable = ClassUnavailable, true
	case c == 503:
		// Refused before processing (overload, APF); a write did not land.
		e.Class, e.Retryable = ClassUnavailable, true
	case c >= 500:
		// 500/502/504: the server may have committed the write before failing to answer.
		e.Class, e.Retryable, e.MayHaveLanded = ClassUnavailable, true, write
	case c >= 400:
		e.Class = ClassInvalid
	default:
		// 1xx/2xx/3xx with an error: a redirect we refused, or a body we could not read.
		e.Class, e.MayHaveLanded = ClassProtocol, write
	}
}

func isDecodeError(err error) bool {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	return errors.As(err, &se) || errors.As(err, &te)
}

func isTransportError(err error) bool {
	var netErr net.Error
	var urlErr *url.Error
	var opErr *net.OpError
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &netErr) || errors.As(err, &urlErr) ||
		errors.As(err, &opErr) || errors.Is(err, net.ErrClosed)
}

// IsClass tells whether err is an APIError of the class.
func IsClass(err error, class ErrorClass) bool {
	var e *APIError
	return errors.As(err, &e) && e.Class == class
}

// AsAPIError extracts the classified error.
func AsAPIError(err error) (*APIError, bool) {
	var e *APIError
	ok := errors.As(err, &e)
	return e, ok
}

// CheckNamedAnswer verifies that the answer to a named GET is the object asked for. client-go decodes
// whatever the server (or something between) sends: a PackageVariantList fills an Unstructured without
// error, a typed client given a list leaves its object empty. Taken at face value, such an answer reads
// as "someone else's object" or "nothing there", and a finalizer could go while the real object still
// exists. So a list, another kind (kind "" skips that check, for typed objects, whose kind is not kept),
// another name or namespace is a protocol error: retryable (the next answer may be right), nothing
// written. kind is the expected kind; namespace "" is a cluster-scoped object.
func CheckNamedAnswer(op string, obj runtime.Object, apiVersion, kind, namespace, name string) error {
	protocol := func(format string, a ...any) error {
		return &APIError{Op: op, Class: ClassProtocol, Retryable: true, Err: fmt.Errorf(format, a...)}
	}
	if obj == nil {
		return protocol("the answer to a named read holds no object")
	}
	if meta.IsListType(obj) {
		return protocol("the answer to a named read is a list (%s)", obj.GetObjectKind().GroupVersionKind().Kind)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return protocol("the answer to a named read is not an object: %v", err)
	}
	if kind != "" {
		gvk := obj.GetObjectKind().GroupVersionKind()
		if gvk.Kind != kind || (apiVersion != "" && gvk.GroupVersion().String() != apiVersion) {
			return protocol("the answer to a named read is a %q of %q, not a %q of %q", gvk.Kind, gvk.GroupVersion().String(), kind, apiVersion)
		}
	}
	if m.GetName() != name || m.GetNamespace() != namespace {
		return protocol("the answer to a named read is %q, not %q", objectPath(m.GetNamespace(), m.GetName()), objectPath(namespace, name))
	}
	return nil
}

func objectPath(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
