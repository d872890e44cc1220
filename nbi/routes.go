package nbi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"runtime/debug"
	"strings"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

// The API root as the reference spells it, and the lowercase form O2IMS documents, served alike.
const (
	apiRoot      = "/O2ims_infrastructureProvisioning"
	apiRootLower = "/o2ims-infrastructureProvisioning"
	apiVersion   = "1.1.0" // O-RAN.WG6.TS.O2IMS-INTERFACE-R004-v10.00 protocol version 1.1
	fieldManager = "o2ims-nbi"
)

// RBAC verbs of the operations, for SubjectAccessReviews.
const (
	verbList   = "list"
	verbGet    = "get"
	verbCreate = "create"
	verbUpdate = "update"
	verbDelete = "delete"
	verbNone   = "" // authentication only (api_versions)
)

// routes registers both API roots. Anything else answers a JSON 404, a wrong method a JSON 405 with
// Allow (see serveHTTP); the old route with a trailing space ("provisioningRequests%20") is simply unknown.
func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	for _, root := range []string{apiRoot, apiRootLower} {
		collection := root + "/v1/provisioningRequests"
		named := collection + "/{provisioningRequestId}"
		mux.Handle("GET "+root+"/api_versions", s.route(verbNone, s.apiVersions))
		mux.Handle("GET "+root+"/v1/api_versions", s.route(verbNone, s.apiVersions))
		mux.Handle("GET "+collection, s.route(verbList, s.list))
		mux.Handle("POST "+collection, s.route(verbCreate, s.create))
		mux.Handle("GET "+named, s.route(verbGet, s.get))
		mux.Handle("PUT "+named, s.route(verbUpdate, s.replace))
		mux.Handle("DELETE "+named, s.route(verbDelete, s.remove))
	}
	return mux
}

// route wraps an operation: the caller is authorised for verb first (when authentication is on), and an
// error the operation returns is answered as ProblemDetails.
func (s *Server) route(verb string, op func(http.ResponseWriter, *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.auth != nil {
			name := ""
			if verb == verbGet || verb == verbUpdate || verb == verbDelete {
				name = r.PathValue("provisioningRequestId")
			}
			if err := s.auth.authorize(r.Context(), r, verb, name); err != nil {
				s.writeProblem(w, r, asProblem(err))
				return
			}
		}
		if err := op(w, r); err != nil {
			s.writeProblem(w, r, asProblem(err))
		}
	})
}

// recorder keeps what was answered, for the metrics and the log line.
type recorder struct {
	http.ResponseWriter
	code    int
	wrote   bool
	problem *problem
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
				s.writeProblem(rec, r, asProblem(fmt.Errorf("panic: %v", v)))
			}
		}
		s.observe(rec, r, route, time.Since(start))
	}()

	_, pattern := s.mux.Handler(r)
	if pattern != "" && r.URL.Path == cleanPath(r.URL.Path) {
		_, route, _ = strings.Cut(pattern, " ")
	}
	if _, ok := negotiate(r.Header.Get("Accept")); !ok {
		s.writeProblem(rec, r, newProblem(http.StatusNotAcceptable,
			"Accept %q allows no media type this API answers: application/json or application/yaml",
			truncate(r.Header.Get("Accept"), 100)))
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
		for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete} {
			probe := r.Clone(r.Context())
			probe.Method = m
			if _, p := s.mux.Handler(probe); p != "" {
				allowed = append(allowed, m)
			}
		}
	}
	if len(allowed) > 0 {
		s.writeProblem(w, r, newProblem(http.StatusMethodNotAllowed, "method %s is not allowed on %s; allowed: %s",
			methodLabel(r.Method), r.URL.Path, strings.Join(allowed, ", ")).
			withHeader("Allow", strings.Join(allowed, ", ")))
		return
	}
	s.writeProblem(w, r, newProblem(http.StatusNotFound, "%s is not a resource of this API", truncate(r.URL.Path, 200)))
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
	if code >= 500 {
		if rec.problem != nil && rec.problem.cause != nil {
			fields = append(fields, zap.NamedError("cause", rec.problem.cause))
		}
		s.log.Warn("northbound request failed", fields...)
		return
	}
	if ce := s.log.Check(zap.DebugLevel, "northbound request"); ce != nil {
		ce.Write(fields...)
	}
}

// apiVersions answers the ETSI GS NFV-SOL 013 ApiVersionInformation shape that O2IMS uses:
// uriPrefix is {apiRoot}/{apiName}/{apiMajorVersion} at both the API root and under v1.
func (s *Server) apiVersions(w http.ResponseWriter, r *http.Request) error {
	root, _, _ := strings.Cut(r.URL.Path[1:], "/")
	s.write(w, r, http.StatusOK, apiVersionInformation{
		URIPrefix:   "/" + root + "/v1",
		APIVersions: []apiVersionEntry{{Version: apiVersion}},
	})
	return nil
}

type apiVersionInformation struct {
	URIPrefix   string            `json:"uriPrefix"`
	APIVersions []apiVersionEntry `json:"apiVersions"`
}

type apiVersionEntry struct {
	Version string `json:"version"`
}

