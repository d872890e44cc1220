package nbi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

// ProblemDetails is the body of every failed request. The reference types status as a string — the
// message — where RFC 7807 has the integer code; title (the HTTP reason phrase), detail, instance (the
// request path) and time (RFC 3339, UTC) travel beside it, which the reference allows since it does not
// close the object.
type ProblemDetails struct {
	Status   string `json:"status"`
	Title    string `json:"title"`
	Detail   string `json:"detail"`
	Instance string `json:"instance"`
	Time     string `json:"time"`
}

// unservable is all an unforeseen failure tells the caller; the cause goes to the log only.
const unservable = "the request could not be served"

// problem is an error that knows its answer: the code, the message the caller reads and, separately, the
// cause the log records.
type problem struct {
	code    int
	message string
	cause   error
	header  http.Header
}

func (p *problem) Error() string {
	if p.cause != nil {
		return fmt.Sprintf("%d %s: %v", p.code, p.message, p.cause)
	}
	return fmt.Sprintf("%d %s", p.code, p.message)
}

func (p *problem) Unwrap() error { return p.cause }

func newProblem(code int, format string, args ...any) *problem {
	return &problem{code: code, message: fmt.Sprintf(format, args...)}
}

func (p *problem) withCause(err error) *problem { p.cause = err; return p }

func (p *problem) withHeader(key, value string) *problem {
	if p.header == nil {
		p.header = http.Header{}
	}
	p.header.Set(key, value)
	return p
}

// asProblem turns any error into the answer it deserves: a *problem as it is, a refusal of what the
// caller sent (*query.Error) with its status and message, anything else an unforeseen 500 whose cause is
// logged and never echoed.
func asProblem(err error) *problem {
	var p *problem
	if errors.As(err, &p) {
		return p
	}
	var q *query.Error
	if errors.As(err, &q) {
		return &problem{code: q.Status, message: q.Message}
	}
	return &problem{code: http.StatusInternalServerError, message: unservable, cause: err}
}

// errClientNotConfigured stands for a write the operator cannot send: no Kubernetes client was given.
var errClientNotConfigured = errors.New("the Kubernetes API client is not configured")

// fromAPIError maps what the API server (or the way to it) answered a write with. What the caller got
// wrong travels through as 400/404/409; the caller is not told about the API server's own faults (5xx,
// transport, timeout, our service account's missing permissions) beyond a 502, and rate limiting becomes
// a 503 the caller may retry.
func fromAPIError(err error, id string) *problem {
	if err == nil {
		return nil
	}
	if errors.Is(err, errClientNotConfigured) {
		return newProblem(http.StatusServiceUnavailable,
			"the Kubernetes API server cannot be reached: its client is not configured").withCause(err)
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		st := status.Status()
		switch st.Code {
		case http.StatusBadRequest, http.StatusUnprocessableEntity:
			return newProblem(http.StatusBadRequest, "the Kubernetes API server rejected provisioning request %q: %s",
				id, st.Message).withCause(err)
		case http.StatusConflict:
			if apierrors.IsAlreadyExists(err) {
				return newProblem(http.StatusConflict, "provisioning request %q already exists", id).withCause(err)
			}
			return newProblem(http.StatusConflict, "provisioning request %q was changed concurrently: %s",
				id, st.Message).withCause(err)
		case http.StatusNotFound:
			return newProblem(http.StatusNotFound, "provisioning request %q not found", id).withCause(err)
		case http.StatusTooManyRequests:
			p := newProblem(http.StatusServiceUnavailable,
				"the Kubernetes API server is busy; retry later").withCause(err)
			if secs, ok := apierrors.SuggestsClientDelay(err); ok && secs > 0 {
				p.withHeader("Retry-After", strconv.Itoa(secs))
			}
			return p
		}
	}
	return newProblem(http.StatusBadGateway,
		"the Kubernetes API server did not complete the request").withCause(err)
}

// writeProblem answers p in the format the caller accepts.
func (s *Server) writeProblem(w http.ResponseWriter, r *http.Request, p *problem) {
	for k, vs := range p.header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	body := ProblemDetails{
		Status:   p.message,
		Title:    http.StatusText(p.code),
		Detail:   p.message,
		Instance: r.URL.Path,
		Time:     time.Now().UTC().Format(time.RFC3339),
	}
	if rec, ok := w.(*recorder); ok {
		rec.problem = p
	}
	if strings.HasPrefix(r.URL.Path, inventoryRoot+"/") || r.URL.Path == inventoryRoot {
		s.writeInventoryProblem(w, r, p.code, body) // inventory_problem.go: its reference's shape
		return
	}
	s.write(w, r, p.code, body)
}

// ctxAPI bounds one API-server call by APITimeout.
func (s *Server) ctxAPI(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.cfg.APITimeout)
}
