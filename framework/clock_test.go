package framework

import (
	"context"
	"github.com/o2ims-operator/o2ims-operator/framework/kopf"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"
)

// Unit tests of the pass on a fake clock: time only moves when the test moves it. client-go's fake
// dynamic client stands in for the API server (the real one is in the integration tests).

// unit is a controller with the fake API server behind it.
type unit struct {
	*controller
	fake dynamic.Interface
}

func unitController(t *testing.T, clk *testingclock.FakeClock, register func(w *Watch)) unit {
	t.Helper()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{widgetGVR: "WidgetList"})
	op, err := New(&Clients{Dynamic: dyn, watch: dyn, Kubernetes: kubefake.NewClientset()},
		Options{Prefix: testPrefix, Logger: zap.NewNop(), Clock: clk})
	require.NoError(t, err)
	register(op.Watch(widgetGVR, WatchOptions{Finalizer: testFinalizer}))
	require.NoError(t, op.buildControllers())
	return unit{op.ctrls[0], dyn}
}

// store puts an object in both the cache and the fake API server (patches must find it).
func (c unit) store(t *testing.T, u *unstructured.Unstructured) {
	t.Helper()
	require.NoError(t, c.informer.GetIndexer().Add(u))
	_, err := c.fake.Resource(widgetGVR).Create(context.Background(), u, metav1.CreateOptions{})
	require.NoError(t, err)
}

// handled puts a widget with a diff-base into the cache (a resume or a no-op, not a create).
func (c unit) putHandled(t *testing.T, name string) string {
	t.Helper()
	u := widget("unit", name, map[string]any{"a": "b"})
	u.SetUID(k8stypes.UID("uid-" + name))
	u.SetResourceVersion("1")
	u.SetAnnotations(map[string]string{testPrefix + "/last-handled-configuration": kopf.EncodeDiffBase(essence(u, testPrefix))})
	c.store(t, u)
	return name
}

func (c unit) putNew(t *testing.T, name string) string {
	t.Helper()
	u := widget("unit", name, map[string]any{"a": "b"})
	u.SetUID(k8stypes.UID("uid-" + name))
	u.SetResourceVersion("1")
	u.SetFinalizers([]string{testFinalizer})
	c.store(t, u)
	return name
}

func TestTemporaryDelayIsKeptOnTheOperatorsClock(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	runs := 0
	c := unitController(t, clk, func(w *Watch) {
		w.OnCreate("create_fn", func(context.Context, *Cause) error { runs++; return Temporary(30*time.Second, "waiting") })
	})
	key := c.putNew(t, "w1")
	assert.Equal(t, passResult{after: 30 * time.Second}, c.sync(context.Background(), key))
	assert.Equal(t, 1, runs)

	clk.Step(10 * time.Second)
	assert.Equal(t, passResult{after: 20 * time.Second}, c.sync(context.Background(), key), "sleeping: no observation")
	assert.Equal(t, 1, runs)

	clk.Step(20 * time.Second)
	c.sync(context.Background(), key)
	assert.Equal(t, 2, runs, "due: it runs")
}

func TestAnExternalChangeWakesASleepingHandler(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	var seen []time.Time
	c := unitController(t, clk, func(w *Watch) {
		w.OnCreate("create_fn", func(_ context.Context, cause *Cause) error {
			seen = append(seen, cause.Now)
			return Temporary(time.Hour, "waiting for a gadget")
		})
	})
	key := c.putNew(t, "w2")
	c.sync(context.Background(), key)
	clk.Step(time.Second)
	c.wake(key) // a related object changed
	c.sync(context.Background(), key)
	require.Len(t, seen, 2)
	assert.Equal(t, time.Second, seen[1].Sub(seen[0]), "woken a second later, not an hour")
}

func TestTimeoutLooksAheadOnTheClock(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	runs := 0
	c := unitController(t, clk, func(w *Watch) {
		w.OnCreate("create_fn", func(context.Context, *Cause) error { runs++; return Temporary(25*time.Second, "waiting") }, Timeout(time.Minute))
	})
	key := c.putNew(t, "w3")
	assert.Equal(t, passResult{after: 25 * time.Second}, c.sync(context.Background(), key))
	clk.Step(25 * time.Second)
	assert.Equal(t, passResult{after: 25 * time.Second}, c.sync(context.Background(), key), "50s < 60s: still in budget")
	clk.Step(25 * time.Second)
	res := c.sync(context.Background(), key)
	assert.Equal(t, 3, runs)
	assert.Equal(t, passResult{}, res, "75s would pass the 60s timeout: failed now, not after waiting")
	hs := c.objects[key].own.handlers
	assert.Empty(t, hs, "the cause is done (failed) and forgotten")
}

