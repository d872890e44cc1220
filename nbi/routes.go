package nbi

import (
	"fmt"
	"net/http"
	"path"
	"runtime/debug"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/o2ims-operator/o2ims-operator/nbi/caller"
)

// What a route asks of its caller. VerbNone: authentication only (api_versions). Any other: the caller
// is authorised for the request's method (lowercased, as the API server names non-resource verbs) on its
// path as a non-resource URL, the one SubjectAccessReview model of every route (the O2IMS roles grant
// them, nbi.Roles); the constant documents the operation's kind.
const (
	VerbList   = "list"
	VerbGet    = "get"
	VerbCreate = "create"
	VerbUpdate = "update"
	VerbDelete = "delete"
	VerbNone   = "" // authentication only (api_versions)
)

// An API is one northbound API on the shared listener: a handler type that registers its routes on the
// server's mux when the server is built (New).
type API interface {
	Register(m *Mux)
}

// Op is one operation of an API: an error it returns is answered as the API's ProblemDetails.
type Op func(http.ResponseWriter, *http.Request) error

// Mux is what an API registers on and answers through: the server's routes, configuration and log.
type Mux struct{ s *Server }

// root is an API root: its paths' problems are rendered by render (nil: ProblemDetails as it is).
type root struct {
	path   string
	render Renderer
	majors []Major // Versioned: the major versions served under it (none: no Version header check)
}

// Root claims an API root: every problem answered under it, unmatched paths included, is rendered by
// render (nil: ProblemDetails as it is). The first root registered is the one the liveness probe reads
// api_versions from.
func (m *Mux) Root(path string, render Renderer) {
	m.s.roots = append(m.s.roots, root{path: path, render: render})
}

// Handle routes pattern (a ServeMux method pattern) to op: the caller is authorised for verb first
// (when authentication is on), and an error op returns is answered as ProblemDetails.
func (m *Mux) Handle(pattern, verb string, op Op) { m.s.mux.Handle(pattern, m.s.route(verb, op)) }

// HandleURL routes pattern to op with the caller authorised for the request's method on its path as a
// non-resource URL (a ClusterRole's nonResourceURLs, e.g. verbs [post]), as every route is: for a caller
// that must reach this route and nothing else, as Alertmanager's webhook.
func (m *Mux) HandleURL(pattern string, op Op) { m.s.mux.Handle(pattern, m.s.route(VerbCreate, op)) }

// AuthorizeAs has paths under prefix authorised as the same paths under canonical (an API root served
// under two spellings needs one grant). The longest prefix registered wins.
func (m *Mux) AuthorizeAs(prefix, canonical string) {
	if m.s.auth != nil && prefix != canonical {
		m.s.auth.authorizeAs(prefix, canonical)
	}
}

// Config is the server's configuration (page size, API-server call timeout, the chain's rules).
func (m *Mux) Config() Config { return m.s.cfg }

// Log is the server's logger.
func (m *Mux) Log() *zap.Logger { return m.s.log }

// Write answers code with body encoded as the caller accepts it (see Server.write).
func (m *Mux) Write(w http.ResponseWriter, r *http.Request, code int, body any) {
	m.s.write(w, r, code, body)
}

// route wraps an operation: the caller is authenticated, and authorised unless verb is VerbNone, first
// (when authentication is on) and travels in the request's context (nbi/caller) to the code that writes
// for it; an error the operation returns is answered as ProblemDetails.
func (s *Server) route(verb string, op Op) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.auth != nil {
			id, err := s.auth.check(r, verb != VerbNone)
			if err != nil {
				s.writeProblem(w, r, AsProblem(err))
				return
			}
			if rec, ok := w.(*recorder); ok {
				rec.caller = &id.Caller
			}
			r = r.WithContext(caller.With(r.Context(), id.Caller))
		}
		if err := op(w, r); err != nil {
			s.writeProblem(w, r, AsProblem(err))
		}
	})
}

