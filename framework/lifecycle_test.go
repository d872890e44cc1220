package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/o2ims-operator/o2ims-operator/framework/kopf"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

func TestCreateRunsOnceThenWritesDiffBaseAndPurgesProgress(t *testing.T) {
	t.Parallel()
	label := "create-once"
	var log calls
	to := newTestOperator(t, label, Options{}, func(_ *Operator, w *Watch) {
		w.OnCreate("create_fn", func(_ context.Context, c *Cause) error {
			n := log.add(c)
			if n == 1 {
				return Temporary(50*time.Millisecond, "waiting once")
			}
			c.Patch.SetStatus("done", "phase")
			return nil
		}, Retries(5))
	})
	to.start(t)
	create(t, widget(label, "w1", map[string]any{"size": 3}))

	eventually(t, 20*time.Second, func() bool {
		u, ok := get(t, "w1")
		return ok && statusField(u, "phase") == "done" && u.GetAnnotations()[testPrefix+"/last-handled-configuration"] != ""
	}, "widget never handled")

	u := mustGet(t, "w1")
	ann := u.GetAnnotations()
	base := ann[testPrefix+"/last-handled-configuration"]
	assert.True(t, strings.HasSuffix(base, "\n"), "kopf ends the diff-base with a newline")
	var essence map[string]any
	require.NoError(t, json.Unmarshal([]byte(base), &essence))
	assert.Equal(t, map[string]any{"size": float64(3)}, essence["spec"])
	assert.Equal(t, map[string]any{"labels": map[string]any{"test": label}}, essence["metadata"], "own annotations are not essence")
	assert.Equal(t, base, ann[kopf.Namer{Prefix: testPrefix}.V1("last-handled-configuration")], "V1 key written too")
	assert.Equal(t, "yes", ann[testPrefix+"/kopf-managed"])
	_, hasProgress := ann[testPrefix+"/create_fn"]
	assert.False(t, hasProgress, "progress is purged when the cause is done")

	// The second run saw the record the first one persisted (a limited handler persists every retry).
	runs := log.of("create_fn", "w1")
	require.Len(t, runs, 2)
	raw := runs[1].Object.GetAnnotations()[testPrefix+"/create_fn"]
	require.NotEmpty(t, raw, "the retry saw the persisted progress record")
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(raw), &rec))
	assert.Equal(t, float64(1), rec["retries"])
	assert.Equal(t, "create", rec["purpose"])
	assert.Equal(t, false, rec["success"])
	assert.Equal(t, "waiting once", rec["message"])
	assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$`, rec["started"], "aware UTC like kopf >= 1.37 (the default)")
	assert.Equal(t, 1, runs[1].Retries)
	assert.Equal(t, runs[0].Started, runs[1].Started, "started is kept across retries")

	// A change outside the essence (status) is not a new cause: the handler does not run again.
	st := mustGet(t, "w1")
	require.NoError(t, unstructured.SetNestedField(st.Object, "touched", "status", "message"))
	_, err := kubeapi.Shared(t).AdminDynamic().Resource(widgetGVR).UpdateStatus(context.Background(), st, metav1.UpdateOptions{})
	require.NoError(t, err)
	time.Sleep(500 * time.Millisecond)
	assert.Len(t, log.of("create_fn", "w1"), 2)
}

func TestRestartedOperatorResumesInsteadOfRecreating(t *testing.T) {
	t.Parallel()
	label := "restart"
	var log calls
	setup := func(_ *Operator, w *Watch) {
		fn := func(_ context.Context, c *Cause) error {
			log.add(c)
			c.Patch.SetStatus("done", "phase")
			return nil
		}
		w.OnCreate("create_fn", fn)
		w.OnResume("create_fn", fn)
	}
	first := newTestOperator(t, label, Options{}, setup)
	first.start(t)
	create(t, widget(label, "r1", map[string]any{"a": "b"}))
	eventually(t, 20*time.Second, func() bool {
		u, ok := get(t, "r1")
		return ok && u.GetAnnotations()[testPrefix+"/last-handled-configuration"] != ""
	}, "never handled")
	require.NoError(t, first.stop(t))

	second := newTestOperator(t, label, Options{}, setup)
	second.start(t)
	eventually(t, 20*time.Second, func() bool { return len(log.of("create_fn", "r1")) == 2 }, "resume never ran")
	runs := log.of("create_fn", "r1")
	assert.Equal(t, ReasonCreate, runs[0].Reason)
	assert.Equal(t, ReasonResume, runs[1].Reason)
	time.Sleep(300 * time.Millisecond)
	assert.Len(t, log.of("create_fn", "r1"), 2, "resume runs once per process")
	assert.Empty(t, second.rec.Writes("/widgets/r1"), "resuming a handled object with nothing to change writes nothing")
}

func TestTemporaryErrorRerunsAfterItsDelay(t *testing.T) {
	t.Parallel()
	label := "temporary"
	var log calls
	to := newTestOperator(t, label, Options{}, func(_ *Operator, w *Watch) {
		w.OnCreate("create_fn", func(_ context.Context, c *Cause) error {
			if log.add(c) == 1 {
				return Temporary(400*time.Millisecond, "not yet")
			}
			return nil
		})
	})
	to.start(t)
	create(t, widget(label, "t1", map[string]any{}))
	eventually(t, 20*time.Second, func() bool { return len(log.of("create_fn", "t1")) == 2 }, "never re-ran")
	runs := log.of("create_fn", "t1")
	assert.GreaterOrEqual(t, runs[1].Now.Sub(runs[0].Now), 400*time.Millisecond, "re-run honours the delay")
	eventually(t, 10*time.Second, func() bool {
		return hasEvent(events(t, "default", "t1"), corev1.EventTypeNormal, EventHandlerRetrying, "not yet")
	}, "no retry event")
}

func TestErrorIsRetriedWithBackoff(t *testing.T) {
	t.Parallel()
	label := "backoff"
	var log calls
	to := newTestOperator(t, label, Options{BackoffBase: 100 * time.Millisecond}, func(_ *Operator, w *Watch) {
		w.OnCreate("create_fn", func(_ context.Context, c *Cause) error {
			if log.add(c) < 4 {
				return assert.AnError
			}
			return nil
		})
	})
	to.start(t)
	create(t, widget(label, "b1", map[string]any{}))
	eventually(t, 20*time.Second, func() bool { return len(log.of("create_fn", "b1")) == 4 }, "never recovered")
	runs := log.of("create_fn", "b1")
	// 100ms, 200ms, 400ms: each gap at least the exponential step.
	for i, want := range []time.Duration{100, 200, 400} {
		assert.GreaterOrEqual(t, runs[i+1].Now.Sub(runs[i].Now), want*time.Millisecond*9/10, "gap %d", i)
	}
	eventually(t, 10*time.Second, func() bool {
		return hasEvent(events(t, "default", "b1"), corev1.EventTypeWarning, EventHandlerRetrying, assert.AnError.Error())
	}, "no warning event for the error")
}

func TestPermanentErrorStopsWritesStatusAndPostsWarning(t *testing.T) {
	t.Parallel()
	label := "permanent"
	var log calls
	to := newTestOperator(t, label, Options{Namespace: "kube-public"}, func(_ *Operator, w *Watch) {
		w.OnCreate("create_fn", func(_ context.Context, c *Cause) error {
			log.add(c)
			c.Patch.SetStatus("failed", "phase")
			return Permanent("spec is invalid: %s", "no name")
		})
	})
	to.start(t)
	create(t, widget(label, "p1", map[string]any{}))
	eventually(t, 20*time.Second, func() bool {
		return hasEvent(events(t, "default", "p1"), corev1.EventTypeWarning, EventHandlerFailed, "spec is invalid: no name")
	}, "no warning event (cluster-scoped objects' events live in default)")
	u := mustGet(t, "p1")
	assert.Equal(t, "failed", statusField(u, "phase"), "business status written before the failure is recorded")
	assert.NotEmpty(t, u.GetAnnotations()[testPrefix+"/last-handled-configuration"], "a failed cause is done (kopf)")
	time.Sleep(300 * time.Millisecond)
	assert.Len(t, log.of("create_fn", "p1"), 1, "no retry after a permanent error")
}

func TestRetryLimitBecomesPermanentFailure(t *testing.T) {
	t.Parallel()
	label := "retry-limit"
	var log calls
	to := newTestOperator(t, label, Options{}, func(_ *Operator, w *Watch) {
		w.OnCreate("create_fn", func(_ context.Context, c *Cause) error {
			log.add(c)
			return Temporary(10*time.Millisecond, "again")
		}, Retries(3))
	})
	to.start(t)
	create(t, widget(label, "l1", map[string]any{}))
	eventually(t, 20*time.Second, func() bool {
		return hasEvent(events(t, "default", "l1"), corev1.EventTypeWarning, EventHandlerFailed, "exceeded 3 retries")
	}, "retry limit never hit")
	assert.Len(t, log.of("create_fn", "l1"), 3)
}

func TestDeleteHandlerHoldsTheFinalizerUntilDone(t *testing.T) {
	t.Parallel()
	label := "delete"
	var log calls
	release := make(chan struct{})
	to := newTestOperator(t, label, Options{}, func(_ *Operator, w *Watch) {
		w.OnCreate("create_fn", func(_ context.Context, c *Cause) error { log.add(c); return nil })
		w.OnDelete("delete_fn", func(_ context.Context, c *Cause) error {
			log.add(c)
			select {
			case <-release:
				return nil
			default:
				return Temporary(50*time.Millisecond, "releasing")
			}
		})
	})
	to.start(t)
	create(t, widget(label, "d1", map[string]any{}))
	eventually(t, 20*time.Second, func() bool { return len(log.of("create_fn", "d1")) == 1 }, "create never ran")
	assert.Contains(t, log.of("create_fn", "d1")[0].Object.GetFinalizers(), testFinalizer,
		"the finalizer is in place before any handler acts")

	require.NoError(t, kubeapi.Shared(t).AdminDynamic().Resource(widgetGVR).Delete(context.Background(), "d1", metav1.DeleteOptions{}))
	eventually(t, 20*time.Second, func() bool { return len(log.of("delete_fn", "d1")) >= 2 }, "delete never ran")
	u, ok := get(t, "d1")
	require.True(t, ok, "held by the finalizer while the delete handler works")
	assert.NotNil(t, u.GetDeletionTimestamp())
	close(release)
	eventually(t, 20*time.Second, func() bool { _, ok := get(t, "d1"); return !ok }, "finalizer never removed")
}

func TestFinalizerAddedOnlyWhenNeeded(t *testing.T) {
	t.Parallel()
	label := "no-finalizer"
	var log calls
	to := newTestOperator(t, label, Options{}, func(_ *Operator, w *Watch) {
		w.OnCreate("create_fn", func(_ context.Context, c *Cause) error { log.add(c); return nil })
	})
	to.start(t)
	create(t, widget(label, "nf1", map[string]any{}))
	eventually(t, 20*time.Second, func() bool { return len(log.of("create_fn", "nf1")) == 1 }, "never ran")
	eventually(t, 10*time.Second, func() bool {
		return mustGet(t, "nf1").GetAnnotations()[testPrefix+"/last-handled-configuration"] != ""
	}, "never done")
	assert.Empty(t, mustGet(t, "nf1").GetFinalizers())
}

func TestTimerRunsAtItsCadenceAndWritesOnlyChanges(t *testing.T) {
	t.Parallel()
	label := "timer"
	var log calls
	to := newTestOperator(t, label, Options{}, func(_ *Operator, w *Watch) {
		w.OnTimer("tick", 200*time.Millisecond, 0, func(_ context.Context, c *Cause) error {
			log.add(c)
			c.Patch.SetStatus("steady", "phase")
			return nil
		})
	})
	to.start(t)
	create(t, widget(label, "tm1", map[string]any{}))
	eventually(t, 20*time.Second, func() bool { return len(log.of("tick", "tm1")) >= 5 }, "timer did not tick")
	runs := log.of("tick", "tm1")
	for i := 1; i < len(runs); i++ {
		assert.GreaterOrEqual(t, runs[i].Now.Sub(runs[i-1].Now), 190*time.Millisecond, "tick %d came early", i)
	}
	assert.Len(t, to.rec.Writes("/widgets/tm1/status"), 1, "the same status is written once, not on every tick")
	assert.Equal(t, "steady", statusField(mustGet(t, "tm1"), "phase"))
}

func TestStatusGoesOnlyThroughTheStatusSubresource(t *testing.T) {
	t.Parallel()
	label := "status-sub"
	to := newTestOperator(t, label, Options{}, func(_ *Operator, w *Watch) {
		w.OnCreate("create_fn", func(_ context.Context, c *Cause) error {
			c.Patch.SetStatus("done", "phase")
			c.Patch.SetStatus(int64(7), "counter")
			return nil
		})
	})
	to.start(t)
	create(t, widget(label, "s1", map[string]any{}))
	eventually(t, 20*time.Second, func() bool {
		u, ok := get(t, "s1")
		return ok && statusField(u, "phase") == "done" && u.GetAnnotations()[testPrefix+"/last-handled-configuration"] != ""
	}, "never handled")
	statusWrites := to.rec.Writes("/widgets/s1/status")
	require.Len(t, statusWrites, 1, "one status patch per pass")
	// The status and the resourceVersion the pass read (its fence: a stale write is refused), nothing else.
	var body struct {
		Metadata map[string]any `json:"metadata"`
		Status   map[string]any `json:"status"`
	}
	require.NoError(t, json.Unmarshal([]byte(statusWrites[0].Body), &body))
	assert.Equal(t, map[string]any{"phase": "done", "counter": float64(7)}, body.Status)
	require.Len(t, body.Metadata, 1, "the status patch's metadata: %v", body.Metadata)
	assert.NotEmpty(t, body.Metadata["resourceVersion"])
	assert.NotContains(t, statusWrites[0].Body, `"spec"`)
	for _, w := range to.rec.Writes("/widgets/s1") {
		if !strings.HasSuffix(w.Path, "/status") {
			assert.NotContains(t, w.Body, `"status"`, "object patches never carry status")
		}
	}
}

func TestPassNeverActsOnACacheOlderThanItsOwnWrite(t *testing.T) {
	t.Parallel()
	label := "fresh"
	var log calls
	to := newTestOperator(t, label, Options{}, func(_ *Operator, w *Watch) {
		w.OnCreate("create_fn", func(_ context.Context, c *Cause) error {
			n := log.add(c)
			seen, _, _ := unstructured.NestedInt64(c.Object.Object, "status", "counter")
			c.Patch.SetStatus(seen+1, "counter")
			if n < 10 {
				return Temporary(time.Millisecond, "again")
			}
			return nil
		})
	})
	to.start(t)
	create(t, widget(label, "f1", map[string]any{}))
	eventually(t, 30*time.Second, func() bool {
		u, ok := get(t, "f1")
		return ok && u.GetAnnotations()[testPrefix+"/last-handled-configuration"] != ""
	}, "never finished")
	// Every pass saw the previous pass's write: ten passes, counter ten. A stale read would repeat a value.
	assert.Equal(t, "10", statusField(mustGet(t, "f1"), "counter"))
	runs := log.of("create_fn", "f1")
	for i, r := range runs {
		seen, _, _ := unstructured.NestedInt64(r.Object.Object, "status", "counter")
		assert.Equal(t, int64(i), seen, "pass %d saw a stale counter", i)
	}
}

func TestRelatedObjectChangeWakesAWaitingHandler(t *testing.T) {
	t.Parallel()
	label := "related"
	var log calls
	to := newTestOperator(t, label, Options{}, func(_ *Operator, w *Watch) {
		w.Related(gadgetGVR, "default", SameName(false))
		w.OnCreate("create_fn", func(_ context.Context, c *Cause) error {
			log.add(c)
			g, found, err := c.Cache.Get(gadgetGVR, "default", c.Object.GetName())
			if err != nil {
				return err
			}
			if !found || statusField(g, "ready") != "true" {
				return Temporary(time.Hour, "waiting for the gadget")
			}
			c.Patch.SetStatus("done", "phase")
			return nil
		})
	})
	to.start(t)
	create(t, widget(label, "rel1", map[string]any{}))
	eventually(t, 20*time.Second, func() bool { return len(log.of("create_fn", "rel1")) == 1 }, "never ran")

	dyn := kubeapi.Shared(t).AdminDynamic().Resource(gadgetGVR).Namespace("default")
	g := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.o2ims.io/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": "rel1"}, "spec": map[string]any{},
	}}
	g, err := dyn.Create(context.Background(), g, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(g.Object, true, "status", "ready"))
	_, err = dyn.UpdateStatus(context.Background(), g, metav1.UpdateOptions{})
	require.NoError(t, err)

	// The handler asked for an hour; the gadget's change wakes it now.
	eventually(t, 10*time.Second, func() bool { return statusField(mustGet(t, "rel1"), "phase") == "done" },
		"the related change did not wake the handler")
}

// A source outside the API server (the inventory: a host came free) wakes a handler that asked to be
// run again only in an hour; before handling starts a wake does nothing and does not block.
func TestWakeRunsAWaitingHandlerNow(t *testing.T) {
	t.Parallel()
	label := "wake"
	var log calls
	var ready atomic.Bool
	var watch *Watch
	to := newTestOperator(t, label, Options{}, func(_ *Operator, w *Watch) {
		watch = w
		w.OnCreate("create_fn", func(_ context.Context, c *Cause) error {
			log.add(c)
			if !ready.Load() {
				return Temporary(time.Hour, "waiting for a host")
			}
			c.Patch.SetStatus("done", "phase")
			return nil
		})
	})
	watch.Wake("", "wake1") // not started: nothing to wake, and no panic
	to.start(t)
	create(t, widget(label, "wake1", map[string]any{}))
	eventually(t, 20*time.Second, func() bool { return len(log.of("create_fn", "wake1")) == 1 }, "never ran")
	ready.Store(true)
	time.Sleep(500 * time.Millisecond)
	assert.Len(t, log.of("create_fn", "wake1"), 1, "the handler ran again before its delay without a wake")
	watch.Wake("", "wake1")
	eventually(t, 10*time.Second, func() bool { return statusField(mustGet(t, "wake1"), "phase") == "done" },
		"the wake did not run the handler")
}

func TestMalformedProgressDoesNotCrashOrBlock(t *testing.T) {
	t.Parallel()
	label := "malformed"
	var log calls
	to := newTestOperator(t, label, Options{}, func(_ *Operator, w *Watch) {
		w.OnCreate("create_fn", func(_ context.Context, c *Cause) error { log.add(c); return nil })
	})
	u := widget(label, "m1", map[string]any{})
	u.SetAnnotations(map[string]string{
		testPrefix + "/create_fn":                  `{"started": "yesterday", "retries": "many"`,
		testPrefix + "/last-handled-configuration": `not json`,
	})
	create(t, u)
	to.start(t)
	eventually(t, 20*time.Second, func() bool {
		got := mustGet(t, "m1").GetAnnotations()
		_, stale := got[testPrefix+"/create_fn"]
		return strings.HasPrefix(got[testPrefix+"/last-handled-configuration"], "{") && !stale
	}, "the object stayed blocked")
	assert.Len(t, log.of("create_fn", "m1"), 1)
	// Events are posted asynchronously, after the pass that recorded them.
	eventually(t, 10*time.Second, func() bool {
		return hasEvent(events(t, "default", "m1"), corev1.EventTypeWarning, EventStateUnreadable, "unreadable")
	}, "no Warning event about the unreadable state")
}

// The cache's revision tells a reader whether what List answered may be stale, so the NBI's sorted view
// of a list is rebuilt after a create, an update and a delete.
func TestCacheRevisionMovesWhenListIsBehind(t *testing.T) {
	t.Parallel()
	label := "revision"
	to := newTestOperator(t, label, Options{}, func(*Operator, *Watch) {})
	_, err := to.op.Cache().Revision(schema.GroupVersionResource{Group: "nowhere", Version: "v1", Resource: "things"})
	require.Error(t, err, "an unwatched resource has no revision")
	to.start(t)
	cache := to.op.Cache()
	revision := func() uint64 {
		r, err := cache.Revision(widgetGVR)
		require.NoError(t, err)
		return r
	}
	listed := func(name string) bool {
		objs, err := cache.List(widgetGVR, "")
		require.NoError(t, err)
		for _, o := range objs {
			if o.GetName() == name {
				return true
			}
		}
		return false
	}
	// What the NBI relies on: a revision read before a List that does not show a change yet moves
	// after that List, so a view keyed by the revision is rebuilt. Other writers (the framework marks a
	// created widget handled) may move it too; that costs a rebuild, never a stale view.
	step := func(what string, change func(), visible func() bool) {
		before := revision()
		change()
		eventually(t, 20*time.Second, func() bool { return revision() > before }, "the revision never moved after %s", what)
		deadline := time.Now().Add(20 * time.Second)
		for {
			r := revision()
			if visible() {
				return
			}
			eventually(t, time.Until(deadline), func() bool { return revision() != r },
				"the cache does not show %s yet and its revision %d never moves again", what, r)
		}
	}
	name := fmt.Sprintf("rev-%d", time.Now().UnixNano())
	step("a create", func() { create(t, widget(label, name, map[string]any{"a": "1"})) },
		func() bool { return listed(name) })
	step("an update", func() {
		_, err := kubeapi.Shared(t).AdminDynamic().Resource(widgetGVR).Patch(context.Background(), name,
			types.MergePatchType, []byte(`{"spec":{"a":"2"}}`), metav1.PatchOptions{})
		require.NoError(t, err)
	}, func() bool {
		u, found, err := cache.Get(widgetGVR, "", name)
		return err == nil && found && u.Object["spec"].(map[string]any)["a"] == "2"
	})
	step("a delete", func() {
		require.NoError(t, kubeapi.Shared(t).AdminDynamic().Resource(widgetGVR).Delete(context.Background(), name, metav1.DeleteOptions{}))
	}, func() bool { return !listed(name) })
}