// list answers the requests in the Store, filtered, selected and paged (see paging.go).
func (s *Server) list(w http.ResponseWriter, r *http.Request) error {
	params, order, err := parseListQuery(r.URL.RawQuery)
	if err != nil {
		return newProblem(http.StatusBadRequest, "%v", err)
	}
	var f query.Filter
	if expr, ok := params["filter"]; ok {
		if f, err = query.ParseFilter(expr); err != nil {
			return newProblem(http.StatusBadRequest, "invalid attribute-based filtering expression: %v", err)
		}
	}
	sel, err := parseSelection(params)
	if err != nil {
		return newProblem(http.StatusBadRequest, "invalid attribute selector: %v", err)
	}
	marker := ""
	if m, ok := params["nextpage_opaque_marker"]; ok {
		if marker, err = decodeMarker(m); err != nil {
			return newProblem(http.StatusBadRequest, "%v", err)
		}
	}
	sorted, err := s.sorted()
	if err != nil {
		return storeUnavailable(err)
	}
	if f == nil && sel.complete() {
		if media, _ := negotiate(r.Header.Get("Accept")); media == mediaJSON {
			if body, last, more, ok := s.jsonPage(sorted, marker); ok {
				if more {
					w.Header().Set("Link", nextLink(r.URL, order, encodeMarker(last)))
				}
				body.writeTo(w, http.StatusOK)
				return nil
			}
		}
	}
	page, more := s.page(sorted, marker, f, sel)
	if more {
		w.Header().Set("Link", nextLink(r.URL, order, encodeMarker(page[len(page)-1].ProvisioningRequestData.ProvisioningRequestID)))
	}
	s.write(w, r, http.StatusOK, ProvisioningRequestList{Items: page})
	return nil
}

func storeUnavailable(err error) *problem {
	return newProblem(http.StatusServiceUnavailable, "the provisioning requests cannot be read right now; retry later").withCause(err)
}

// pathID is the id in a named route; one that is not a valid id cannot exist, so it is a 404.
func pathID(r *http.Request) (string, error) {
	id := r.PathValue("provisioningRequestId")
	if err := query.ValidateRequestID(id); err != nil {
		return "", newProblem(http.StatusNotFound, "provisioning request not found: %v", err)
	}
	return id, nil
}

// get answers one request from the Store: a request being deleted answers DELETING until it is gone.
func (s *Server) get(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	obj, found, err := s.store.Get(id)
	if err != nil {
		return storeUnavailable(err)
	}
	if !found {
		return newProblem(http.StatusNotFound, "provisioning request %q not found", id)
	}
	s.write(w, r, http.StatusOK, s.infoOf(obj))
	return nil
}

// create makes the ProvisioningRequest named after provisioningRequestId and answers 201 with the Info of
// the object the API server created.
func (s *Server) create(w http.ResponseWriter, r *http.Request) error {
	data, err := s.readData(w, r)
	if err != nil {
		return err
	}
	if err := query.ValidateRequestID(data.ID); err != nil {
		return newProblem(http.StatusBadRequest, "%v", err)
	}
	if err := s.checkChain(data); err != nil {
		return err
	}
	if s.dyn == nil {
		return fromAPIError(errClientNotConfigured, data.ID)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.APIVersion,
		"kind":       v1alpha1.Kind,
		"metadata":   map[string]any{"name": data.ID},
		"spec":       data.Spec(),
	}}
	ctx, cancel := s.ctxAPI(r.Context())
	defer cancel()
	created, err := s.dyn.Resource(v1alpha1.GVR).Create(ctx, obj, metav1.CreateOptions{FieldManager: fieldManager})
	if err != nil {
		return fromAPIError(err, data.ID)
	}
	w.Header().Set("Location", r.URL.Path+"/"+data.ID)
	s.write(w, r, http.StatusCreated, s.infoOf(created))
	return nil
}

// replace puts the body's data in place of the request's spec. It is one JSON patch replacing /spec
// rather than a read-modify-write: no resourceVersion conflicts with the operator's own frequent status
// writes, no lost update (the whole spec is the body), and one call. The id cannot change (422).
func (s *Server) replace(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	data, err := s.readData(w, r)
	if err != nil {
		return err
	}
	if data.ID != id {
		return newProblem(http.StatusUnprocessableEntity,
			"provisioningRequestId %q in the body differs from %q in the path: the id of a provisioning request cannot be changed",
			truncate(data.ID, 260), id)
	}
	if err := s.checkChain(data); err != nil {
		return err
	}
	if s.dyn == nil {
		return fromAPIError(errClientNotConfigured, id)
	}
	patch, err := json.Marshal([]map[string]any{{"op": "replace", "path": "/spec", "value": data.Spec()}})
	if err != nil {
		return err
	}
	ctx, cancel := s.ctxAPI(r.Context())
	defer cancel()
	updated, err := s.dyn.Resource(v1alpha1.GVR).Patch(ctx, id, types.JSONPatchType, patch,
		metav1.PatchOptions{FieldManager: fieldManager})
	if err != nil {
		return fromAPIError(err, id)
	}
	s.write(w, r, http.StatusOK, s.infoOf(updated))
	return nil
}

// remove asks the API server to delete the request and answers 202 with its Location to poll: it answers
// DELETING while finalizers hold it, then 404.
func (s *Server) remove(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	if s.dyn == nil {
		return fromAPIError(errClientNotConfigured, id)
	}
	ctx, cancel := s.ctxAPI(r.Context())
	defer cancel()
	if err := s.dyn.Resource(v1alpha1.GVR).Delete(ctx, id, metav1.DeleteOptions{}); err != nil {
		return fromAPIError(err, id)
	}
	w.Header().Set("Location", r.URL.Path)
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusAccepted)
	return nil
}
