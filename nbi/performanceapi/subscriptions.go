package performanceapi

import (
	"errors"
	"net/http"

	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
	"github.com/o2ims-operator/o2ims-operator/performance"
	"github.com/o2ims-operator/o2ims-operator/subscriptions"
)

// performanceSubscriptions: SOL 013 subscribe/notify for the jobs' reports (package performance: notify.go
// says why an extension of the v2 root), shaped as the monitoring API's alarm subscriptions:
// PerformanceSubscriptionInfo {performanceSubscriptionId, consumerSubscriptionId, filter (a job id),
// callback}; create (201, the callback tested first as every subscription's), list, get, delete (204).

type subscriptionInfo struct {
	ID                     string `json:"performanceSubscriptionId,omitempty"`
	ConsumerSubscriptionID string `json:"consumerSubscriptionId,omitempty"`
	Filter                 string `json:"filter,omitempty"`
	Callback               string `json:"callback"`
}

var subscriptionSchema = query.Object("PerformanceSubscriptionInfo", map[string]query.Attr{
	"performanceSubscriptionId": query.Simple(), "consumerSubscriptionId": query.Simple().Optional(),
	"filter": query.Simple().Optional(), "callback": query.Simple(),
})

func subscriptionAttrs(s subscriptions.Subscription) map[string]any {
	out := map[string]any{"performanceSubscriptionId": s.SubscriptionID, "callback": s.Callback}
	if s.ConsumerSubscriptionID != "" {
		out["consumerSubscriptionId"] = s.ConsumerSubscriptionID
	}
	if s.Filter != "" {
		out["filter"] = s.Filter
	}
	return out
}

// WithSubscriptions serves performanceSubscriptions over subs (of kind performance.Subscriptions);
// created (may be nil) is told of each new one (the notifier's AddSubscription).
func (a *API) WithSubscriptions(subs *subscriptions.SubscriptionStore, created func()) *API {
	a.subs, a.created = subs, created
	return a
}

func (a *API) subscriptionRoutes(v string) {
	c := v + "/performanceSubscriptions"
	a.mux.Handle("GET "+c, nbi.VerbList, a.listSubscriptions)
	a.mux.Handle("POST "+c, nbi.VerbCreate, a.createSubscription)
	a.mux.Handle("GET "+c+"/{performanceSubscriptionId}", nbi.VerbList, a.getSubscription)
	a.mux.Handle("DELETE "+c+"/{performanceSubscriptionId}", nbi.VerbDelete, a.deleteSubscription)
}

// subscriptionError: the store's own refusals answer as they say (nbi.Answerer); the API server's
// failures are 503 (busy) or 502.
func subscriptionError(err error) error {
	var known nbi.Answerer
	if errors.As(err, &known) {
		return err
	}
	if apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) {
		return nbi.NewProblem(http.StatusServiceUnavailable, "the Kubernetes API server is busy; retry later").
			WithHeader("Retry-After", "1").WithCause(err)
	}
	return nbi.NewProblem(http.StatusBadGateway, "the performance subscriptions could not be read or written").WithCause(err)
}

func (a *API) listSubscriptions(w http.ResponseWriter, r *http.Request) error {
	q, err := nbi.ParseList(r.URL.RawQuery, nbi.SchemaListRules(subscriptionSchema))
	if err != nil {
		return err
	}
	ctx, cancel := a.mux.Config().CallTimeout(r.Context())
	defer cancel()
	subs, err := a.subs.List(ctx)
	if err != nil {
		return subscriptionError(err)
	}
	var match func(subscriptions.Subscription) bool
	if q.Filter != nil {
		match = func(s subscriptions.Subscription) bool { return q.Filter.Match(subscriptionAttrs(s)) }
	}
	candidates := nbi.After(subs, q.Marker, func(s subscriptions.Subscription) string { return s.SubscriptionID })
	page, more := nbi.Page(candidates, a.mux.Config().PageSize, match, func(s subscriptions.Subscription) map[string]any {
		return nbi.ApplySchema(q.Selection, subscriptionSchema, subscriptionAttrs(s))
	})
	if more {
		w.Header().Set("Link", q.NextLink(r.URL, page[len(page)-1]["performanceSubscriptionId"].(string)))
	}
	a.mux.Write(w, r, http.StatusOK, page)
	return nil
}

func subscriptionID(r *http.Request) (string, error) {
	id := r.PathValue("performanceSubscriptionId")
	if u, err := uuid.Parse(id); err != nil || u.String() != id {
		return "", nbi.NewProblem(http.StatusNotFound, "performance subscription %q not found: ids are lowercase UUIDs", nbi.Truncate(id, 100))
	}
	return id, nil
}

func (a *API) getSubscription(w http.ResponseWriter, r *http.Request) error {
	id, err := subscriptionID(r)
	if err != nil {
		return err
	}
	ctx, cancel := a.mux.Config().CallTimeout(r.Context())
	defer cancel()
	sub, err := a.subs.Get(ctx, id)
	if errors.Is(err, subscriptions.ErrSubscriptionNotFound) {
		return nbi.NewProblem(http.StatusNotFound, "performance subscription %q not found", id)
	}
	if err != nil {
		return subscriptionError(err)
	}
	a.mux.Write(w, r, http.StatusOK, subscriptionAttrs(sub))
	return nil
}

func (a *API) createSubscription(w http.ResponseWriter, r *http.Request) error {
	data, err := readBody(r, query.MediaJSON)
	if err != nil {
		return err
	}
	var info subscriptionInfo
	if err := query.DecodeJSON(data, &info); err != nil {
		return nbi.NewProblem(http.StatusBadRequest, "the body is not a PerformanceSubscriptionInfo: %v", err)
	}
	if info.ID != "" {
		return nbi.NewProblem(http.StatusBadRequest, "performanceSubscriptionId is allocated by the O-Cloud; do not send it")
	}
	sub := subscriptions.Subscription{ConsumerSubscriptionID: info.ConsumerSubscriptionID, Filter: info.Filter, Callback: info.Callback}
	if err := sub.ValidateWith(performance.Subscriptions.CheckFilter); err != nil {
		return nbi.NewProblem(http.StatusBadRequest, "%v", err)
	}
	ctx, cancel := a.mux.Config().CallTimeout(r.Context())
	defer cancel()
	created, err := a.subs.Create(ctx, sub)
	if err != nil {
		return subscriptionError(err)
	}
	if a.created != nil {
		a.created()
	}
	w.Header().Set("Location", r.URL.Path+"/"+created.SubscriptionID)
	a.mux.Write(w, r, http.StatusCreated, subscriptionAttrs(created))
	return nil
}

func (a *API) deleteSubscription(w http.ResponseWriter, r *http.Request) error {
	id, err := subscriptionID(r)
	if err != nil {
		return err
	}
	ctx, cancel := a.mux.Config().CallTimeout(r.Context())
	defer cancel()
	if err := a.subs.Delete(ctx, id); err != nil {
		if errors.Is(err, subscriptions.ErrSubscriptionNotFound) {
			return nbi.NewProblem(http.StatusNotFound, "performance subscription %q not found", id)
		}
		return subscriptionError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
