package inventory

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/o2ims-operator/o2ims-operator/nbi/callback"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

// NotifierConfig bounds delivery. Zero values take the defaults.
type NotifierConfig struct {
	Timeout          time.Duration // per POST (default 10 s)
	BackoffBase      time.Duration // first retry delay (default 1 s), doubled per failure …
	BackoffCap       time.Duration // … up to this (default 60 s), each with jitter (a delay in [d/2, d])
	QueueLimit       int           // per subscriber, before changes of one object are coalesced (default 10 000)
	SubscriptionPoll time.Duration // how often subscriptions are re-read (default 5 s)
	ManagerPoll      time.Duration // how often deployment managers are recomputed (default 2 s)
	PersistEvery     time.Duration // how often delivered progress is written (default 1 s)
	APIRoot          string        // prefix of objectRef (default the inventory root path)
	// Policy is checked at every connection a delivery makes (default callback.Default()): the
	// subscription store's, so a callback accepted at creation that now resolves inside is refused.
	Policy *callback.Policy
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
	return c
}

// Notifier delivers InventoryChangeNotifications: at least once, in order per subscriber, each
// subscriber with its own queue and goroutine, so a dead callback slows no one else, and the view (whose
// sink only appends) never waits for a callback.
type Notifier struct {
	cfg      NotifierConfig
	view     *View
	store    *SubscriptionStore
	managers func() ([]*Entry, error) // deployment managers now (nil: none)
	log      *zap.Logger
	client   *http.Client

	mu      sync.Mutex
	subs    map[string]*subscriber
	state   map[string]Change // every object as the notifier last saw it (Post)
	running bool
	runCtx  context.Context // Run's, once delivering

	delivered, failed, filtered *prometheus.CounterVec
	retried, refused            *prometheus.CounterVec
	latency                     prometheus.Histogram
	depthDesc, ageDesc          *prometheus.Desc
}

type subscriber struct {
	sub    Subscription
	filter query.Filter
	wake   chan struct{}
	cancel context.CancelFunc
	queue  []*note
	index  map[string]*note // object id → its last queued note not yet being delivered
	// told is every object as this subscriber was last told of it (delivered, or left out by its
	// filter): its progress, persisted in its ConfigMap when its queue is empty and told moved.
	told  map[string]Change
	dirty bool
	// refused is why the policy refused the last attempt ("": it did not), so a refusal is logged when
	// it starts and ends, not at every retry.
	refused callback.Reason
}

type note struct {
	kind        Kind
	id          string
	prior, post *Entry
	at          time.Time
	sending     bool
}

// NewNotifier builds the notifier; reg receives its metrics (nil: not registered).
func NewNotifier(cfg NotifierConfig, view *View, store *SubscriptionStore,
	managers func() ([]*Entry, error), log *zap.Logger, reg prometheus.Registerer) (*Notifier, error) {
	if log == nil {
		log = zap.NewNop()
	}
	cfg = cfg.withDefaults()
	n := &Notifier{
		cfg: cfg, view: view, store: store, managers: managers, log: log,
		// Every connection through the policy; a redirect is not a delivery: the callback the SMO
		// registered is the only one POSTed to.
		client: cfg.Policy.Client(cfg.Timeout),
		subs:   map[string]*subscriber{},
		state:  map[string]Change{},
		delivered: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "o2ims_inventory_notifications_delivered_total",
			Help: "Inventory change notifications the callback accepted (2xx), per subscription."}, []string{"subscription"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "o2ims_inventory_notifications_failed_total",
			Help: "Notification POSTs that failed (timeout, transport, non-2xx, redirect), per subscription."}, []string{"subscription"}),
		retried: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "o2ims_inventory_notifications_retried_total",
			Help: "Notification POSTs that were retries of a failed one, per subscription."}, []string{"subscription"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "o2ims_inventory_notifications_refused_total",
			Help: "Notification POSTs (counted as failed, and retried) that the callback policy refused to connect, per reason."}, []string{"reason"}),
		filtered: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "o2ims_inventory_notifications_filtered_total",
			Help: "Changes a subscription's filter left out, per subscription."}, []string{"subscription"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "o2ims_inventory_notification_latency_seconds",
			Help:    "From a change seen by the operator to its notification accepted by the callback.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 18)}),
		depthDesc: prometheus.NewDesc("o2ims_inventory_notification_queue_depth", "Undelivered notifications per subscription.", []string{"subscription"}, nil),
		ageDesc:   prometheus.NewDesc("o2ims_inventory_notification_oldest_undelivered_seconds", "Age of the oldest undelivered notification per subscription (0: none).", []string{"subscription"}, nil),
	}
	if reg != nil {
		for _, r := range callback.Reasons {
			n.refused.WithLabelValues(string(r))
		}
		for _, c := range []prometheus.Collector{n.delivered, n.failed, n.retried, n.refused, n.filtered, n.latency, n} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return n, nil
}