// recorder keeps what was answered, for the metrics and the log line.
type recorder struct {
	http.ResponseWriter
	code    int
	wrote   bool
	problem *Problem
	caller  *caller.Caller // who the request was authenticated as (nil: authentication is off)
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.code, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if !r.wrote {
		r.code, r.wrote = http.StatusOK, true
	}
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// serveHTTP is the outermost handler: content negotiation, routing with JSON 404/405, recovery of
// panics as a 500 that says nothing of the cause, then the metrics and one log line per request.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w}
	route := "unmatched"
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("a request panicked", zap.Any("panic", v), zap.ByteString("stack", debug.Stack()),
				zap.String("method", r.Method), zap.String("route", route))
			if !rec.wrote {
				s.writeProblem(rec, r, AsProblem(fmt.Errorf("panic: %v", v)))
			}
		}
		s.observe(rec, r, route, time.Since(start))
	}()

	_, pattern := s.mux.Handler(r)
	if pattern != "" && r.URL.Path == cleanPath(r.URL.Path) {
		_, route, _ = strings.Cut(pattern, " ")
	}
	if _, ok := Negotiate(r.Header.Get("Accept")); !ok {
		s.writeProblem(rec, r, NewProblem(http.StatusNotAcceptable,
			"Accept %q allows no media type this API answers: application/json or application/yaml",
			Truncate(r.Header.Get("Accept"), 100)))
		return
	}
	if p := s.checkVersion(rec, r); p != nil {
		s.writeProblem(rec, r, p)
		return
	}
	if route == "unmatched" {
		s.unmatched(rec, r)
		return
	}
	s.mux.ServeHTTP(rec, r) // routes again, setting the path values
}

// cleanPath is the canonical form ServeMux would redirect to; a request not in it is not one of ours.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	np := path.Clean(p)
	if strings.HasSuffix(p, "/") && np != "/" {
		np += "/"
	}
	return np
}

// unmatched answers a request no route takes: 405 with Allow when the path exists under other methods,
// 404 otherwise. ServeMux's own answers would be text/plain.
func (s *Server) unmatched(w http.ResponseWriter, r *http.Request) {
	var allowed []string
	if r.URL.Path == cleanPath(r.URL.Path) {
		for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			probe := r.Clone(r.Context())
			probe.Method = m
			if _, p := s.mux.Handler(probe); p != "" {
				allowed = append(allowed, m)
			}
		}
	}
	if len(allowed) > 0 {
		s.writeProblem(w, r, NewProblem(http.StatusMethodNotAllowed, "method %s is not allowed on %s; allowed: %s",
			methodLabel(r.Method), r.URL.Path, strings.Join(allowed, ", ")).
			WithHeader("Allow", strings.Join(allowed, ", ")))
		return
	}
	s.writeProblem(w, r, NewProblem(http.StatusNotFound, "%s is not a resource of this API", Truncate(r.URL.Path, 200)))
}

// observe records the metrics and writes the request's log line: debug for every request, a warning
// with the cause for a 5xx. Neither holds a token or a body.
func (s *Server) observe(rec *recorder, r *http.Request, route string, took time.Duration) {
	code := rec.code
	if !rec.wrote {
		code = http.StatusOK
	}
	method := methodLabel(r.Method)
	s.metrics.requests.WithLabelValues(route, method, fmt.Sprint(code)).Inc()
	s.metrics.duration.WithLabelValues(route, method).Observe(took.Seconds())
	fields := []zap.Field{zap.String("method", method), zap.String("route", route), zap.Int("code", code), zap.Duration("duration", took)}
	if rec.caller != nil {
		fields = append(fields, describe(*rec.caller)...)
	}
	if code >= 500 {
		if rec.problem != nil && rec.problem.Cause != nil {
			fields = append(fields, zap.NamedError("cause", rec.problem.Cause))
		}
		s.log.Warn("northbound request failed", fields...)
		return
	}
	// A write (accepted or not) names its caller at INFO: the API server's audit log sees the operator.
	if rec.caller != nil && method != http.MethodGet && method != http.MethodHead && code < 500 {
		s.log.Info("northbound write", fields...)
		return
	}
	if ce := s.log.Check(zap.DebugLevel, "northbound request"); ce != nil {
		ce.Write(fields...)
	}
}

// APIVersionInformation is the ETSI GS NFV-SOL 013 ApiVersionInformation shape O2IMS uses for
// api_versions: uriPrefix is {apiRoot}/{apiName}/{apiMajorVersion}.
type APIVersionInformation struct {
	URIPrefix   string            `json:"uriPrefix"`
	APIVersions []APIVersionEntry `json:"apiVersions"`
}

// APIVersionEntry is one version of an APIVersionInformation.
type APIVersionEntry struct {
	Version string `json:"version"`
}
