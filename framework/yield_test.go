package framework

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// A token taken ahead is spent by the one call it was taken for: that call does not wait, a second call
// with the same context waits as any does. An empty bucket gives none ahead, and says how long the calls
// already waiting hold it.
func TestBucketTakesATokenAheadOnlyWhenOneIsFree(t *testing.T) {
	b := newBucket(1, 1) // one token in hand, the next in a second
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	ahead, ok := b.takeAhead(ctx)
	require.True(t, ok, "a full bucket gives a token ahead")
	require.NoError(t, b.Wait(ahead), "the call the token was taken for waited again")
	// The bucket is empty now: rate's Wait refuses at once a wait longer than the deadline.
	require.Error(t, b.Wait(ahead), "the token ahead was spent twice")
	_, ok = b.takeAhead(context.Background())
	require.False(t, ok, "an empty bucket gave a token ahead")

	b.lim.SetLimitAt(time.Now(), 10)
	for range 20 { // 20 calls waiting at 10/s: about 2 s ahead of a new one
		b.lim.Reserve()
	}
	assert.Greater(t, b.backlog(), 1500*time.Millisecond)
	assert.LessOrEqual(t, b.backlog(), 2100*time.Millisecond)
	assert.Greater(t, b.backlog(), 1500*time.Millisecond, "asking for the backlog reserved a token")
}

// The pass's patch yields only when every status field it sets is progress: one set by SetStatus, or
// written into Status directly, is state.
func TestOnlyProgressIsWhatMayYield(t *testing.T) {
	p := newPatch()
	require.False(t, p.onlyProgress(), "an empty patch")
	p.SetProgress("m1", "message")
	require.True(t, p.onlyProgress())
	p.SetStatus("m2", "message")
	p.SetProgress("m3", "message")
	require.False(t, p.onlyProgress(), "SetStatus on a key makes it state for the whole pass")

	p = newPatch()
	p.SetProgress("m1", "message")
	p.Status["state"] = "done"
	require.False(t, p.onlyProgress(), "a key written directly")

	// Pending progress goes under the pass's own fields, deletions included.
	w := &workerState{yielded: map[string]any{"message": "old", "detail": map[string]any{"a": "1", "b": "2"}}}
	p = newPatch()
	p.SetStatus(map[string]any{"b": nil}, "detail")
	w.restoreYielded(p)
	assert.Nil(t, w.yielded)
	assert.Equal(t, map[string]any{"message": "old", "detail": map[string]any{"a": "1", "b": nil}}, p.Status)
	assert.False(t, p.onlyProgress(), "the pass's own state keeps the write from yielding")
}

// On the real API server, with the widgets' bucket emptied by the test: a status write that only reports
// progress yields (nothing is written; the object keeps its last message), a newer observation replaces
// the pending one, and once a token is free the newest is written by itself, in one write, without the
// handler running again. A write that changes the state never yields: it waits for its token.
func TestProgressYieldsToABusyBucketAndTheNewestIsWritten(t *testing.T) {
	t.Parallel()
	var msg atomic.Value
	msg.Store("m1")
	c := &calls{}
	var to *testOperator
	res := "widgets.test.o2ims.io"
	yields := func() float64 { return testutil.ToFloat64(to.op.metrics.Yields.WithLabelValues(res)) }
	var yieldsAtRun sync.Map // handler run → the yields counted when it began
	to = newTestOperator(t, "yield", Options{}, func(_ *Operator, w *Watch) {
		w.OnCreate("walk", func(_ context.Context, cause *Cause) error {
			y := yields()
			n := c.add(cause)
			yieldsAtRun.Store(n, y)
			if n == 1 {
				cause.Patch.SetStatus("working", "phase")
			}
			m := msg.Load().(string)
			if m == "second" {
				// A state change alone: no object patch beside it that would keep it from yielding.
				cause.Patch.SetStatus("second", "phase")
				return Temporary(time.Hour, "waiting")
			}
			cause.Patch.SetProgress(m, "message")
			return Temporary(time.Hour, "waiting") // woken only by a change of the object
		})
	})
	to.start(t)
	create(t, widget("yield", "walker", map[string]any{"size": 1}))
	eventually(t, 30*time.Second, func() bool {
		u, ok := get(t, "walker")
		return ok && statusField(u, "phase") == "working" && statusField(u, "message") == "m1"
	}, "the first status was never written")

	statusWrites := func() float64 { return testutil.ToFloat64(to.op.metrics.Writes.WithLabelValues(res, "status")) }
	b := to.op.clients.Dynamic.(*perResource).client(widgetGVR.GroupResource()).bucket
	require.NotNil(t, b)
	b.lim.SetLimitAt(time.Now(), rate.Limit(1e-9)) // no refill to speak of
	for b.lim.Allow() {
	}
	poke := func(v string) {
		body := []byte(`{"metadata":{"annotations":{"poke":"` + v + `"}}}`)
		_, err := kubeapi.Shared(t).AdminDynamic().Resource(widgetGVR).Patch(context.Background(), "walker",
			types.MergePatchType, body, metav1.PatchOptions{})
		require.NoError(t, err)
	}

	// Passes of one object never overlap: a yield counted after the handler's run began is that pass's or a
	// later one's, so the pending progress is then what that run set.
	observe := func(m string, run int) {
		msg.Store(m)
		poke(m)
		eventually(t, 30*time.Second, func() bool { return len(c.of("walk", "walker")) == run }, "the handler never ran with %s", m)
		y, _ := yieldsAtRun.Load(run)
		eventually(t, 30*time.Second, func() bool { return yields() > y.(float64) }, "%s did not yield to the empty bucket", m)
	}
	observe("m2", 2)
	observe("m3", 3)
	assert.Equal(t, "m1", statusField(mustGet(t, "walker"), "message"), "a progress write went through an empty bucket")

	before := statusWrites()
	b.lim.SetLimitAt(time.Now(), rate.Inf)
	eventually(t, 30*time.Second, func() bool { return statusField(mustGet(t, "walker"), "message") == "m3" },
		"the pending progress was never written once tokens were free")
	assert.Len(t, c.of("walk", "walker"), 3, "the handler ran again: the pending progress was not written by itself, or the echo of our own write woke it")
	// The counter moves once the write's answer is back, after the server shows it.
	eventually(t, 10*time.Second, func() bool { return statusWrites() > before }, "the write was not counted")
	assert.Equal(t, before+1, statusWrites(), "the superseded progress was written too")

	// A state change waits for its token behind 50 calls at 10/s, and is written: it never yields.
	b.lim.SetLimitAt(time.Now(), 10)
	for b.lim.Allow() {
	}
	for range 50 {
		b.lim.Reserve()
	}
	y := yields()
	msg.Store("second")
	poke("second")
	eventually(t, 30*time.Second, func() bool { return statusField(mustGet(t, "walker"), "phase") == "second" },
		"the state change was never written")
	assert.Equal(t, y, yields(), "a state change yielded")
}