// Describe and Collect export queue depth and oldest undelivered age per subscription.
func (n *Notifier) Describe(ch chan<- *prometheus.Desc) { ch <- n.depthDesc; ch <- n.ageDesc }

func (n *Notifier) Collect(ch chan<- prometheus.Metric) {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := time.Now()
	for id, s := range n.subs {
		age := 0.0
		if len(s.queue) > 0 {
			age = now.Sub(s.queue[0].at).Seconds()
		}
		ch <- prometheus.MustNewConstMetric(n.depthDesc, prometheus.GaugeValue, float64(len(s.queue)), id)
		ch <- prometheus.MustNewConstMetric(n.ageDesc, prometheus.GaugeValue, age, id)
	}
}

// Run delivers until ctx ends, once leading reports true and the view has its first full listing:
// only the leader delivers (a replica that loses the Lease exits, see framework), every replica serves
// the subscription routes.
func (n *Notifier) Run(ctx context.Context, leading func() bool) error {
	for {
		if synced, _ := n.view.Synced(); synced && (leading == nil || leading()) {
			break
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
	if err := n.start(ctx); err != nil {
		return err
	}
	subTick := time.NewTicker(n.cfg.SubscriptionPoll)
	dmTick := time.NewTicker(n.cfg.ManagerPoll)
	persistTick := time.NewTicker(n.cfg.PersistEvery)
	defer subTick.Stop()
	defer dmTick.Stop()
	defer persistTick.Stop()
	for {
		select {
		case <-ctx.Done():
			n.mu.Lock()
			for _, s := range n.subs {
				s.cancel()
			}
			n.mu.Unlock()
			return nil
		case <-subTick.C:
			n.syncSubscriptions(ctx)
		case <-dmTick.C:
			n.pollManagers()
		case <-persistTick.C:
			n.persist(ctx)
		}
	}
}

// start attaches to the view (atomically taking its objects as the current state), adds the
// deployment managers, and then the subscriptions: each resumes from its own persisted progress.
func (n *Notifier) start(ctx context.Context) error {
	n.view.Attach(func(objs map[string]Change) {
		n.mu.Lock()
		defer n.mu.Unlock()
		for id, c := range objs {
			n.state[id] = c
		}
	}, n.sink)
	if n.managers != nil {
		// The caches are synced once this replica leads; until they answer, what the deployment
		// managers are is unknown, which is not "none" (that would tell every subscriber they were
		// deleted).
		for {
			dms, err := n.managers()
			if err == nil {
				n.mu.Lock()
				for _, e := range dms {
					n.state[e.ID] = Change{Kind: KindDeploymentManager, ID: e.ID, Post: e}
				}
				n.mu.Unlock()
				break
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	n.mu.Lock()
	n.running, n.runCtx = true, ctx
	n.mu.Unlock()
	n.syncSubscriptions(ctx)
	return nil
}

// diff is what changed from before to now, ordered as the view would have emitted it.
func diff(before, now map[string]Change, at time.Time) []Change {
	var changes []Change
	for id, c := range now {
		if b, ok := before[id]; !ok {
			changes = append(changes, Change{Kind: c.Kind, ID: id, Post: c.Post, At: at})
		} else if !bytes.Equal(b.Post.JSON, c.Post.JSON) {
			changes = append(changes, Change{Kind: c.Kind, ID: id, Prior: b.Post, Post: c.Post, At: at})
		}
	}
	for id, b := range before {
		if _, ok := now[id]; !ok {
			changes = append(changes, Change{Kind: b.Kind, ID: id, Prior: b.Post, At: at})
		}
	}
	sortChanges(changes)
	return changes
}

// sortChanges orders a reconstructed batch as the view would have: creations of pools and types
// before the resources naming them, deletions of resources before those of their pools and types.
func sortChanges(cs []Change) {
	rank := func(c Change) int {
		order := map[Kind]int{KindResourcePool: 0, KindResourceType: 1, KindResource: 2, KindDeploymentManager: 3}[c.Kind]
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

// sink is the view's: it runs under the view's lock and only appends.
func (n *Notifier) sink(changes []Change) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.enqueueLocked(changes)
}

func (n *Notifier) enqueueLocked(changes []Change) {
	for _, c := range changes {
		if c.Post == nil {
			delete(n.state, c.ID)
		} else {
			n.state[c.ID] = Change{Kind: c.Kind, ID: c.ID, Post: c.Post}
		}
		for _, s := range n.subs {
			s.push(c, n.cfg.QueueLimit)
		}
	}
}

// push queues a change; past the limit, a change of an object already queued (and not being sent) is
// folded into that notification (its prior kept, its post replaced), so a queue holds at most the
// limit plus one notification per object: bounded, and nothing lost but intermediate states.
func (s *subscriber) push(c Change, limit int) {
	if len(s.queue) >= limit {
		if p := s.index[c.ID]; p != nil && !p.sending {
			p.post = c.Post
			return
		}
	}
	p := &note{kind: c.Kind, id: c.ID, prior: c.Prior, post: c.Post, at: c.At}
	if p.at.IsZero() {
		p.at = time.Now()
	}
	s.queue = append(s.queue, p)
	s.index[c.ID] = p
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// syncSubscriptions starts a deliverer for each new subscription and stops those of deleted ones. A
// subscription with persisted progress is first queued what changed since (a restart, a new leader);
// one without is told of changes from now on. One whose progress cannot be read is retried at the
// next poll (starting it without would lose what it missed).
func (n *Notifier) syncSubscriptions(ctx context.Context) {
	list, err := n.store.List(ctx)
	if err != nil {
		n.log.Warn("listing inventory subscriptions failed", zap.Error(err))
		return
	}
	seen := map[string]bool{}
	for _, sub := range list {
		seen[sub.SubscriptionID] = true
		n.mu.Lock()
		_, known := n.subs[sub.SubscriptionID]
		n.mu.Unlock()
		if known {
			continue
		}
		var f query.Filter
		if sub.Filter != "" {
			if f, err = NotificationSchema.ParseFilter(sub.Filter); err != nil {
				n.log.Warn("subscription has a filter that does not parse; skipped", zap.String("subscription", sub.SubscriptionID))
				continue
			}
		}
		progress, found, err := n.store.LoadProgress(ctx, sub.SubscriptionID)
		if err != nil {
			n.log.Warn("reading a subscription's progress failed; retrying at the next poll", zap.String("subscription", sub.SubscriptionID), zap.Error(err))
			continue
		}
		n.mu.Lock()
		if _, known := n.subs[sub.SubscriptionID]; known {
			n.mu.Unlock()
			continue
		}
		sctx, cancel := context.WithCancel(ctx)
		s := &subscriber{sub: sub, filter: f, wake: make(chan struct{}, 1), cancel: cancel, index: map[string]*note{}}
		if found {
			s.told = progress
			missed := diff(progress, n.state, time.Now())
			for _, c := range missed {
				s.push(c, n.cfg.QueueLimit)
			}
			if len(missed) > 0 {
				n.log.Info("notifying a subscription of what changed while it was not being delivered to",
					zap.String("subscription", sub.SubscriptionID), zap.Int("changes", len(missed)))
			}
		} else {
			s.told = make(map[string]Change, len(n.state))
			for id, c := range n.state {
				s.told[id] = c
			}
			s.dirty = true
		}
		n.subs[sub.SubscriptionID] = s
		n.mu.Unlock()
		go n.deliver(sctx, s)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for id, s := range n.subs {
		if !seen[id] {
			s.cancel()
			delete(n.subs, id)
			n.forgetSeries(id)
		}
	}
}

// forgetSeries drops a deleted subscription's counters, so the label takes no more values than there
// are subscriptions (at most INVENTORY_MAX_SUBSCRIPTIONS); the queue gauges go with n.subs.
func (n *Notifier) forgetSeries(id string) {
	for _, c := range []*prometheus.CounterVec{n.delivered, n.failed, n.retried, n.filtered} {
		c.DeleteLabelValues(id)
	}
}

// AddSubscription starts delivering to a just-created subscription at once rather than at the next
// poll — when this replica is the one delivering (otherwise the leader's poll finds it).
func (n *Notifier) AddSubscription() {
	n.mu.Lock()
	ctx, running := n.runCtx, n.running
	n.mu.Unlock()
	if running {
		n.syncSubscriptions(ctx)
	}
}

// pollManagers diffs the deployment managers against the last seen.
func (n *Notifier) pollManagers() {
	if n.managers == nil {
		return
	}
	dms, err := n.managers()
	if err != nil {
		return
	}
	now := time.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	cur := map[string]*Entry{}
	var changes []Change
	for _, e := range dms {
		cur[e.ID] = e
		old, ok := n.state[e.ID]
		switch {
		case !ok:
			changes = append(changes, Change{Kind: KindDeploymentManager, ID: e.ID, Post: e, At: now})
		case !bytes.Equal(old.Post.JSON, e.JSON):
			changes = append(changes, Change{Kind: KindDeploymentManager, ID: e.ID, Prior: old.Post, Post: e, At: now})
		}
	}
	for id, c := range n.state {
		if c.Kind == KindDeploymentManager && cur[id] == nil {
			changes = append(changes, Change{Kind: KindDeploymentManager, ID: id, Prior: c.Post, At: now})
		}
	}
	sortChanges(changes)
	n.enqueueLocked(changes)
}

// deliver sends one subscriber's notifications in order, each until the callback accepts it.
func (n *Notifier) deliver(ctx context.Context, s *subscriber) {
	id := s.sub.SubscriptionID
	for {
		n.mu.Lock()
		var p *note
		if len(s.queue) > 0 {
			p = s.queue[0]
			p.sending = true
			if s.index[p.id] == p {
				delete(s.index, p.id)
			}
		}
		n.mu.Unlock()
		if p == nil {
			select {
			case <-ctx.Done():
				return
			case <-s.wake:
				continue
			}
		}
		body, matched := n.notification(s, p)
		if !matched {
			n.filtered.WithLabelValues(id).Inc()
		}
		for attempt := 0; matched; attempt++ {
			if attempt > 0 {
				n.retried.WithLabelValues(id).Inc()
			}
			err := n.post(ctx, s.sub.Callback, body)
			n.noteRefusal(s, err)
			if err == nil {
				n.delivered.WithLabelValues(id).Inc()
				n.latency.Observe(time.Since(p.at).Seconds())
				break
			}
			if ctx.Err() != nil {
				return
			}
			n.failed.WithLabelValues(id).Inc()
			n.log.Debug("notification not delivered; retrying", zap.String("subscription", id), zap.Int("attempt", attempt+1), zap.Error(err))
			select {
			case <-ctx.Done():
				return
			case <-time.After(n.backoff(attempt)):
			}
		}
		n.mu.Lock()
		s.queue = s.queue[1:]
		if p.post == nil {
			delete(s.told, p.id)
		} else {
			s.told[p.id] = Change{Kind: p.kind, ID: p.id, Post: p.post}
		}
		s.dirty = true
		n.mu.Unlock()
	}
}

// noteRefusal counts a delivery the callback policy refused and logs when a subscription's refusals
// start (with why) and end. The reference's Subscription has no member for a delivery status, so the
// log and o2ims_inventory_notifications_refused_total are where it shows.
func (n *Notifier) noteRefusal(s *subscriber, err error) {
	var reason callback.Reason
	re := callback.Refusal(err)
	if re != nil {
		reason = re.Reason
		n.refused.WithLabelValues(string(reason)).Inc()
	}
	n.mu.Lock()
	was := s.refused
	s.refused = reason
	n.mu.Unlock()
	switch {
	case re != nil && was != reason:
		n.log.Warn("the callback policy refuses this subscription's callback; retrying with backoff",
			zap.String("subscription", s.sub.SubscriptionID), zap.String("reason", string(reason)), zap.Error(re))
	case re == nil && was != "":
		n.log.Info("the callback policy no longer refuses this subscription's callback", zap.String("subscription", s.sub.SubscriptionID))
	}
}

// backoff is the delay after the attempt-th failure: base·2^attempt capped, with jitter in [d/2, d].
func (n *Notifier) backoff(attempt int) time.Duration {
	d := n.cfg.BackoffCap
	if attempt < 30 {
		d = min(n.cfg.BackoffBase<<attempt, n.cfg.BackoffCap)
	}
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

var errNotAccepted = errors.New("the callback did not accept the notification")

func (n *Notifier) post(ctx context.Context, callback string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, callback, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := n.client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%w: %d", errNotAccepted, resp.StatusCode)
	}
	return nil
}

// notification renders the InventoryChangeNotification and decides the subscription's filter on it.
// notificationId is derived from the subscription and the change, so a re-sent notification (a retry,
// or one sent again after a restart) carries the same id and the SMO can drop duplicates.
func (n *Notifier) notification(s *subscriber, p *note) ([]byte, bool) {
	event := 1
	switch {
	case p.prior == nil:
		event = 0
	case p.post == nil:
		event = 2
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s/%s/%d/", p.kind, p.id, event)
	for _, e := range []*Entry{p.prior, p.post} {
		if e != nil {
			h.Write(e.JSON)
		}
		h.Write([]byte{0})
	}
	subID := uuid.MustParse(s.sub.SubscriptionID)
	attrs := map[string]any{
		"notificationId":        uuid.NewSHA1(subID, h.Sum(nil)).String(),
		"notificationEventType": int64(event),
		"objectType":            string(p.kind),
	}
	if s.sub.ConsumerSubscriptionID != "" {
		attrs["consumerSubscriptionId"] = s.sub.ConsumerSubscriptionID
	}
	if ref := n.objectRef(p); ref != "" && p.post != nil {
		attrs["objectRef"] = ref
	}
	if p.prior != nil {
		attrs["priorObjectState"] = p.prior.Attrs
	}
	if p.post != nil {
		attrs["postObjectState"] = p.post.Attrs
	}
	if s.filter != nil && !s.filter.Match(attrs) {
		return nil, false
	}
	b, _ := json.Marshal(attrs)
	return b, true
}

func (n *Notifier) objectRef(p *note) string {
	e := p.post
	if e == nil {
		e = p.prior
	}
	root := n.view.cfg.ServiceURI + n.cfg.APIRoot
	switch p.kind {
	case KindResource:
		pool, _ := e.Attrs["resourcePoolId"].(string)
		return root + "/resourcePools/" + pool + "/resources/" + p.id
	case KindResourcePool:
		return root + "/resourcePools/" + p.id
	case KindResourceType:
		return root + "/resourceTypes/" + p.id
	case KindDeploymentManager:
		return root + "/deploymentManagers/" + p.id
	}
	return ""
}

// persist writes each subscriber's progress when its queue is empty and it moved.
func (n *Notifier) persist(ctx context.Context) {
	type job struct {
		s    *subscriber
		objs map[string]storedObject
	}
	var jobs []job
	n.mu.Lock()
	for _, s := range n.subs {
		if !s.dirty || len(s.queue) > 0 {
			continue
		}
		s.dirty = false
		jobs = append(jobs, job{s, stored(s.told)})
	}
	n.mu.Unlock()
	for _, j := range jobs {
		if err := n.store.SaveProgress(ctx, j.s.sub.SubscriptionID, j.objs); err != nil {
			n.log.Warn("writing a subscription's progress failed; retrying", zap.String("subscription", j.s.sub.SubscriptionID), zap.Error(err))
			n.mu.Lock()
			j.s.dirty = true
			n.mu.Unlock()
		}
	}
}
