package subscriptions

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/o2ims-operator/o2ims-operator/inventory"
)

// Polled is a kind of object a PolledNotifier notifies of: read whole at each poll rather than pushed
// by a view (the alarms, one ConfigMap that every replica writes).
type Polled struct {
	API    string // its metrics' names: o2ims_<API>_notification…
	What   string // and their help: "<What> notifications …"
	Kind   inventory.Kind
	Render Renderer
	// Read answers every object of Kind now, each Change's Post the object; an error is retried.
	Read func(context.Context) (map[string]inventory.Change, error)
	// Every is how often Read is called (default 1 s).
	Every time.Duration
	// Order orders the changes one read finds, and those a subscription missed while nobody delivered
	// to it, as they happened (nil: by id).
	Order func(a, b inventory.Change) int
}

// PolledNotifier delivers the notifications of a Polled kind with the inventory Notifier's parts: the
// subscriber set (its state diffed against each read), each subscriber's queue, the delivery and the
// persisted progress — so they are as the inventory's: at least once, in order per subscriber, only by
// the leader (NeedLeaderElection), and a restart or a new leader resumes from each subscription's
// persisted progress (what changed meanwhile is queued first).
type PolledNotifier struct {
	cfg NotifierConfig
	src Polled
	log *zap.Logger
	set *subscriberSet
}

// NewPolledNotifier builds it over store (subscriptions of src's kind); reg receives its metrics (nil:
// not registered).
func NewPolledNotifier(cfg NotifierConfig, src Polled, store *SubscriptionStore, log *zap.Logger, reg prometheus.Registerer) (*PolledNotifier, error) {
	if log == nil {
		log = zap.NewNop()
	}
	cfg = cfg.withDefaults()
	if src.Every <= 0 {
		src.Every = time.Second
	}
	metrics := newNotifierMetrics(src.API, src.What)
	n := &PolledNotifier{cfg: cfg, src: src, log: log, set: newSubscriberSet(cfg, store, src.Render, metrics, log)}
	n.set.order = src.Order
	if reg != nil {
		if err := metrics.register(reg, n.set); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// NeedLeaderElection: only the leader delivers (every replica serves the subscription routes).
func (n *PolledNotifier) NeedLeaderElection() bool { return true }

// AddSubscription starts delivering to a just-created subscription at once (when this replica leads).
func (n *PolledNotifier) AddSubscription() { n.set.syncNow() }

// Start delivers until ctx ends: the first read is the state every subscription's progress is diffed
// against (until it answers, nothing is known, which is not "none"); then it polls.
func (n *PolledNotifier) Start(ctx context.Context) error {
	for {
		cur, err := n.src.Read(ctx)
		if err == nil {
			n.set.seed(cur)
			break
		}
		n.log.Debug("reading the objects to notify of failed; retrying", zap.Error(err))
		select {
		case <-ctx.Done():
			return nil
		case <-n.cfg.Clock.After(500 * time.Millisecond):
		}
	}
	n.set.begin(ctx)
	defer n.set.end()
	n.set.sync(ctx)
	schedule(ctx, n.cfg, n.set, n.src.Every, n.poll)
	return nil
}

// poll diffs what Read answers now against the state; a failed read waits for the next poll.
func (n *PolledNotifier) poll(ctx context.Context) {
	if cur, err := n.src.Read(ctx); err == nil {
		n.set.kindChanged(n.src.Kind, cur)
	} else {
		n.log.Debug("reading the objects to notify of failed; next poll", zap.Error(err))
	}
}
