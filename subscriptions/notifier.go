package subscriptions

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"k8s.io/utils/clock"

	"github.com/o2ims-operator/o2ims-operator/nbi/callback"

	"github.com/o2ims-operator/o2ims-operator/inventory"
)

// NotifierConfig bounds delivery. Zero values take the defaults.
type NotifierConfig struct {
	Timeout          time.Duration // per POST (default 10 s)
	BackoffBase      time.Duration // first retry delay (default 1 s), doubled per failure …
	BackoffCap       time.Duration // … up to this (default 60 s), each with jitter (a delay in [d/2, d]; internal/backoff)
	QueueLimit       int           // per subscriber, before changes of one object are coalesced (default 10 000)
	SubscriptionPoll time.Duration // how often subscriptions are re-read (default 5 s)
	ManagerPoll      time.Duration // how often deployment managers are recomputed (default 2 s)
	PersistEvery     time.Duration // how often delivered progress is written (default 1 s)
	APIRoot          string        // prefix of objectRef (default the inventory root path)
	// Policy is checked at every connection a delivery makes (default callback.Default()): the
	// subscription store's, so a callback accepted at creation that now resolves inside is refused.
	Policy *callback.Policy
	// Clock schedules the polls, the retries and the manager wait, and stamps changes (default the real
	// one).
	Clock clock.WithTicker
}

func (c NotifierConfig) withDefaults() NotifierConfig {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.Timeout, 10*time.Second)
	def(&c.BackoffBase, time.Second)
	def(&c.BackoffCap, time.Minute)
	def(&c.SubscriptionPoll, 5*time.Second)
	def(&c.ManagerPoll, 2*time.Second)
	def(&c.PersistEvery, time.Second)
	if c.QueueLimit <= 0 {
		c.QueueLimit = 10000
	}
	if c.APIRoot == "" {
		c.APIRoot = "/o2ims-infrastructureInventory/v1"
	}
	if c.Policy == nil {
		c.Policy = callback.Default()
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	return c
}

// Notifier delivers InventoryChangeNotifications: at least once, in order per subscriber, each
// subscriber with its own queue and delivery, so a dead callback slows no one else, and the view (whose
// sink only appends) never waits for a callback. It is a runnable of the leader (NeedLeaderElection):
// only the leader delivers, and a new leader resumes from the progress each subscription persisted.
//
// Its parts: the subscriber set (subscribers.go: the subscriptions being delivered to, the state they
// are diffed against), each subscriber's queue (queue.go), the delivery (delivery.go), the rendering
// (render.go); the Notifier schedules them.
type Notifier struct {
	cfg      NotifierConfig
	view     *inventory.View
	managers func() ([]*inventory.Entry, error) // deployment managers now (nil: none)
	log      *zap.Logger
	set      *subscriberSet
}

// NewNotifier builds the notifier; reg receives its metrics (nil: not registered).
func NewNotifier(cfg NotifierConfig, view *inventory.View, store *SubscriptionStore,
	managers func() ([]*inventory.Entry, error), log *zap.Logger, reg prometheus.Registerer) (*Notifier, error) {
	if log == nil {
		log = zap.NewNop()
	}
	cfg = cfg.withDefaults()
	metrics := newNotifierMetrics("inventory", "Inventory change")
	set := newSubscriberSet(cfg, store, renderer{root: view.Config().ServiceURI + cfg.APIRoot}, metrics, log)
	n := &Notifier{cfg: cfg, view: view, managers: managers, log: log, set: set}
	if reg != nil {
		if err := metrics.register(reg, n.set); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// newSubscriberSet builds the subscriber set of a notifier and the delivery its subscribers run.
func newSubscriberSet(cfg NotifierConfig, store *SubscriptionStore, render Renderer, metrics *notifierMetrics, log *zap.Logger) *subscriberSet {
	d := &delivery{
		// Every connection through the policy; a redirect is not a delivery: the callback the SMO
		// registered is the only one POSTed to.
		client:  cfg.Policy.Client(cfg.Timeout),
		retry:   retryBackoff(cfg.BackoffBase, cfg.BackoffCap),
		render:  render,
		metrics: metrics, clock: cfg.Clock, log: log,
	}
	return &subscriberSet{
		store: store, compile: render.Compile, queueLimit: cfg.QueueLimit, deliver: d.run, metrics: metrics,
		clock: cfg.Clock, log: log, state: map[string]inventory.Change{}, subs: map[string]*subscriber{},
	}
}

// NeedLeaderElection: only the leader delivers (every replica serves the subscription routes).
func (n *Notifier) NeedLeaderElection() bool { return true }

// Start delivers until ctx ends, from the view's first full listing on; then it stops every delivery and
// returns (nil).
func (n *Notifier) Start(ctx context.Context) error {
	select {
	case <-n.view.SyncedC():
	case <-ctx.Done():
		return nil
	}
	if !n.begin(ctx) {
		return nil
	}
	defer n.set.end()
	schedule(ctx, n.cfg, n.set, n.cfg.ManagerPoll, func(context.Context) { n.pollManagers() })
	return nil
}

// begin attaches to the view (atomically taking its objects as the current state), adds the deployment
// managers, and then the subscriptions: each resumes from its own persisted progress. False when ctx
// ended first.
func (n *Notifier) begin(ctx context.Context) bool {
	n.view.Attach(n.set.seed, n.set.apply)
	if n.managers != nil {
		// The caches are synced once this replica leads; until they answer, what the deployment
		// managers are is unknown, which is not "none" (that would tell every subscriber they were
		// deleted).
		for {
			dms, err := n.managers()
			if err == nil {
				objs := make(map[string]inventory.Change, len(dms))
				for _, e := range dms {
					objs[e.ID] = inventory.Change{Kind: inventory.KindDeploymentManager, ID: e.ID, Post: e}
				}
				n.set.seed(objs)
				break
			}
			select {
			case <-ctx.Done():
				return false
			case <-n.cfg.Clock.After(500 * time.Millisecond):
			}
		}
	}
	n.set.begin(ctx)
	n.set.sync(ctx)
	return true
}

// AddSubscription starts delivering to a just-created subscription at once rather than at the next
// poll — when this replica is the one delivering (otherwise the leader's poll finds it).
func (n *Notifier) AddSubscription() { n.set.syncNow() }

// pollManagers diffs the deployment managers against the last seen.
func (n *Notifier) pollManagers() {
	if n.managers == nil {
		return
	}
	dms, err := n.managers()
	if err != nil {
		return
	}
	n.set.managersChanged(dms)
}
