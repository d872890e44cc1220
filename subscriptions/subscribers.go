package subscriptions

import (
	"bytes"
	"context"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"k8s.io/utils/clock"

	"github.com/o2ims-operator/o2ims-operator/nbi/callback"

	"github.com/o2ims-operator/o2ims-operator/inventory"
)

// subscriber is one subscription being delivered to: its queue and its delivery's state.
type subscriber struct {
	sub    Subscription
	filter any // its Renderer's compiled filter (nil: none)
	queue  *queue
	cancel context.CancelFunc // ends its delivery
	// refused is why the policy refused the last attempt ("": it did not), so a refusal is logged when
	// it starts and ends, not at every retry. Its delivery's alone.
	refused callback.Reason
}

// subscriberSet is the subscriptions being delivered to and the state their changes are diffed against:
// every object as the notifier last saw it. One lock holds both, so a subscriber joins at one point of
// the change stream — what changed before is in the missed changes its queue starts with, what follows
// is pushed to it — and each queue has its own lock under it.
type subscriberSet struct {
	store   *SubscriptionStore
	compile func(string) (any, error) // a subscription's filter (its Renderer's Compile)
	// order, when set, orders the changes a diff finds as they happened (the alarms by their change
	// time), rather than as the view would have emitted them.
	order      func(a, b inventory.Change) int
	queueLimit int
	deliver    func(context.Context, *subscriber)
	metrics    *notifierMetrics
	clock      clock.PassiveClock
	log        *zap.Logger

	// syncing serialises sync: a poll that listed before a subscription was created must not stop the
	// delivery syncNow has just started for it.
	syncing sync.Mutex

	mu     sync.Mutex
	state  map[string]inventory.Change
	subs   map[string]*subscriber
	ctx    context.Context // the notifier's while it runs, nil otherwise
	active sync.WaitGroup  // deliveries running
}

// begin runs the set under ctx: a subscription created on this replica joins at once (syncNow).
func (ss *subscriberSet) begin(ctx context.Context) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.ctx = ctx
}

// seed records objects as they are now, without notifying anyone (the view's at attach, the deployment
// managers at start).
func (ss *subscriberSet) seed(objs map[string]inventory.Change) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for id, c := range objs {
		ss.state[id] = c
	}
}

// apply records changes and queues them for every subscriber. It is the view's sink: it runs under the
// view's lock and only appends.
func (ss *subscriberSet) apply(changes []inventory.Change) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.applyLocked(changes)
}

func (ss *subscriberSet) applyLocked(changes []inventory.Change) {
	for _, c := range changes {
		if c.Post == nil {
			delete(ss.state, c.ID)
		} else {
			ss.state[c.ID] = inventory.Change{Kind: c.Kind, ID: c.ID, Post: c.Post}
		}
		for _, s := range ss.subs {
			s.queue.push(c)
		}
	}
}

// managersChanged applies what changed of the deployment managers since the last seen (dms: all now).
func (ss *subscriberSet) managersChanged(dms []*inventory.Entry) {
	cur := make(map[string]inventory.Change, len(dms))
	for _, e := range dms {
		cur[e.ID] = inventory.Change{Kind: inventory.KindDeploymentManager, ID: e.ID, Post: e}
	}
	ss.kindChanged(inventory.KindDeploymentManager, cur)
}

// kindChanged applies what changed of the objects of kind since the last seen (cur: all of them now),
// for objects that are polled rather than pushed (deployment managers, alarms).
func (ss *subscriberSet) kindChanged(kind inventory.Kind, cur map[string]inventory.Change) {
	now := ss.clock.Now()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	before := map[string]inventory.Change{}
	for id, c := range ss.state {
		if c.Kind == kind {
			before[id] = c
		}
	}
	ss.applyLocked(ss.diff(before, cur, now))
}

// sync starts a delivery for each new subscription and stops those of deleted ones. A subscription with
// persisted progress is first queued what changed since (a restart, a new leader); one without is told
// of changes from now on. One whose progress cannot be read is retried at the next poll (starting it
// without would lose what it missed).
func (ss *subscriberSet) sync(ctx context.Context) {
	ss.syncing.Lock()
	defer ss.syncing.Unlock()
	list, err := ss.store.List(ctx)
	if err != nil {
		ss.log.Warn("listing subscriptions failed", zap.Error(err))
		return
	}
	seen := map[string]bool{}
	for _, sub := range list {
		seen[sub.SubscriptionID] = true
		if !ss.known(sub.SubscriptionID) {
			ss.join(ctx, sub)
		}
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for id, s := range ss.subs {
		if !seen[id] {
			s.cancel()
			delete(ss.subs, id)
			ss.metrics.forget(id)
		}
	}
}

func (ss *subscriberSet) known(id string) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	_, ok := ss.subs[id]
	return ok
}

