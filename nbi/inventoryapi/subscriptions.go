package inventoryapi

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/o2ims-operator/o2ims-operator/inventory"
	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
	"github.com/o2ims-operator/o2ims-operator/subscriptions"
)

// maxSubscriptionBody bounds a subscription POST: a callback, a filter and two ids.
const maxSubscriptionBody = 64 << 10

// subscriptionRoutes are the inventory subscriptions' routes, over store (ConfigMaps in the operator's
// namespace); created (may be nil) is told of each new one.
type subscriptionRoutes struct {
	api     *API
	store   *subscriptions.SubscriptionStore
	created func()
}

func (s *subscriptionRoutes) register(m *nbi.Mux, prefix string) {
	c := prefix + "/subscriptions"
	m.Handle("GET "+c, nbi.VerbList, s.list)
	m.Handle("POST "+c, nbi.VerbCreate, s.create)
	m.Handle("GET "+c+"/{subscriptionId}", nbi.VerbList, s.get)
	m.Handle("DELETE "+c+"/{subscriptionId}", nbi.VerbDelete, s.delete)
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
		return nbi.NewProblem(http.StatusServiceUnavailable, "the Kubernetes API server is busy; retry later").WithCause(err)
	}
	return nbi.NewProblem(http.StatusBadGateway, "the subscriptions could not be read or written").WithCause(err)
}

func (s *subscriptionRoutes) list(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := s.api.mux.Config().CallTimeout(r.Context())
	defer cancel()
	subs, err := s.store.List(ctx)
	if err != nil {
		return subscriptionStoreError(err)
	}
	entries := make([]*inventory.Entry, len(subs))
	for i, sub := range subs {
		entries[i] = inventory.NewEntry(sub.SubscriptionID, sub.Attrs())
	}
	return s.api.list(w, r, subscriptions.SubscriptionSchema, entries)
}

func (s *subscriptionRoutes) get(w http.ResponseWriter, r *http.Request) error {
	id, err := pathUUID(r, "subscriptionId", "subscription")
	if err != nil {
		return err
	}
	ctx, cancel := s.api.mux.Config().CallTimeout(r.Context())
	defer cancel()
	sub, err := s.store.Get(ctx, id)
	if errors.Is(err, subscriptions.ErrSubscriptionNotFound) {
		return nbi.NewProblem(http.StatusNotFound, "subscription %q not found", id)
	}
	if err != nil {
		return subscriptionStoreError(err)
	}
	s.api.writeEntry(w, r, inventory.NewEntry(id, sub.Attrs()))
	return nil
}

// create stores a subscription: a JSON Subscription whose callback is an absolute http or
// https URI (400 otherwise); 201 with its Location and the stored Subscription.
func (s *subscriptionRoutes) create(w http.ResponseWriter, r *http.Request) error {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != query.MediaJSON {
		return nbi.NewProblem(http.StatusUnsupportedMediaType, "a subscription is sent as application/json")
	}
	if r.ContentLength > maxSubscriptionBody {
		return nbi.NewProblem(http.StatusRequestEntityTooLarge, "a subscription is at most %d bytes", maxSubscriptionBody)
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, maxSubscriptionBody+1))
	if err != nil {
		return nbi.NewProblem(http.StatusBadRequest, "the body could not be read")
	}
	if len(data) > maxSubscriptionBody {
		return nbi.NewProblem(http.StatusRequestEntityTooLarge, "a subscription is at most %d bytes", maxSubscriptionBody)
	}
	var sub subscriptions.Subscription
	// Strict: an unknown or duplicate field, or a second JSON value, is refused.
	if err := query.DecodeJSON(data, &sub); err != nil {
		return nbi.NewProblem(http.StatusBadRequest, "the body is not a Subscription: %v", err)
	}
	if err := sub.Validate(); err != nil {
		return nbi.NewProblem(http.StatusBadRequest, "%v", err)
	}
	ctx, cancel := s.api.mux.Config().CallTimeout(r.Context())
	defer cancel()
	created, err := s.store.Create(ctx, sub)
	if err != nil {
		return subscriptionStoreError(err)
	}
	if s.created != nil {
		s.created()
	}
	w.Header().Set("Location", r.URL.Path+"/"+created.SubscriptionID)
	s.api.mux.Write(w, r, http.StatusCreated, created.Attrs())
	return nil
}

// delete removes it: 200 with no body (the reference declares none); deliveries stop
// within the notifier's subscription poll.
func (s *subscriptionRoutes) delete(w http.ResponseWriter, r *http.Request) error {
	id, err := pathUUID(r, "subscriptionId", "subscription")
	if err != nil {
		return err
	}
	ctx, cancel := s.api.mux.Config().CallTimeout(r.Context())
	defer cancel()
	if err := s.store.Delete(ctx, id); err != nil {
		if errors.Is(err, subscriptions.ErrSubscriptionNotFound) {
			return nbi.NewProblem(http.StatusNotFound, "subscription %q not found", id)
		}
		return subscriptionStoreError(err)
	}
	w.Header().Set("Content-Length", strconv.Itoa(0))
	w.WriteHeader(http.StatusOK)
	return nil
}
