package alarmsapi

import (
	"context"
	"net/http"

	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/o2ims-operator/o2ims-operator/alarms"
	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
	"github.com/o2ims-operator/o2ims-operator/subscriptions"
)

const (
	// Root is the monitoring API's root as oran-o2ims spells it.
	Root = "/o2ims-infrastructureMonitoring"
	// RootSpec is the root as the O2IMS specification spells it (clause 3.3.3: O2ims_infrastructureMonitoring).
	RootSpec = "/O2ims_infrastructureMonitoring"
)

// Roots are the spellings the monitoring API is served under; each is an alias of the other.
var Roots = []string{Root, RootSpec}

// Majors are the monitoring API's major versions and the versions each serves (O2IMS Table 3.3.2-1).
// v1 answers oran-o2ims's 1.x AlarmEventRecord, v2 the spec's 2.0.0 one (alarms.AttrsV2: objectTypeId,
// objectId, objectClass, alarmAcknowledgeTime); AlarmSubscriptionInfo has the same members in both.
var Majors = []nbi.Major{
	{Segment: "v1", Versions: []string{"1.0.0", "1.1.0", "1.2.0"}},
	{Segment: "v2", Versions: []string{"2.0.0"}},
}

// API is the alarms API over store; metrics (may be nil) counts the alarms cleared by hand.
type API struct {
	store   *alarms.Store
	metrics *alarms.Metrics
	alerts  *alarms.Receiver                 // nil: no Alertmanager receiver
	subs    *subscriptions.SubscriptionStore // nil: no alarmSubscriptions
	created func()
	mux     *nbi.Mux
}

// New is the alarms API answering from store.
func New(store *alarms.Store, metrics *alarms.Metrics) *API {
	return &API{store: store, metrics: metrics}
}

// Unserved is the alarms API of an operator without an inventory (and so without alarms): no route, but
// its root's errors (404, 405, 406) still answer in the reference's ProblemDetails.
func Unserved() *API { return &API{} }

// Register claims both spellings of the root (their errors in the reference's ProblemDetails) and adds
// the routes under each major version: one implementation behind every alias.
func (a *API) Register(m *nbi.Mux) {
	a.mux = m
	if a.store == nil {
		for _, r := range Roots {
			m.Root(r, nbi.WriteCommonProblem)
		}
		return
	}
	m.Versioned(Roots, nbi.WriteCommonProblem, Majors, a.routes)
	if a.alerts != nil {
		m.HandleURL("POST "+AlertmanagerPath, a.receive)
	}
}

// routes adds the monitoring routes under prefix ({root}/v1 or {root}/v2).
func (a *API) routes(prefix string, mj nbi.Major) {
	m, v := a.mux, prefix
	sh := shapeOf(mj)
	m.Handle("GET "+v+"/alarms", nbi.VerbList, func(w http.ResponseWriter, r *http.Request) error { return a.list(w, r, sh) })
	m.Handle("GET "+v+"/alarms/{alarmEventRecordId}", nbi.VerbList, func(w http.ResponseWriter, r *http.Request) error { return a.get(w, r, sh) })
	m.Handle("PATCH "+v+"/alarms/{alarmEventRecordId}", nbi.VerbUpdate, a.patch)
	m.Handle("GET "+v+"/alarmServiceConfiguration", nbi.VerbList, a.getConfig)
	m.Handle("PUT "+v+"/alarmServiceConfiguration", nbi.VerbUpdate, a.putConfig)
	m.Handle("PATCH "+v+"/alarmServiceConfiguration", nbi.VerbUpdate, a.patchConfig)
	a.taskRoutes(v)
	if a.subs != nil {
		a.registerSubscriptions(m, v, mj.Segment)
	}
}

// load reads the stored alarms within the API-server call timeout.
func (a *API) load(ctx context.Context) (*alarms.State, error) {
	ctx, cancel := a.mux.Config().CallTimeout(ctx)
	defer cancel()
	s, err := a.store.Load(ctx)
	if err != nil {
		return nil, storeError(err)
	}
	return s, nil
}

// storeError: the API server (the alarms' store) failed; busy is retryable.
func storeError(err error) *nbi.Problem {
	if apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsConflict(err) {
		return nbi.NewProblem(http.StatusServiceUnavailable, "the Kubernetes API server is busy; retry later").
			WithHeader("Retry-After", "1").WithCause(err)
	}
	return nbi.NewProblem(http.StatusBadGateway, "the alarms could not be read or written").WithCause(err)
}

// list answers the alarms through the shell's list pipeline: filter, attribute selectors and pages in id
// order, as every list of the NBI.
func (a *API) list(w http.ResponseWriter, r *http.Request, sh shape) error {
	q, err := nbi.ParseList(r.URL.RawQuery, nbi.SchemaListRules(sh.schema))
	if err != nil {
		return err
	}
	s, err := a.load(r.Context())
	if err != nil {
		return err
	}
	var match func(*alarms.Alarm) bool
	if q.Filter != nil {
		match = func(al *alarms.Alarm) bool { return q.Filter.Match(sh.attrs(al)) }
	}
	candidates := nbi.After(s.Alarms, q.Marker, func(al *alarms.Alarm) string { return al.ID })
	page, more := nbi.Page(candidates, a.mux.Config().PageSize, match, func(al *alarms.Alarm) map[string]any {
		return nbi.ApplySchema(q.Selection, sh.schema, sh.attrs(al))
	})
	if more {
		w.Header().Set("Link", q.NextLink(r.URL, page[len(page)-1]["alarmEventRecordId"].(string)))
	}
	a.mux.Write(w, r, http.StatusOK, page)
	return nil
}

func (a *API) get(w http.ResponseWriter, r *http.Request, sh shape) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	s, err := a.load(r.Context())
	if err != nil {
		return err
	}
	al, ok := s.Get(id)
	if !ok {
		return nbi.NewProblem(http.StatusNotFound, "alarm %q not found", id)
	}
	a.mux.Write(w, r, http.StatusOK, sh.attrs(al))
	return nil
}

// pathID is the alarm id of the route; one that is not a lowercase UUID cannot exist, so it is a 404.
func pathID(r *http.Request) (string, error) {
	id := r.PathValue("alarmEventRecordId")
	if u, err := uuid.Parse(id); err != nil || u.String() != id {
		return "", nbi.NewProblem(http.StatusNotFound, "alarm %q not found: ids are lowercase UUIDs", nbi.Truncate(id, 100))
	}
	return id, nil
}

// shape is the AlarmEventRecord a major answers: 1.x (oran-o2ims's) under v1, 2.0.0 under v2.
type shape struct {
	schema *query.Schema
	attrs  func(*alarms.Alarm) map[string]any
}

func shapeOf(mj nbi.Major) shape {
	if mj.Segment == "v1" {
		return shape{alarms.Schema, (*alarms.Alarm).Attrs}
	}
	return shape{alarms.SchemaV2, (*alarms.Alarm).AttrsV2}
}
