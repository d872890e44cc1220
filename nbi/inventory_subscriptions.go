package nbi

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/o2ims-operator/o2ims-operator/nbi/callback"
	"github.com/o2ims-operator/o2ims-operator/nbi/inventory"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

// maxSubscriptionBody bounds a subscription POST: a callback, a filter and two ids.
const maxSubscriptionBody = 64 << 10

// EnableSubscriptions serves the inventory subscriptions from store (ConfigMaps in the operator's
// namespace); created (may be nil) is told of each new one, so that the notifier of this replica
// starts delivering at once. Call after EnableInventory, before Start.
func (s *Server) EnableSubscriptions(store *inventory.SubscriptionStore, created func()) {
	s.inventory.subs, s.inventory.subCreated = store, created
	c := inventoryRoot + "/v1/subscriptions"
	s.mux.Handle("GET "+c, s.route(verbList, s.listSubscriptions))
	s.mux.Handle("POST "+c, s.route(verbCreate, s.createSubscription))
	s.mux.Handle("GET "+c+"/{subscriptionId}", s.route(verbList, s.getSubscription))
	s.mux.Handle("DELETE "+c+"/{subscriptionId}", s.route(verbDelete, s.deleteSubscription))
}

// subscriptionStoreError: the API server (the subscriptions' store) failed; busy is retryable.
func subscriptionStoreError(err error) *problem {
	if apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) {
		return newProblem(http.StatusServiceUnavailable, "the Kubernetes API server is busy; retry later").withCause(err)
	}
	return newProblem(http.StatusBadGateway, "the subscriptions could not be read or written").withCause(err)
}

func (s *Server) listSubscriptions(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := s.ctxAPI(r.Context())
	defer cancel()
	subs, err := s.inventory.subs.List(ctx)
	if err != nil {
		return subscriptionStoreError(err)
	}
	entries := make([]*inventory.Entry, len(subs))
	for i, sub := range subs {
		entries[i] = inventory.NewEntry(sub.SubscriptionID, sub.Attrs())
	}
	return s.inventoryList(w, r, inventory.SubscriptionSchema, entries)
}

func (s *Server) getSubscription(w http.ResponseWriter, r *http.Request) error {
	id, err := pathUUID(r, "subscriptionId", "subscription")
	if err != nil {
		return err
	}
	ctx, cancel := s.ctxAPI(r.Context())
	defer cancel()
	sub, err := s.inventory.subs.Get(ctx, id)
	if errors.Is(err, inventory.ErrSubscriptionNotFound) {
		return newProblem(http.StatusNotFound, "subscription %q not found", id)
	}
	if err != nil {
		return subscriptionStoreError(err)
	}
	s.writeEntry(w, r, inventory.NewEntry(id, sub.Attrs()))
	return nil
}

// createSubscription stores a subscription: a JSON Subscription whose callback is an absolute http or
// https URI (400 otherwise); 201 with its Location and the stored Subscription.
func (s *Server) createSubscription(w http.ResponseWriter, r *http.Request) error {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != mediaJSON {
		return newProblem(http.StatusUnsupportedMediaType, "a subscription is sent as application/json")
	}
	if r.ContentLength > maxSubscriptionBody {
		return newProblem(http.StatusRequestEntityTooLarge, "a subscription is at most %d bytes", maxSubscriptionBody)
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, maxSubscriptionBody+1))
	if err != nil {
		return newProblem(http.StatusBadRequest, "the body could not be read")
	}
	if len(data) > maxSubscriptionBody {
		return newProblem(http.StatusRequestEntityTooLarge, "a subscription is at most %d bytes", maxSubscriptionBody)
	}
	var sub inventory.Subscription
	// Strict: an unknown or duplicate field, or a second JSON value, is refused.
	if err := query.DecodeJSON(data, &sub); err != nil {
		return newProblem(http.StatusBadRequest, "the body is not a Subscription: %v", err)
	}
	if err := sub.Validate(); err != nil {
		return newProblem(http.StatusBadRequest, "%v", err)
	}
	ctx, cancel := s.ctxAPI(r.Context())
	defer cancel()
	created, err := s.inventory.subs.Create(ctx, sub)
	if err != nil {
		var inv *inventory.InvalidError
		if errors.As(err, &inv) {
			return newProblem(http.StatusBadRequest, "%v", err)
		}
		var full *inventory.TooManyError
		if errors.As(err, &full) {
			return newProblem(http.StatusConflict, "%v", err)
		}
		var lookup *callback.LookupError
		if errors.As(err, &lookup) {
			return newProblem(http.StatusServiceUnavailable, "%v; retry later", err).withHeader("Retry-After", "5")
		}
		return subscriptionStoreError(err)
	}
	if s.inventory.subCreated != nil {
		s.inventory.subCreated()
	}
	w.Header().Set("Location", r.URL.Path+"/"+created.SubscriptionID)
	s.write(w, r, http.StatusCreated, created.Attrs())
	return nil
}

// deleteSubscription removes it: 200 with no body (the reference declares none); deliveries stop
// within the notifier's subscription poll.
func (s *Server) deleteSubscription(w http.ResponseWriter, r *http.Request) error {
	id, err := pathUUID(r, "subscriptionId", "subscription")
	if err != nil {
		return err
	}
	ctx, cancel := s.ctxAPI(r.Context())
	defer cancel()
	if err := s.inventory.subs.Delete(ctx, id); err != nil {
		if errors.Is(err, inventory.ErrSubscriptionNotFound) {
			return newProblem(http.StatusNotFound, "subscription %q not found", id)
		}
		return subscriptionStoreError(err)
	}
	w.Header().Set("Content-Length", strconv.Itoa(0))
	w.WriteHeader(http.StatusOK)
	return nil
}
