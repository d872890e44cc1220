package alarmsapi

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/o2ims-operator/o2ims-operator/alarms"
	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
	"github.com/o2ims-operator/o2ims-operator/subscriptions"
)

// subscriptionInfo is the reference's AlarmSubscriptionInfo as sent.
type subscriptionInfo struct {
	AlarmSubscriptionID    string `json:"alarmSubscriptionId,omitempty"`
	ConsumerSubscriptionID string `json:"consumerSubscriptionId,omitempty"`
	Filter                 string `json:"filter,omitempty"`
	Callback               string `json:"callback"`
}

// subscriptionSchema is the reference's AlarmSubscriptionInfo, for list filters and selectors.
var subscriptionSchema = query.Object("AlarmSubscriptionInfo", map[string]query.Attr{
	"alarmSubscriptionId": query.Simple(), "consumerSubscriptionId": query.Simple().Optional(),
	"filter": query.Simple().Optional(), "callback": query.Simple(),
})

// subscriptionAttrs is a stored subscription as answered.
func subscriptionAttrs(s subscriptions.Subscription) map[string]any {
	out := map[string]any{"alarmSubscriptionId": s.SubscriptionID, "callback": s.Callback}
	if s.ConsumerSubscriptionID != "" {
		out["consumerSubscriptionId"] = s.ConsumerSubscriptionID
	}
	if s.Filter != "" {
		out["filter"] = s.Filter
	}
	return out
}

// WithSubscriptions serves alarmSubscriptions over subs (of kind alarms.Subscriptions); created (may be
// nil) is told of each new one (the notifier's AddSubscription).
func (a *API) WithSubscriptions(subs *subscriptions.SubscriptionStore, created func()) *API {
	a.subs, a.created = subs, created
	return a
}

func (a *API) registerSubscriptions(m *nbi.Mux, prefix, major string) {
	c := prefix + "/alarmSubscriptions"
	m.Handle("GET "+c, nbi.VerbList, a.listSubscriptions)
	// A subscription remembers its major: its notifications come in that version's shape.
	m.Handle("POST "+c, nbi.VerbCreate, func(w http.ResponseWriter, r *http.Request) error { return a.createSubscription(w, r, major) })
	m.Handle("GET "+c+"/{alarmSubscriptionId}", nbi.VerbList, a.getSubscription)
	m.Handle("DELETE "+c+"/{alarmSubscriptionId}", nbi.VerbDelete, a.deleteSubscription)
}

// subscriptionStoreError: the store refused (an error that knows its answer, nbi.Answerer: the caller's
// callback, the cap, a resolver to retry), or the API server (the subscriptions' store) failed; busy is
// retryable.
func subscriptionStoreError(err error) error {
	var known nbi.Answerer
	if errors.As(err, &known) {
		return err
	}
	if apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) {
		return nbi.NewProblem(http.StatusServiceUnavailable, "the Kubernetes API server is busy; retry later").
			WithHeader("Retry-After", "1").WithCause(err)
	}
	return nbi.NewProblem(http.StatusBadGateway, "the alarm subscriptions could not be read or written").WithCause(err)
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
		return subscriptionStoreError(err)
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
		w.Header().Set("Link", q.NextLink(r.URL, page[len(page)-1]["alarmSubscriptionId"].(string)))
	}
	a.mux.Write(w, r, http.StatusOK, page)
	return nil
}

// subscriptionID is the route's id; one that is not a lowercase UUID cannot exist (404).
func subscriptionID(r *http.Request) (string, error) {
	id := r.PathValue("alarmSubscriptionId")
	if u, err := uuid.Parse(id); err != nil || u.String() != id {
		return "", nbi.NewProblem(http.StatusNotFound, "alarm subscription %q not found: ids are lowercase UUIDs", nbi.Truncate(id, 100))
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
		return nbi.NewProblem(http.StatusNotFound, "alarm subscription %q not found", id)
	}
	if err != nil {
		return subscriptionStoreError(err)
	}
	a.mux.Write(w, r, http.StatusOK, subscriptionAttrs(sub))
	return nil
}

// createSubscription stores an AlarmSubscriptionInfo: an absolute http(s) callback the callback policy
// accepts, a filter among NEW, CHANGE, CLEAR, ACKNOWLEDGE (400 otherwise); beyond
// ALARMS_MAX_SUBSCRIPTIONS a 409. 201 with its Location and the stored AlarmSubscriptionInfo.
func (a *API) createSubscription(w http.ResponseWriter, r *http.Request, major string) error {
	data, err := readBody(r, query.MediaJSON)
	if err != nil {
		return err
	}
	var info subscriptionInfo
	// Strict: an unknown or duplicate field, or a second JSON value, is refused.
	if err := query.DecodeJSON(data, &info); err != nil {
		return nbi.NewProblem(http.StatusBadRequest, "the body is not an AlarmSubscriptionInfo: %v", err)
	}
	if info.AlarmSubscriptionID != "" {
		return nbi.NewProblem(http.StatusBadRequest, "alarmSubscriptionId is allocated by the O-Cloud (readOnly); do not send it")
	}
	sub := subscriptions.Subscription{ConsumerSubscriptionID: info.ConsumerSubscriptionID, Filter: info.Filter, Callback: info.Callback}
	if major != "v1" {
		sub.Major = major
	}
	if err := sub.ValidateWith(alarms.Subscriptions.CheckFilter); err != nil {
		return nbi.NewProblem(http.StatusBadRequest, "%v", err)
	}
	ctx, cancel := a.mux.Config().CallTimeout(r.Context())
	defer cancel()
	created, err := a.subs.Create(ctx, sub)
	if err != nil {
		return subscriptionStoreError(err)
	}
	if a.created != nil {
		a.created()
	}
	w.Header().Set("Location", r.URL.Path+"/"+created.SubscriptionID)
	a.mux.Write(w, r, http.StatusCreated, subscriptionAttrs(created))
	return nil
}

// deleteSubscription removes it: 200 with no body; deliveries stop within the notifier's poll.
func (a *API) deleteSubscription(w http.ResponseWriter, r *http.Request) error {
	id, err := subscriptionID(r)
	if err != nil {
		return err
	}
	ctx, cancel := a.mux.Config().CallTimeout(r.Context())
	defer cancel()
	if err := a.subs.Delete(ctx, id); err != nil {
		if errors.Is(err, subscriptions.ErrSubscriptionNotFound) {
			return nbi.NewProblem(http.StatusNotFound, "alarm subscription %q not found", id)
		}
		return subscriptionStoreError(err)
	}
	w.Header().Set("Content-Length", strconv.Itoa(0))
	w.WriteHeader(http.StatusOK)
	return nil
}
