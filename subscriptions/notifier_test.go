package subscriptions

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/o2ims-operator/o2ims-operator/nbi/callback"
	"github.com/o2ims-operator/o2ims-operator/subscriptions/smo"

	"github.com/o2ims-operator/o2ims-operator/inventory"
)

// notifierEnv is a notifier over an empty, synced view and a fake clientset's ConfigMaps, delivering to a
// loopback receiver; the clock is fake, so nothing is polled, persisted or retried unless a test steps it.
type notifierEnv struct {
	n     *Notifier
	store *SubscriptionStore
	recv  *smo.Receiver
	clock *clocktesting.FakeClock
}

func newNotifierEnv(t *testing.T, cfg NotifierConfig) *notifierEnv {
	t.Helper()
	policy, err := callback.New(callback.Config{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	require.NoError(t, err)
	e := &notifierEnv{recv: smo.New(), clock: clocktesting.NewFakeClock(time.Now())}
	t.Cleanup(e.recv.Close)
	view := syncedView(t)
	e.store = NewSubscriptionStore(fake.NewClientset(), "o2ims").WithPolicy(policy)
	cfg.Policy, cfg.Clock = policy, e.clock
	e.n, err = NewNotifier(cfg, view, e.store, nil, nil, nil)
	require.NoError(t, err)
	return e
}

// run starts the notifier with a subscription to the receiver, waits until it delivers to it, and
// answers the subscription's id.
func (e *notifierEnv) run(t *testing.T) string {
	t.Helper()
	sub, err := e.store.Create(context.Background(), Subscription{Callback: e.recv.URL()})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.n.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	require.Eventually(t, func() bool { return e.depths() != nil }, 10*time.Second, time.Millisecond, "the subscription never joined")
	return sub.SubscriptionID
}

// depths are the subscribers' queue depths (nil: none joined yet).
func (e *notifierEnv) depths() []int {
	e.n.set.mu.Lock()
	defer e.n.set.mu.Unlock()
	var out []int
	for _, s := range e.n.set.subs {
		d, _ := s.queue.depth()
		out = append(out, d)
	}
	return out
}

// change is a change of one resource between two states ("" for none).
func change(id, prior, post string) inventory.Change {
	e := func(v string) *inventory.Entry {
		if v == "" {
			return nil
		}
		return inventory.NewEntry(id, map[string]any{"resourceId": id, "description": v})
	}
	return inventory.Change{Kind: inventory.KindResource, ID: id, Prior: e(prior), Post: e(post)}
}

// delivered answers each accepted notification as "event resourceId prior→post".
func delivered(r *smo.Receiver) []string {
	events := map[EventType]string{EventCreate: "create", EventModify: "modify", EventDelete: "delete"}
	var out []string
	for _, n := range r.Notifications() {
		prior, _ := n.Body["priorObjectState"].(map[string]any)
		post, _ := n.Body["postObjectState"].(map[string]any)
		obj := post
		if obj == nil {
			obj = prior
		}
		desc := func(m map[string]any) string { s, _ := m["description"].(string); return s }
		event := EventType(n.Body["notificationEventType"].(float64))
		out = append(out, fmt.Sprintf("%s %s %s→%s", events[event], obj["resourceId"], desc(prior), desc(post)))
	}
	return out
}

// Past the queue limit, the changes of an object already waiting are folded into its notification
// through the whole path: the view's sink queues, a stalled callback holds the head, and once it answers
// the subscriber is told each object's first prior state and last post state, in order, nothing lost.
func TestChangesBeyondTheQueueLimitAreCoalescedAndDelivered(t *testing.T) {
	e := newNotifierEnv(t, NotifierConfig{QueueLimit: 2, Timeout: time.Minute})
	e.run(t)
	sink := e.n.set.apply // what the view calls

	sink([]inventory.Change{change("x", "", "x1")})
	require.Eventually(t, func() bool { return len(e.recv.Notifications()) == 1 }, 10*time.Second, time.Millisecond)

	e.recv.Hang(true)
	sink([]inventory.Change{change("x", "x1", "x2")})
	require.Eventually(t, func() bool { return e.recv.Attempts() == 2 }, 10*time.Second, time.Millisecond, "x1→x2 is being sent")
	sink([]inventory.Change{change("x", "x2", "x3")})                          // queues behind the one being sent: 2, the limit
	sink([]inventory.Change{change("x", "x3", "x4")})                          // folded into x2→x3
	sink([]inventory.Change{change("y", "", "y1")})                            // another object still queues: 3
	sink([]inventory.Change{change("y", "y1", "y2"), change("x", "x4", "x5")}) // folded, both
	assert.Equal(t, []int{3}, e.depths(), "bounded by the objects, not the changes")
	e.recv.Hang(false)

	require.Eventually(t, func() bool { return len(e.recv.Notifications()) == 4 }, 10*time.Second, time.Millisecond)
	assert.Equal(t, []string{"create x →x1", "modify x x1→x2", "modify x x2→x5", "create y →y2"}, delivered(e.recv))
}

// An object that appears and goes while its creation waits beyond the limit is folded into nothing: the
// subscriber never knew it, so nothing is sent (a notification with neither state would name no object).
func TestAnObjectCreatedAndDeletedWhileWaitingIsNotNotified(t *testing.T) {
	e := newNotifierEnv(t, NotifierConfig{QueueLimit: 1, Timeout: time.Minute})
	e.run(t)
	sink := e.n.set.apply
	e.recv.Hang(true)
	sink([]inventory.Change{change("x", "", "x1")})
	require.Eventually(t, func() bool { return e.recv.Attempts() == 1 }, 10*time.Second, time.Millisecond, "x is being sent")
	sink([]inventory.Change{change("y", "", "y1")}) // queues behind x: the limit
	sink([]inventory.Change{change("y", "y1", "")}) // folded: y came and went
	sink([]inventory.Change{change("z", "", "z1")})
	assert.Equal(t, []int{2}, e.depths(), "y is gone from the queue")
	e.recv.Hang(false)
	require.Eventually(t, func() bool { return len(e.recv.Notifications()) == 2 }, 10*time.Second, time.Millisecond)
	assert.Equal(t, []string{"create x →x1", "create z →z1"}, delivered(e.recv))
}

// Progress is written on the notifier's clock, every PersistEvery, once a subscriber's queue is empty:
// nothing before the tick, what was delivered after it.
func TestProgressIsPersistedOnTheClockOnceDelivered(t *testing.T) {
	e := newNotifierEnv(t, NotifierConfig{PersistEvery: time.Minute})
	id := e.run(t)
	e.n.set.apply([]inventory.Change{change("x", "", "x1")})
	require.Eventually(t, func() bool { return len(e.recv.Notifications()) == 1 }, 10*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { d := e.depths(); return len(d) == 1 && d[0] == 0 }, 10*time.Second, time.Millisecond)
	_, found, err := e.store.LoadProgress(context.Background(), id)
	require.NoError(t, err)
	require.False(t, found, "nothing written before the tick")

	require.Eventually(t, e.clock.HasWaiters, 10*time.Second, time.Millisecond, "the notifier's tickers")
	e.clock.Step(time.Minute)
	require.Eventually(t, func() bool {
		p, found, err := e.store.LoadProgress(context.Background(), id)
		return err == nil && found && p["x"].Post != nil && p["x"].Post.Attrs["description"] == "x1"
	}, 10*time.Second, time.Millisecond, "the delivered state persisted at the tick")
}
