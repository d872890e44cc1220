package framework

import (
	"context"
	"errors"
	"github.com/o2ims-operator/o2ims-operator/framework/kopf"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

func TestSpecChangeIsAnUpdateCauseAndMovesTheDiffBase(t *testing.T) {
	t.Parallel()
	label := "update"
	var log calls
	to := newTestOperator(t, label, Options{}, func(_ *Operator, w *Watch) {
		w.OnCreate("create_fn", func(_ context.Context, c *Cause) error { log.add(c); return nil })
		w.OnUpdate("update_fn", func(_ context.Context, c *Cause) error {
			log.add(c)
			c.Normal("SpecChanged", "the spec changed")
			return nil
		})
	})
	to.start(t)
	create(t, widget(label, "u1", map[string]any{"size": 1}))
	eventually(t, 20*time.Second, func() bool {
		return mustGet(t, "u1").GetAnnotations()[testPrefix+"/last-handled-configuration"] != ""
	}, "create never finished")

	_, err := kubeapi.Shared(t).AdminDynamic().Resource(widgetGVR).Patch(context.Background(), "u1", types.MergePatchType,
		[]byte(`{"spec":{"size":2}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	eventually(t, 20*time.Second, func() bool { return len(log.of("update_fn", "u1")) == 1 }, "update never ran")
	eventually(t, 20*time.Second, func() bool {
		return hasEvent(events(t, "default", "u1"), corev1.EventTypeNormal, "SpecChanged", "the spec changed")
	}, "the handler's own event was not posted")
	eventually(t, 10*time.Second, func() bool {
		base, _, _ := fetchDiffBase(mustGet(t, "u1"), kopf.Namer{Prefix: testPrefix}.Keys(kopf.DiffBaseName))
		spec, _ := base["spec"].(map[string]any)
		return kopf.SameEssence(spec, map[string]any{"size": 2}) // numbers are kept as written (json.Number)
	}, "diff-base not moved to the new essence")
	assert.Len(t, log.of("create_fn", "u1"), 1)
}

func TestHandlerTimeoutIsMeasuredFromItsFirstStart(t *testing.T) {
	t.Parallel()
	label := "timeout"
	var log calls
	to := newTestOperator(t, label, Options{}, func(_ *Operator, w *Watch) {
		w.OnCreate("create_fn", func(_ context.Context, c *Cause) error {
			log.add(c)
			return Temporary(100*time.Millisecond, "still waiting")
		}, Timeout(350*time.Millisecond))
	})
	to.start(t)
	create(t, widget(label, "to1", map[string]any{}))
	eventually(t, 20*time.Second, func() bool {
		return hasEvent(events(t, "default", "to1"), corev1.EventTypeWarning, EventHandlerFailed, "timed out")
	}, "never timed out")
	runs := log.of("create_fn", "to1")
	require.NotEmpty(t, runs)
	last := runs[len(runs)-1]
	// Look-ahead: the failure comes when the next try would pass the limit, not after it.
	assert.Less(t, last.Now.Sub(runs[0].Started), 350*time.Millisecond)
}

func TestRelatedObjectsMapThroughIndexesAndAnnotations(t *testing.T) {
	t.Parallel()
	label := "index"
	var log calls
	to := newTestOperator(t, label, Options{}, func(_ *Operator, w *Watch) {
		w.Index("cluster", func(u *unstructured.Unstructured) []string {
			v, _, _ := unstructured.NestedString(u.Object, "spec", "clusterName")
			return []string{v}
		})
		w.Related(gadgetGVR, "kube-public", AnyOf(ByIndexedName("cluster"), ByAnnotation("test.o2ims.io/owner-uid", "uid"), ByLabel("test.o2ims.io/owner-uid", "uid")))
		w.OnCreate("create_fn", func(_ context.Context, c *Cause) error {
			log.add(c)
			cluster, _, _ := unstructured.NestedString(c.Object.Object, "spec", "clusterName")
			byName, err := c.Cache.ByIndex(widgetGVR, "cluster", cluster)
			if err != nil || len(byName) != 1 {
				return errors.New("the owner index does not find the widget")
			}
			gadgets, err := c.Cache.List(gadgetGVR, "kube-public")
			if err != nil {
				return err
			}
			for _, g := range gadgets {
				if g.GetName() == cluster || g.GetAnnotations()["test.o2ims.io/owner-uid"] == string(c.Object.GetUID()) {
					c.Patch.SetStatus("found "+g.GetName(), "phase")
					return nil
				}
			}
			return Temporary(time.Hour, "no gadget yet")
		})
	})
	to.start(t)
	w1 := create(t, widget(label, "ix1", map[string]any{"clusterName": "edge-7"}))
	w2 := create(t, widget(label, "ix2", map[string]any{"clusterName": "edge-8"}))
	eventually(t, 20*time.Second, func() bool { return len(log.of("create_fn", "ix1")) == 1 && len(log.of("create_fn", "ix2")) == 1 }, "never ran")

	dyn := kubeapi.Shared(t).AdminDynamic().Resource(gadgetGVR).Namespace("kube-public")
	mk := func(name string, ann map[string]string) {
		g := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "test.o2ims.io/v1", "kind": "Gadget",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{}}}
		g.SetAnnotations(ann)
		_, err := dyn.Create(context.Background(), g, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	mk("edge-7", nil)                                                                  // named after ix1's cluster
	mk("unrelated", map[string]string{"test.o2ims.io/owner-uid": string(w2.GetUID())}) // annotated with ix2's uid
	eventually(t, 10*time.Second, func() bool { return statusField(mustGet(t, "ix1"), "phase") == "found edge-7" }, "index mapping did not wake ix1")
	eventually(t, 10*time.Second, func() bool { return statusField(mustGet(t, "ix2"), "phase") == "found unrelated" }, "annotation mapping did not wake ix2")
	_ = w1
}

func TestPanickingHandlerIsRetriedNotFatal(t *testing.T) {
	t.Parallel()
	label := "panic"
	var log calls
	to := newTestOperator(t, label, Options{}, func(_ *Operator, w *Watch) {
		w.OnCreate("create_fn", func(_ context.Context, c *Cause) error {
			if log.add(c) == 1 {
				var m map[string]int
				//lint:ignore SA5000 the handler's bug this test recovers from
				m["boom"] = 1
			}
			c.Patch.SetStatus("recovered", "phase")
			return nil
		})
	})
	to.start(t)
	create(t, widget(label, "pn1", map[string]any{}))
	eventually(t, 20*time.Second, func() bool { return statusField(mustGet(t, "pn1"), "phase") == "recovered" }, "never recovered")
	assert.Len(t, log.of("create_fn", "pn1"), 2)
}

func TestDeletingAnObjectWithoutOurFinalizerIsLeftAlone(t *testing.T) {
	t.Parallel()
	label := "free"
	var log calls
	to := newTestOperator(t, label, Options{}, func(_ *Operator, w *Watch) {
		w.OnDelete("delete_fn", func(_ context.Context, c *Cause) error { log.add(c); return nil })
	})
	// Someone else's finalizer holds it; ours was never added (the operator was not running).
	u := widget(label, "free1", map[string]any{})
	u.SetFinalizers([]string{"someone.example.com/hold"})
	create(t, u)
	dyn := kubeapi.Shared(t).AdminDynamic().Resource(widgetGVR)
	require.NoError(t, dyn.Delete(context.Background(), "free1", metav1.DeleteOptions{}))
	to.start(t)
	time.Sleep(500 * time.Millisecond)
	assert.Empty(t, log.of("delete_fn", "free1"), "kopf's free cause: nothing to do")
	assert.Equal(t, []string{"someone.example.com/hold"}, mustGet(t, "free1").GetFinalizers())
	_, err := dyn.Patch(context.Background(), "free1", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	require.NoError(t, err)
}

func TestOwnProgressHandlersGetNoRetryEventsForWaiting(t *testing.T) {
	t.Parallel()
	label := "own-progress"
	var log calls
	to := newTestOperator(t, label, Options{}, func(_ *Operator, w *Watch) {
		w.OnCreate("create_fn", func(_ context.Context, c *Cause) error {
			if log.add(c) == 1 {
				return Temporary(10*time.Millisecond, "waiting quietly")
			}
			return nil
		}, OwnProgressEvents())
	})
	to.start(t)
	create(t, widget(label, "op1", map[string]any{}))
	eventually(t, 20*time.Second, func() bool {
		return mustGet(t, "op1").GetAnnotations()[testPrefix+"/last-handled-configuration"] != ""
	}, "never succeeded")
	time.Sleep(500 * time.Millisecond) // events are posted asynchronously
	assert.Len(t, log.of("create_fn", "op1"), 2)
	evs := events(t, "default", "op1")
	assert.False(t, hasEvent(evs, corev1.EventTypeNormal, EventHandlerRetrying, ""), "no event for waiting")
	assert.False(t, hasEvent(evs, corev1.EventTypeNormal, EventHandlerSucceeded, ""), "no echo of the handler's own success")
}

// An update handler with Field("spec") runs on spec changes only: label and annotation edits still move
// the diff-base (so they are never looked at again), but run nothing; a handler without a field runs on
// every essential change, as before.
func TestFieldFilteredUpdateHandlerIgnoresLabelAndAnnotationEdits(t *testing.T) {
	t.Parallel()
	label := "field"
	var log calls
	to := newTestOperator(t, label, Options{}, func(_ *Operator, w *Watch) {
		w.OnCreate("create_fn", func(_ context.Context, c *Cause) error { log.add(c); return nil })
		w.OnUpdate("spec_fn", func(_ context.Context, c *Cause) error { log.add(c); return nil }, Field("spec"))
		w.OnUpdate("any_fn", func(_ context.Context, c *Cause) error { log.add(c); return nil })
	})
	to.start(t)
	create(t, widget(label, "field-1", map[string]any{"size": 1}))
	eventually(t, 20*time.Second, func() bool {
		return mustGet(t, "field-1").GetAnnotations()[testPrefix+"/last-handled-configuration"] != ""
	}, "create never finished")
	dyn := kubeapi.Shared(t).AdminDynamic().Resource(widgetGVR)
	patch := func(body string) {
		_, err := dyn.Patch(context.Background(), "field-1", types.MergePatchType, []byte(body), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	baseHas := func(what string) bool {
		return strings.Contains(mustGet(t, "field-1").GetAnnotations()[testPrefix+"/last-handled-configuration"], what)
	}

	patch(`{"metadata":{"labels":{"argocd.argoproj.io/instance":"edge"}}}`)
	eventually(t, 20*time.Second, func() bool { return len(log.of("any_fn", "field-1")) == 1 && baseHas("argocd.argoproj.io/instance") },
		"the label edit was not handled by the unfiltered handler")
	patch(`{"metadata":{"annotations":{"fluxcd.io/sync-checksum":"abc"}}}`)
	eventually(t, 20*time.Second, func() bool { return len(log.of("any_fn", "field-1")) == 2 && baseHas("fluxcd.io/sync-checksum") },
		"the annotation edit was not handled by the unfiltered handler")
	assert.Empty(t, log.of("spec_fn", "field-1"), "a label or annotation edit ran the spec handler")

	patch(`{"spec":{"size":2}}`)
	eventually(t, 20*time.Second, func() bool { return len(log.of("spec_fn", "field-1")) == 1 }, "the spec change never ran the spec handler")
	eventually(t, 20*time.Second, func() bool { return len(log.of("any_fn", "field-1")) == 3 }, "the unfiltered handler missed the spec change")
}
