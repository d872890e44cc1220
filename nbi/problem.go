package nbi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ProblemDetails is the body of every failed request of the provisioning API, and of any path no API
// claims. The reference types status as a string — the message — where RFC 7807 has the integer code;
// title (the HTTP reason phrase), detail, instance (the request path) and time (RFC 3339, UTC) travel
// beside it, which the reference allows since it does not close the object. An API whose reference
// defines another shape renders it from this one (a Renderer).
type ProblemDetails struct {
	Status   string `json:"status"`
	Title    string `json:"title"`
	Detail   string `json:"detail"`
	Instance string `json:"instance"`
	Time     string `json:"time"`
}

// Renderer writes a ProblemDetails in the shape one API's reference defines, with code as its status.
type Renderer func(w http.ResponseWriter, r *http.Request, code int, pd ProblemDetails)

// Unservable is all an unforeseen failure tells the caller; the cause goes to the log only.
const Unservable = "the request could not be served"

// Problem is an error that knows its answer: the code, the message the caller reads and, separately, the
// cause the log records.
type Problem struct {
	Code    int
	Message string
	Cause   error
	Header  http.Header
}

func (p *Problem) Error() string {
	if p.Cause != nil {
		return fmt.Sprintf("%d %s: %v", p.Code, p.Message, p.Cause)
	}
	return fmt.Sprintf("%d %s", p.Code, p.Message)
}

func (p *Problem) Unwrap() error { return p.Cause }

// NewProblem is a problem answering code with the formatted message.
func NewProblem(code int, format string, args ...any) *Problem {
	return &Problem{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithCause records err for the log (never for the caller).
func (p *Problem) WithCause(err error) *Problem { p.Cause = err; return p }

// WithHeader sets a header of the answer.
func (p *Problem) WithHeader(key, value string) *Problem {
	if p.Header == nil {
		p.Header = http.Header{}
	}
	p.Header.Set(key, value)
	return p
}

// Answerer is an error that knows the answer it deserves, from a package below the shell that does not
// import it (nbi/query's refusals, nbi/callback's, the subscription store's): the HTTP status, the detail
// the caller reads, and the seconds after which a retry may succeed (0: no Retry-After). One mapping for
// every API that meets the error, rather than one copy each.
type Answerer interface {
	error
	HTTPAnswer() (status int, detail string, retryAfter int)
}

// AsProblem turns any error into the answer it deserves: a *Problem as it is, an Answerer with its status,
// detail and Retry-After, anything else an unforeseen 500 whose cause is logged and never echoed.
func AsProblem(err error) *Problem {
	var p *Problem
	if errors.As(err, &p) {
		return p
	}
	var a Answerer
	if errors.As(err, &a) {
		code, detail, retry := a.HTTPAnswer()
		p = &Problem{Code: code, Message: detail}
		if retry > 0 {
			p.WithHeader("Retry-After", strconv.Itoa(retry))
		}
		return p
	}
	return &Problem{Code: http.StatusInternalServerError, Message: Unservable, Cause: err}
}

// writeProblem answers p in the shape of the API whose root the path is under (Mux.Root), in the format
// the caller accepts.
func (s *Server) writeProblem(w http.ResponseWriter, r *http.Request, p *Problem) {
	for k, vs := range p.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	body := ProblemDetails{
		Status:   p.Message,
		Title:    http.StatusText(p.Code),
		Detail:   p.Message,
		Instance: r.URL.Path,
		Time:     time.Now().UTC().Format(time.RFC3339),
	}
	if rec, ok := w.(*recorder); ok {
		rec.problem = p
	}
	s.rendererFor(r.URL.Path)(w, r, p.Code, body)
}

// rendererFor is the Renderer of the API root path is under; the provisioning reference's shape for
// a path no API with a shape of its own claims.
func (s *Server) rendererFor(path string) Renderer {
	for _, root := range s.roots {
		if root.render != nil && (strings.HasPrefix(path, root.path+"/") || path == root.path) {
			return root.render
		}
	}
	return s.writeDetails
}

// writeDetails is the default Renderer: ProblemDetails as it is.
func (s *Server) writeDetails(w http.ResponseWriter, r *http.Request, code int, pd ProblemDetails) {
	s.write(w, r, code, pd)
}
