package subscriptions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/o2ims-operator/o2ims-operator/cmstore"
	"github.com/o2ims-operator/o2ims-operator/internal/quote"
	"github.com/o2ims-operator/o2ims-operator/nbi/callback"
	"github.com/o2ims-operator/o2ims-operator/nbi/caller"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"

	"github.com/o2ims-operator/o2ims-operator/inventory"
)

// Subscriptions are ConfigMaps in the operator's namespace — no CRD to install, shared by every
// replica, surviving restarts — labelled SubscriptionLabel and named "o2ims-inventory-subscription-<id>",
// holding the Subscription as JSON under "subscription.json".
const (
	SubscriptionLabel  = "o2ims.provisioning.oran.org/inventory-subscription"
	subscriptionPrefix = "o2ims-inventory-subscription-"
	subscriptionKey    = "subscription.json"
	maxCallbackLength  = 2048
)

// Subscription is the reference's Subscription.
type Subscription struct {
	SubscriptionID         string `json:"subscriptionId"`
	ConsumerSubscriptionID string `json:"consumerSubscriptionId,omitempty"`
	Filter                 string `json:"filter,omitempty"`
	Callback               string `json:"callback"`
	// Major is the API major version the subscription was created under ("" is v1): a monitoring v2
	// subscriber is notified in 2.0.0's shape.
	Major string `json:"apiMajor,omitempty"`
}

// NotificationSchema is what a subscription's filter is checked against and matched on: the
// InventoryChangeNotification (prior and post states are free-form: any type's attributes), with
// objectType, the kind of object (resource, resourcePool, resourceType, deploymentManager), beside it.
var NotificationSchema = query.Object("InventoryChangeNotification", map[string]query.Attr{
	"notificationId": query.Simple(), "consumerSubscriptionId": query.Simple(), "notificationEventType": query.Simple(),
	"objectRef": query.Simple(), "objectType": query.Simple(),
	"priorObjectState": query.Freeform().Optional(), "postObjectState": query.Freeform().Optional(),
})

// InvalidError is a subscription the caller got wrong (a 400).
type InvalidError struct{ Message string }

func (e *InvalidError) Error() string { return e.Message }

// HTTPAnswer is how the NBI answers it (nbi.Answerer), in both subscription APIs: 400, its message.
func (e *InvalidError) HTTPAnswer() (status int, detail string, retryAfter int) {
	return http.StatusBadRequest, e.Message, 0
}

// ErrSubscriptionNotFound: no subscription has that id.
var ErrSubscriptionNotFound = errors.New("subscription not found")

// TooManyError refuses a subscription beyond the cap (Env: INVENTORY_MAX_SUBSCRIPTIONS, or the kind's
// own).
type TooManyError struct {
	Max int
	Env string
}

func (e *TooManyError) Error() string {
	env := e.Env
	if env == "" {
		env = "INVENTORY_MAX_SUBSCRIPTIONS"
	}
	return fmt.Sprintf("there are already %d subscriptions, the most this O-Cloud keeps (%s); delete one first", e.Max, env)
}

// HTTPAnswer is how the NBI answers it (nbi.Answerer), in both subscription APIs: 409, a conflict with
// the subscriptions stored, which a deletion resolves.
func (e *TooManyError) HTTPAnswer() (status int, detail string, retryAfter int) {
	return http.StatusConflict, e.Error(), 0
}

// Validate checks what the caller may send: an absolute http or https callback with a host and no
// credentials or fragment, a consumerSubscriptionId that is a UUID, a filter that parses. The id is
// the O-Cloud's to allocate (readOnly): one sent is refused.
func (s *Subscription) Validate() error { return s.ValidateWith(inventoryFilter) }

// inventoryFilter checks an inventory subscription's filter: it parses on NotificationSchema.
func inventoryFilter(filter string) error {
	_, err := NotificationSchema.ParseFilter(filter)
	return err
}

// ValidateWith is Validate with checkFilter deciding the filter (the kind of subscription's own).
func (s *Subscription) ValidateWith(checkFilter func(string) error) error {
	if s.SubscriptionID != "" {
		return &InvalidError{"subscriptionId is allocated by the O-Cloud (readOnly); do not send it"}
	}
	if len(s.Callback) > maxCallbackLength {
		return &InvalidError{fmt.Sprintf("callback is longer than %d characters", maxCallbackLength)}
	}
	u, err := url.Parse(s.Callback)
	switch {
	case s.Callback == "":
		return &InvalidError{"callback is required: the absolute http:// or https:// URI notifications are POSTed to"}
	case err != nil:
		return &InvalidError{fmt.Sprintf("callback %q is not a URI: %v", quote.Truncate(s.Callback, 100), err)}
	case u.Scheme != "http" && u.Scheme != "https":
		return &InvalidError{fmt.Sprintf("callback %q must be an absolute http:// or https:// URI", quote.Truncate(s.Callback, 100))}
	case u.Host == "" || u.Hostname() == "":
		return &InvalidError{fmt.Sprintf("callback %q has no host", quote.Truncate(s.Callback, 100))}
	case u.User != nil:
		return &InvalidError{"callback must not carry credentials (user:password@)"}
	case u.Fragment != "":
		return &InvalidError{"callback must not have a fragment"}
	}
	if p := u.Port(); p != "" {
		if _, err := net.LookupPort("tcp", p); err != nil {
			return &InvalidError{fmt.Sprintf("callback %q has an invalid port", quote.Truncate(s.Callback, 100))}
		}
	}
	if s.ConsumerSubscriptionID != "" {
		if id, err := uuid.Parse(s.ConsumerSubscriptionID); err != nil || id.String() != strings.ToLower(s.ConsumerSubscriptionID) {
			return &InvalidError{fmt.Sprintf("consumerSubscriptionId %q is not a UUID", quote.Truncate(s.ConsumerSubscriptionID, 60))}
		}
	}
	if s.Filter != "" {
		if err := checkFilter(s.Filter); err != nil {
			return &InvalidError{fmt.Sprintf("filter: %v", err)}
		}
	}
	return nil
}