// With a whole round of passes waiting for a worker, progress yields to them even with tokens to spare,
// and is written by itself once the queue has drained.
func TestProgressYieldsToABusyQueue(t *testing.T) {
	t.Parallel()
	var msg atomic.Value
	msg.Store("m1")
	c := &calls{}
	var to *testOperator
	to = newTestOperator(t, "yieldq", Options{Workers: 1}, func(_ *Operator, w *Watch) {
		w.OnCreate("walk", func(ctx context.Context, cause *Cause) error {
			if cause.Object.GetName() != "qwalker" {
				return nil
			}
			c.add(cause)
			m := msg.Load().(string)
			if m == "busy" {
				// Another object's pass waits for the only worker, this one's.
				_, err := kubeapi.Shared(t).AdminDynamic().Resource(widgetGVR).Create(ctx, widget("yieldq", "qother", map[string]any{}), metav1.CreateOptions{})
				if err != nil {
					return err
				}
				for to.op.ctrls[0].queue.Len() < 1 {
					select {
					case <-ctx.Done():
						return ctx.Err()
					case <-time.After(10 * time.Millisecond):
					}
				}
			}
			cause.Patch.SetProgress(m, "message")
			return Temporary(time.Hour, "waiting")
		})
	})
	to.start(t)
	create(t, widget("yieldq", "qwalker", map[string]any{}))
	eventually(t, 30*time.Second, func() bool { return statusField(mustGet(t, "qwalker"), "message") == "m1" },
		"the first status was never written")
	res := "widgets.test.o2ims.io"
	y := testutil.ToFloat64(to.op.metrics.Yields.WithLabelValues(res))
	msg.Store("busy")
	body := []byte(`{"metadata":{"annotations":{"poke":"busy"}}}`)
	_, err := kubeapi.Shared(t).AdminDynamic().Resource(widgetGVR).Patch(context.Background(), "qwalker",
		types.MergePatchType, body, metav1.PatchOptions{})
	require.NoError(t, err)
	eventually(t, 30*time.Second, func() bool { return statusField(mustGet(t, "qwalker"), "message") == "busy" },
		"the progress that yielded to the queue was never written")
	assert.Equal(t, y+1, testutil.ToFloat64(to.op.metrics.Yields.WithLabelValues(res)), "it did not yield to the waiting pass, or yielded again with the queue drained")
	assert.Len(t, c.of("walk", "qwalker"), 2, "the handler ran again: the pending progress was not written by itself")
}

// A full queue holds progress back for yieldHoldMax at most, on the operator's clock: within it the
// pending message is tried again and waits, past it it is written though the queue is still full.
func TestProgressWaitsForAFullQueueTenSecondsAtMost(t *testing.T) {
	ctx := context.Background()
	clk := testingclock.NewFakeClock(time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC))
	runs := 0
	c := unitController(t, clk, func(w *Watch) {
		w.OnCreate("walk", func(_ context.Context, cause *Cause) error {
			runs++
			cause.Patch.SetProgress(fmt.Sprintf("step %d", runs), "message")
			return Temporary(time.Hour, "waiting")
		})
		// The finalizer putNew sets is needed, so no object patch removes it beside the progress.
		w.OnDelete("release", func(context.Context, *Cause) error { return nil })
	})
	key := c.putNew(t, "wy")
	for i := range c.op.opts.Workers {
		c.queue.Add(fmt.Sprintf("other-%d", i)) // a whole round of passes waiting for a worker
	}
	message := func() string {
		u, err := c.fake.Resource(widgetGVR).Get(ctx, "wy", metav1.GetOptions{})
		require.NoError(t, err)
		return statusField(u, "message")
	}
	yields := func() float64 { return testutil.ToFloat64(c.op.metrics.Yields.WithLabelValues(c.resource)) }

	assert.Equal(t, passResult{after: yieldBusyRetry}, c.sync(ctx, key), "yielded: back in a second, not in an hour")
	assert.Equal(t, "<nil>", message())
	clk.Step(yieldBusyRetry)
	assert.Equal(t, passResult{after: yieldBusyRetry}, c.sync(ctx, key), "the queue is still full")
	assert.Equal(t, "<nil>", message())
	assert.Equal(t, 2.0, yields())

	clk.Step(yieldHoldMax)
	c.sync(ctx, key)
	assert.Equal(t, "step 1", message(), "held back past the bound, and still not written")
	assert.Equal(t, 2.0, yields())
	assert.Equal(t, 1, runs, "the pending progress is written without the handler running again")
}