// join starts delivering to sub from its persisted progress (or from now).
func (ss *subscriberSet) join(ctx context.Context, sub Subscription) {
	var f any
	if sub.Filter != "" {
		var err error
		if f, err = ss.compile(sub.Filter); err != nil {
			ss.log.Warn("subscription has a filter that does not parse; skipped", zap.String("subscription", sub.SubscriptionID))
			return
		}
	}
	progress, found, err := ss.store.LoadProgress(ctx, sub.SubscriptionID)
	if err != nil {
		ss.log.Warn("reading a subscription's progress failed; retrying at the next poll", zap.String("subscription", sub.SubscriptionID), zap.Error(err))
		return
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if _, known := ss.subs[sub.SubscriptionID]; known || ss.ctx == nil {
		return // known, or the set has ended: end's Wait must not race a new delivery's Add
	}
	s := &subscriber{sub: sub, filter: f}
	if found {
		s.queue = newQueue(ss.queueLimit, progress, false, ss.clock)
		missed := ss.diff(progress, ss.state, ss.clock.Now())
		for _, c := range missed {
			s.queue.push(c)
		}
		if len(missed) > 0 {
			ss.log.Info("notifying a subscription of what changed while it was not being delivered to",
				zap.String("subscription", sub.SubscriptionID), zap.Int("changes", len(missed)))
		}
	} else {
		told := make(map[string]inventory.Change, len(ss.state))
		for id, c := range ss.state {
			told[id] = c
		}
		s.queue = newQueue(ss.queueLimit, told, true, ss.clock)
	}
	var sctx context.Context
	sctx, s.cancel = context.WithCancel(ctx)
	ss.subs[sub.SubscriptionID] = s
	ss.active.Add(1)
	go func() {
		defer ss.active.Done()
		ss.deliver(sctx, s)
	}()
}

// syncNow syncs at once while running (a subscription just created on this replica); otherwise the
// leader's next poll finds it.
func (ss *subscriberSet) syncNow() {
	ss.mu.Lock()
	ctx := ss.ctx
	ss.mu.Unlock()
	if ctx != nil {
		ss.sync(ctx)
	}
}

// end stops every delivery and waits for them to return.
func (ss *subscriberSet) end() {
	ss.mu.Lock()
	ss.ctx = nil
	for _, s := range ss.subs {
		s.cancel()
	}
	ss.mu.Unlock()
	ss.active.Wait()
}

// persist writes each subscriber's progress when its queue is empty and it moved.
func (ss *subscriberSet) persist(ctx context.Context) {
	ss.mu.Lock()
	subs := make([]*subscriber, 0, len(ss.subs))
	for _, s := range ss.subs {
		subs = append(subs, s)
	}
	ss.mu.Unlock()
	for _, s := range subs {
		objs, ok := s.queue.unsaved()
		if !ok {
			continue
		}
		if err := ss.store.SaveProgress(ctx, s.sub.SubscriptionID, objs); err != nil {
			ss.log.Warn("writing a subscription's progress failed; retrying", zap.String("subscription", s.sub.SubscriptionID), zap.Error(err))
			s.queue.saveFailed()
		}
	}
}

// Describe and Collect export queue depth and oldest undelivered age per subscription.
func (ss *subscriberSet) Describe(ch chan<- *prometheus.Desc) {
	ch <- ss.metrics.depthDesc
	ch <- ss.metrics.ageDesc
}

func (ss *subscriberSet) Collect(ch chan<- prometheus.Metric) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	now := ss.clock.Now()
	for id, s := range ss.subs {
		depth, oldest := s.queue.depth()
		age := 0.0
		if depth > 0 {
			age = now.Sub(oldest).Seconds()
		}
		ch <- prometheus.MustNewConstMetric(ss.metrics.depthDesc, prometheus.GaugeValue, float64(depth), id)
		ch <- prometheus.MustNewConstMetric(ss.metrics.ageDesc, prometheus.GaugeValue, age, id)
	}
}

// diff is what changed from before to now, in ss's order.
func (ss *subscriberSet) diff(before, now map[string]inventory.Change, at time.Time) []inventory.Change {
	changes := diff(before, now, at)
	if ss.order != nil {
		slices.SortStableFunc(changes, ss.order)
	}
	return changes
}

// diff is what changed from before to now, ordered as the view would have emitted it.
func diff(before, now map[string]inventory.Change, at time.Time) []inventory.Change {
	var changes []inventory.Change
	for id, c := range now {
		if b, ok := before[id]; !ok {
			changes = append(changes, inventory.Change{Kind: c.Kind, ID: id, Post: c.Post, At: at})
		} else if !bytes.Equal(b.Post.JSON, c.Post.JSON) {
			changes = append(changes, inventory.Change{Kind: c.Kind, ID: id, Prior: b.Post, Post: c.Post, At: at})
		}
	}
	for id, b := range before {
		if _, ok := now[id]; !ok {
			changes = append(changes, inventory.Change{Kind: b.Kind, ID: id, Prior: b.Post, At: at})
		}
	}
	sortChanges(changes)
	return changes
}

// sortChanges orders a reconstructed batch as the view would have: creations of pools and types
// before the resources naming them, deletions of resources before those of their pools and types.
func sortChanges(cs []inventory.Change) {
	rank := func(c inventory.Change) int {
		order := map[inventory.Kind]int{inventory.KindResourcePool: 0, inventory.KindResourceType: 1, inventory.KindResource: 2, inventory.KindDeploymentManager: 3}[c.Kind]
		if c.Post == nil {
			return 10 - order
		}
		return order
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if rank(cs[i]) != rank(cs[j]) {
			return rank(cs[i]) < rank(cs[j])
		}
		return cs[i].ID < cs[j].ID
	})
}