// SubscriptionStore keeps subscriptions as ConfigMaps in one namespace.
type SubscriptionStore struct {
	kube      kubernetes.Interface
	namespace string
	kind      SubscriptionKind
	// cache answers the reads (an NBI GET costs no API-server call) and this replica's own writes at once.
	cache *cmstore.Cache
	// max bounds how many are stored (0: no bound).
	max int
	// policy decides which callbacks may be stored (nil: callback.Default()).
	policy *callback.Policy
	// baseline is what a new subscription has "been told" at creation: stored with it, so every change
	// after the 201 is a difference from it — even one made before any notifier (on whichever replica
	// leads, after however many restarts) has picked the subscription up.
	baseline func(context.Context) (map[string]storedObject, error)
}

// SubscriptionKind is what tells one API's subscriptions from another's in the same namespace: their
// ConfigMaps' name prefix and label, the filter they accept and the variable that caps them.
type SubscriptionKind struct {
	Prefix      string
	Label       string
	CheckFilter func(string) error
	MaxEnv      string
}

// InventorySubscriptions is the inventory API's kind of subscription.
var InventorySubscriptions = SubscriptionKind{Prefix: subscriptionPrefix, Label: SubscriptionLabel,
	CheckFilter: inventoryFilter, MaxEnv: "INVENTORY_MAX_SUBSCRIPTIONS"}

// WithKind stores subscriptions of another kind than the inventory's (the alarms').
func (st *SubscriptionStore) WithKind(k SubscriptionKind) *SubscriptionStore {
	st.kind = k
	st.cache = cmstore.New(st.kube, st.namespace, k.Label)
	return st
}

// WithBaselineFunc stores with each new subscription the objects objs answers as its starting progress;
// a creation whose baseline cannot be read fails (without it a change made before the leader's notifier
// first polls would be missed).
func (st *SubscriptionStore) WithBaselineFunc(objs func(context.Context) (map[string]inventory.Change, error)) *SubscriptionStore {
	st.baseline = func(ctx context.Context) (map[string]storedObject, error) {
		cur, err := objs(ctx)
		if err != nil {
			return nil, err
		}
		return stored(cur), nil
	}
	return st
}

// WithBaseline stores with each new subscription the view's objects (and the deployment managers, when
// they can be read) as its starting progress. Without it, a subscription starts from whatever the
// leader's notifier sees when it first polls, and a change in between would be missed.
func (st *SubscriptionStore) WithBaseline(view *inventory.View, managers func() ([]*inventory.Entry, error)) *SubscriptionStore {
	st.baseline = func(context.Context) (map[string]storedObject, error) {
		objs := view.Objects()
		if managers != nil {
			// Unknown managers are left out: at worst each is notified as created once more.
			if dms, err := managers(); err == nil {
				for _, e := range dms {
					objs[e.ID] = inventory.Change{Kind: inventory.KindDeploymentManager, ID: e.ID, Post: e}
				}
			}
		}
		return stored(objs), nil
	}
	return st
}

// WithMax bounds the stored subscriptions: a creation beyond max is refused (TooManyError). Two creations
// at the same moment on two replicas can each see room for one more, so the bound may be passed by the
// number of replicas minus one; it is there to bound resources, not to count exactly.
func (st *SubscriptionStore) WithMax(max int) *SubscriptionStore {
	st.max = max
	return st
}

// WithPolicy checks each new subscription's callback against policy (the notifier's, which checks
// again at every connection): one refused is an InvalidError saying why.
func (st *SubscriptionStore) WithPolicy(policy *callback.Policy) *SubscriptionStore {
	st.policy = policy
	return st
}

// stored is the persisted form of what a subscriber has been told.
func stored(told map[string]inventory.Change) map[string]storedObject {
	objs := make(map[string]storedObject, len(told))
	for id, c := range told {
		objs[id] = storedObject{Kind: c.Kind, JSON: c.Post.JSON}
	}
	return objs
}

// NewSubscriptionStore stores in namespace (the operator's).
func NewSubscriptionStore(kube kubernetes.Interface, namespace string) *SubscriptionStore {
	return &SubscriptionStore{kube: kube, namespace: namespace, kind: InventorySubscriptions,
		cache: cmstore.New(kube, namespace, InventorySubscriptions.Label)}
}

