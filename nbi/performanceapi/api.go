// Package performanceapi is the O2IMS Infrastructure Performance API 2.0.0 (clause 3.7) on the shared
// northbound listener: api_versions, measurement jobs (create, list with filter, attribute selectors and
// paging through the shell's one list pipeline, get, delete) and the performance service configuration
// (get, put, merge patch). The jobs are package performance's own: stored in one ConfigMap, collected from
// Prometheus by the leader's evaluator; a job's report is its own representation.
package performanceapi

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
	"github.com/o2ims-operator/o2ims-operator/performance"
	"github.com/o2ims-operator/o2ims-operator/subscriptions"
)

const (
	// RootSpec is the API's root as the O2IMS specification spells it (clause 3.7.3), the canonical one:
	// openshift-kni/oran-o2ims serves no performance API, so no other spelling predates it.
	RootSpec = "/O2ims_infrastructurePerformance"
	// Root is the spelling oran-o2ims gives its other APIs, an alias for SMOs built on them.
	Root = "/o2ims-infrastructurePerformance"
)

// Roots are the spellings the API is served under; each is an alias of the other.
var Roots = []string{RootSpec, Root}

// Majors: only 2.0.0 (Table 3.7.2-1). 1.x had no delete and other data types, and no implementation
// of it exists for an SMO to have been built on.
var Majors = []nbi.Major{{Segment: "v2", Versions: []string{"2.0.0"}}}

// API is the performance API over store, bounded by bounds.
type API struct {
	store   *performance.Store
	bounds  performance.Bounds
	now     func() time.Time
	mux     *nbi.Mux
	subs    *subscriptions.SubscriptionStore // nil: no performanceSubscriptions
	created func()
}

// New is the performance API answering from store.
func New(store *performance.Store, bounds performance.Bounds) *API {
	return &API{store: store, bounds: bounds, now: time.Now}
}

// Unserved is the API of an operator without Prometheus or inventory: no route, but its root's errors
// (404, 405, 406) answer in the common ProblemDetails.
func Unserved() *API { return &API{} }

// Register claims both spellings (one grant covers both: the lowercase one is authorised as the spec's).
func (a *API) Register(m *nbi.Mux) {
	a.mux = m
	m.AuthorizeAs(Root, RootSpec)
	if a.store == nil {
		for _, r := range Roots {
			m.Root(r, nbi.WriteCommonProblem)
		}
		return
	}
	m.Versioned(Roots, nbi.WriteCommonProblem, Majors, a.routes)
}

func (a *API) routes(v string, _ nbi.Major) {
	m := a.mux
	m.Handle("GET "+v+"/measurementJobs", nbi.VerbList, a.list)
	m.Handle("POST "+v+"/measurementJobs", nbi.VerbCreate, a.create)
	m.Handle("GET "+v+"/measurementJobs/{measurementJobId}", nbi.VerbList, a.get)
	m.Handle("DELETE "+v+"/measurementJobs/{measurementJobId}", nbi.VerbDelete, a.delete)
	m.Handle("GET "+v+"/performanceServiceConfiguration", nbi.VerbList, a.getConfig)
	m.Handle("PUT "+v+"/performanceServiceConfiguration", nbi.VerbUpdate, a.putConfig)
	m.Handle("PATCH "+v+"/performanceServiceConfiguration", nbi.VerbUpdate, a.patchConfig)
	if a.subs != nil {
		a.subscriptionRoutes(v)
	}
}

// load reads the stored jobs within the API-server call timeout.
func (a *API) load(ctx context.Context) (*performance.State, error) {
	ctx, cancel := a.mux.Config().CallTimeout(ctx)
	defer cancel()
	s, err := a.store.Load(ctx)
	if err != nil {
		return nil, storeError(err)
	}
	return s, nil
}

// update changes the store; a Problem change returns answers as it is.
func (a *API) update(ctx context.Context, change func(*performance.State) (bool, error)) (*performance.State, error) {
	ctx, cancel := a.mux.Config().CallTimeout(ctx)
	defer cancel()
	s, err := a.store.Update(ctx, change)
	var p *nbi.Problem
	if errors.As(err, &p) {
		return nil, p
	}
	if err != nil {
		return nil, storeError(err)
	}
	return s, nil
}