func TestTimerWaitsItsInitialDelayThenKeepsItsInterval(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	var ticks []time.Time
	c := unitController(t, clk, func(w *Watch) {
		w.OnTimer("tick", 5*time.Minute, time.Minute, func(_ context.Context, cause *Cause) error {
			ticks = append(ticks, cause.Now)
			return nil
		})
	})
	key := c.putNew(t, "w4")
	u, _, _ := c.informer.GetIndexer().GetByKey(key)
	uu := u.(*unstructured.Unstructured).DeepCopy()
	uu.SetAnnotations(map[string]string{testPrefix + "/last-handled-configuration": kopf.EncodeDiffBase(essence(uu, testPrefix))})
	require.NoError(t, c.informer.GetIndexer().Update(uu))

	assert.Equal(t, passResult{after: time.Minute}, c.sync(context.Background(), key))
	assert.Empty(t, ticks)
	clk.Step(time.Minute)
	assert.Equal(t, passResult{after: 5 * time.Minute}, c.sync(context.Background(), key))
	require.Len(t, ticks, 1)
	clk.Step(2 * time.Minute)
	assert.Equal(t, passResult{after: 3 * time.Minute}, c.sync(context.Background(), key), "not due yet")
	assert.Len(t, ticks, 1)
}

func TestAPassWaitsForItsOwnWriteToReachTheCache(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	runs := 0
	c := unitController(t, clk, func(w *Watch) {
		w.OnResume("create_fn", func(context.Context, *Cause) error { runs++; return nil })
	})
	key := c.putHandled(t, "w5")
	c.mu.Lock()
	st := c.stateLocked(key, "uid-w5")
	st.shared.initial = true
	c.mu.Unlock()
	ours := widget("unit", "w5", nil)
	ours.SetUID("uid-w5")
	ours.SetResourceVersion("7") // we wrote; the cache still holds resourceVersion 1
	c.wrote(key, writtenOf(ours))

	assert.Equal(t, passResult{after: c.op.opts.FreshnessTimeout}, c.sync(context.Background(), key))
	assert.Zero(t, runs, "a stale cache is not acted on")

	// The echo arrives: it is ours, so it does not count as a change, but the parked pass is released.
	fresh := ours.DeepCopy()
	fresh.SetAnnotations(map[string]string{testPrefix + "/last-handled-configuration": kopf.EncodeDiffBase(essence(widget("unit", "w5", map[string]any{"a": "b"}), testPrefix))})
	fresh.Object["spec"] = map[string]any{"a": "b"}
	require.NoError(t, c.informer.GetIndexer().Update(fresh))
	assert.True(t, c.observe(key, fresh), "the parked pass is woken by its own echo")
	c.sync(context.Background(), key)
	assert.Equal(t, 1, runs)

	// Had the echo never come, the pass would proceed after the freshness timeout.
	c.wrote(key, written{ResourceVersion: "99", UID: "uid-w5"})
	c.mu.Lock()
	c.objects[key].shared.initial = true
	c.mu.Unlock()
	assert.Equal(t, passResult{after: c.op.opts.FreshnessTimeout}, c.sync(context.Background(), key))
	clk.Step(c.op.opts.FreshnessTimeout)
	c.sync(context.Background(), key)
	assert.Equal(t, 2, runs)
}

func TestAgainRunsTheHandlerOnceItsOwnWritesAreVisible(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	var seen []string
	c := unitController(t, clk, func(w *Watch) {
		w.OnCreate("create_fn", func(_ context.Context, cause *Cause) error {
			step, _, _ := unstructured.NestedString(cause.Object.Object, "status", "step")
			seen = append(seen, step)
			if step == "" {
				cause.Patch.SetStatus("recorded", "step")
				return Again("recorded; claiming next")
			}
			return nil
		})
	})
	key := c.putNew(t, "w6")
	assert.Equal(t, passResult{after: againDelay}, c.sync(context.Background(), key), "again right away, not after 60 s")
	require.Equal(t, []string{""}, seen)

	// The status write's echo has not reached the cache: the next pass waits for it instead of running on
	// the state from before the write.
	written := widget("unit", "w6", map[string]any{"a": "b"})
	written.SetUID("uid-w6")
	written.SetResourceVersion("7")
	written.SetFinalizers([]string{testFinalizer})
	written.Object["status"] = map[string]any{"step": "recorded"}
	c.wrote(key, writtenOf(written))
	clk.Step(againDelay)
	assert.Equal(t, passResult{after: c.op.opts.FreshnessTimeout}, c.sync(context.Background(), key))
	assert.Len(t, seen, 1, "not run on a cache older than its own write")

	require.NoError(t, c.informer.GetIndexer().Update(written))
	assert.True(t, c.observe(key, written), "the echo wakes the parked pass")
	c.sync(context.Background(), key)
	assert.Equal(t, []string{"", "recorded"}, seen, "the second run sees what the first wrote")
}