// Close stops reading the subscriptions (a test's store; the operator's lives as long as it does).
func (st *SubscriptionStore) Close() { st.cache.Close() }

// Create allocates the id (a random UUID: a subscription is a new thing, not derived from one) and
// stores the subscription.
func (st *SubscriptionStore) Create(ctx context.Context, s Subscription) (Subscription, error) {
	if err := s.ValidateWith(st.kind.CheckFilter); err != nil {
		return Subscription{}, err
	}
	policy := st.policy
	if policy == nil {
		policy = callback.Default()
	}
	if err := policy.CheckURL(ctx, s.Callback); err != nil {
		if callback.Refusal(err) == nil {
			return Subscription{}, err // the resolver did not answer: retry later, not the caller's fault
		}
		return Subscription{}, &InvalidError{err.Error()}
	}
	if st.max > 0 {
		existing, err := st.List(ctx)
		if err != nil {
			return Subscription{}, err
		}
		if len(existing) >= st.max {
			return Subscription{}, &TooManyError{Max: st.max, Env: st.kind.MaxEnv}
		}
	}
	if err := policy.TestCallback(ctx, s.Callback); err != nil {
		return Subscription{}, err // a TestFailedError: what the callback answered, a 400
	}
	s.SubscriptionID = uuid.NewString()
	data, err := json.Marshal(s)
	if err != nil {
		return Subscription{}, err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: st.kind.Prefix + s.SubscriptionID, Namespace: st.namespace,
			Labels:      map[string]string{st.kind.Label: "true", "app.kubernetes.io/name": "o2ims-operator"},
			Annotations: caller.Annotate(ctx, nil), // who subscribed (issue 35's audit)
		},
		Data: map[string]string{subscriptionKey: string(data)},
	}
	if st.baseline != nil {
		objs, err := st.baseline(ctx)
		if err != nil {
			return Subscription{}, err
		}
		progress, err := encodeProgress(objs)
		if err != nil {
			return Subscription{}, err
		}
		cm.BinaryData = map[string][]byte{progressKey: progress}
	}
	out, err := st.kube.CoreV1().ConfigMaps(st.namespace).Create(ctx, cm, metav1.CreateOptions{FieldManager: "o2ims-nbi"})
	if err != nil {
		return Subscription{}, err
	}
	st.cache.Wrote(out)
	return s, nil
}

// Get reads one subscription (from the cache).
func (st *SubscriptionStore) Get(ctx context.Context, id string) (Subscription, error) {
	cm, err := st.cache.Get(ctx, st.kind.Prefix+id)
	if err != nil {
		return Subscription{}, err
	}
	if cm == nil {
		return Subscription{}, ErrSubscriptionNotFound
	}
	s, ok := st.decode(cm)
	if !ok {
		return Subscription{}, ErrSubscriptionNotFound
	}
	return s, nil
}

// List reads every subscription (from the cache), sorted by id. A ConfigMap that does not hold one is
// skipped.
func (st *SubscriptionStore) List(ctx context.Context) ([]Subscription, error) {
	list, err := st.cache.List(ctx)
	if err != nil {
		return nil, err
	}
	var out []Subscription
	for _, cm := range list {
		if s, ok := st.decode(cm); ok {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b Subscription) int { return strings.Compare(a.SubscriptionID, b.SubscriptionID) })
	return out, nil
}

// Delete removes a subscription (ErrSubscriptionNotFound when there is none).
func (st *SubscriptionStore) Delete(ctx context.Context, id string) error {
	err := st.kube.CoreV1().ConfigMaps(st.namespace).Delete(ctx, st.kind.Prefix+id, metav1.DeleteOptions{})
	if err == nil || apierrors.IsNotFound(err) {
		st.cache.Deleted(st.kind.Prefix + id)
	}
	if apierrors.IsNotFound(err) {
		return ErrSubscriptionNotFound
	}
	return err
}

func (st *SubscriptionStore) decode(cm *corev1.ConfigMap) (Subscription, bool) {
	var s Subscription
	if json.Unmarshal([]byte(cm.Data[subscriptionKey]), &s) != nil || st.kind.Prefix+s.SubscriptionID != cm.Name || s.Callback == "" {
		return Subscription{}, false
	}
	return s, true
}

// Attrs is the subscription as answered.
func (s Subscription) Attrs() map[string]any {
	out := map[string]any{"subscriptionId": s.SubscriptionID, "callback": s.Callback}
	if s.ConsumerSubscriptionID != "" {
		out["consumerSubscriptionId"] = s.ConsumerSubscriptionID
	}
	if s.Filter != "" {
		out["filter"] = s.Filter
	}
	return out
}

// SubscriptionSchema is the reference's Subscription, for list filters and selectors.
var SubscriptionSchema = query.Object("Subscription", map[string]query.Attr{
	"subscriptionId": query.Simple(), "consumerSubscriptionId": query.Simple().Optional(),
	"filter": query.Simple().Optional(), "callback": query.Simple(),
})