// storeError: the API server (the jobs' store) failed; busy is retryable.
func storeError(err error) *nbi.Problem {
	if apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsConflict(err) {
		return nbi.NewProblem(http.StatusServiceUnavailable, "the Kubernetes API server is busy; retry later").
			WithHeader("Retry-After", "1").WithCause(err)
	}
	return nbi.NewProblem(http.StatusBadGateway, "the measurement jobs could not be read or written").WithCause(err)
}

// list answers the jobs through the shell's list pipeline. Without all_fields, fields or exclude_fields
// (exclude_default, assumed when no selector is given) measuredResources and collectedMeasurements are
// left out (clause 3.7.4.2.3.2).
func (a *API) list(w http.ResponseWriter, r *http.Request) error {
	q, err := nbi.ParseList(r.URL.RawQuery, nbi.SchemaListRules(performance.Schema))
	if err != nil {
		return err
	}
	s, err := a.load(r.Context())
	if err != nil {
		return err
	}
	params, _ := url.ParseQuery(r.URL.RawQuery)
	_, all := params["all_fields"]
	trimDefault := !all && q.Selection.Fields == nil && q.Selection.Exclude == nil
	var match func(*performance.Job) bool
	if q.Filter != nil {
		match = func(j *performance.Job) bool { return q.Filter.Match(j.Attrs()) }
	}
	candidates := nbi.After(s.Jobs, q.Marker, func(j *performance.Job) string { return j.ID })
	page, more := nbi.Page(candidates, a.mux.Config().PageSize, match, func(j *performance.Job) map[string]any {
		attrs := nbi.ApplySchema(q.Selection, performance.Schema, j.Attrs())
		if trimDefault {
			for _, k := range performance.DefaultExcluded {
				delete(attrs, k)
			}
		}
		return attrs
	})
	if more {
		w.Header().Set("Link", q.NextLink(r.URL, page[len(page)-1]["performanceMeasurementJobId"].(string)))
	}
	a.mux.Write(w, r, http.StatusOK, page)
	return nil
}

func (a *API) get(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	s, err := a.load(r.Context())
	if err != nil {
		return err
	}
	j, ok := s.Get(id)
	if !ok {
		return nbi.NewProblem(http.StatusNotFound, "measurement job %q not found", id)
	}
	a.mux.Write(w, r, http.StatusOK, j.Attrs())
	return nil
}

// create stores a new job (201 with its MeasurementJob and Location); beyond MaxJobs a 409.
func (a *API) create(w http.ResponseWriter, r *http.Request) error {
	data, err := readBody(r, query.MediaJSON)
	if err != nil {
		return err
	}
	req, err := performance.ParseRequest(data, a.bounds)
	if err != nil {
		return nbi.NewProblem(http.StatusBadRequest, "%v", err)
	}
	job := performance.NewJob(req, a.now())
	if _, err := a.update(r.Context(), func(s *performance.State) (bool, error) {
		if len(s.Jobs) >= a.bounds.MaxJobs {
			return false, nbi.NewProblem(http.StatusConflict, "%d measurement jobs exist, the most kept (%s); delete one first",
				len(s.Jobs), performance.EnvMaxJobs)
		}
		s.Put(job)
		return true, nil
	}); err != nil {
		return err
	}
	w.Header().Set("Location", r.URL.Path+"/"+job.ID)
	a.mux.Write(w, r, http.StatusCreated, job.Attrs())
	return nil
}

// delete removes a job and its collected values (204). Clause 3.7.4.3.3.5 answers 409 for a job not
// suspended, but the API defines no suspension: a job is deleted ACTIVE, its measurements with it (it
// is never left DEPRECATED, as no store outlives it); no job is preinstalled, so none is a 403.
func (a *API) delete(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	if _, err := a.update(r.Context(), func(s *performance.State) (bool, error) {
		if !s.Delete(id) {
			return false, nbi.NewProblem(http.StatusNotFound, "measurement job %q not found", id)
		}
		return true, nil
	}); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// pathID is the job id of the route; one that is not a lowercase UUID cannot exist, so it is a 404.
func pathID(r *http.Request) (string, error) {
	id := r.PathValue("measurementJobId")
	if u, err := uuid.Parse(id); err != nil || u.String() != id {
		return "", nbi.NewProblem(http.StatusNotFound, "measurement job %q not found: ids are lowercase UUIDs", nbi.Truncate(id, 100))
	}
	return id, nil
}
