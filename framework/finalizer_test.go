package framework

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// heldInStatusOrLabel is the test's HoldsFunc: a widget holds something when its status says held=yes
// (a handler recorded it) or it carries the label held=yes (it came that way, as a request the Python image
// left with a PackageVariant the garbage collector cannot follow).
func heldInStatusOrLabel(u *unstructured.Unstructured, _ *Cache) bool {
	held, _, _ := unstructured.NestedString(u.Object, "status", "held")
	return held == "yes" || u.GetLabels()["held"] == "yes"
}

func hasFinalizer(u *unstructured.Unstructured) bool {
	return slices.Contains(u.GetFinalizers(), testFinalizer)
}

// objectWrites are the writes of the object itself (not its status, not events).
func objectWrites(rec *kubeapi.Recorder, name string) []kubeapi.Request {
	var out []kubeapi.Request
	for _, w := range rec.Writes("/widgets/" + name) {
		if !strings.HasSuffix(w.Path, "/status") {
			out = append(out, w)
		}
	}
	return out
}

// optionalDeleteOperator: a create handler that waits once (recording what hold says in its status) and
// then succeeds, and an optional delete handler that needs the finalizer only for what heldInStatusOrLabel
// reports.
func optionalDeleteOperator(t *testing.T, label string, log *calls, hold string, finish <-chan struct{}) *testOperator {
	return newTestOperator(t, label, Options{}, func(_ *Operator, w *Watch) {
		w.OnCreate("create_fn", func(_ context.Context, c *Cause) error {
			if log.add(c) == 1 {
				c.Patch.SetStatus(hold, "held")
				return Temporary(time.Millisecond, "acquiring")
			}
			select {
			case <-finish:
				c.Patch.SetStatus("done", "phase")
				return nil
			default:
				return Temporary(50*time.Millisecond, "waiting")
			}
		})
		w.OnDelete("delete_fn", func(_ context.Context, c *Cause) error { log.add(c); return nil },
			NeededWhen(heldInStatusOrLabel))
	})
}

// An object that holds nothing only the delete handler releases gets no pass and no write for the
// finalizer: it rides along the diff-base write once the create cause is done, so the handled object is
// cleaned up by its delete handler, and an object deleted before that goes at once.
func TestOptionalDeleteHandlerFinalizerRidesAlongTheDiffBase(t *testing.T) {
	t.Parallel()
	label := "fin-ride"
	var log calls
	finish := make(chan struct{})
	to := optionalDeleteOperator(t, label, &log, "no", finish)
	to.start(t)
	create(t, widget(label, "fr1", map[string]any{}))
	create(t, widget(label, "fr2", map[string]any{}))
	eventually(t, 20*time.Second, func() bool {
		return len(log.of("create_fn", "fr1")) >= 2 && len(log.of("create_fn", "fr2")) >= 2
	}, "create never ran twice")
	assert.False(t, hasFinalizer(log.of("create_fn", "fr1")[0].Object), "a finalizer pass ran before the handler")
	assert.Empty(t, objectWrites(to.rec, "fr1"), "the object was written while its create cause was running")

	// Deleted mid-create: nothing holds it, it goes at once and the delete handler never runs.
	require.NoError(t, kubeapi.Shared(t).AdminDynamic().Resource(widgetGVR).Delete(context.Background(), "fr2", metav1.DeleteOptions{}))
	eventually(t, 20*time.Second, func() bool { _, ok := get(t, "fr2"); return !ok }, "fr2 was held")

	close(finish)
	eventually(t, 20*time.Second, func() bool {
		u, ok := get(t, "fr1")
		return ok && u.GetAnnotations()[testPrefix+"/last-handled-configuration"] != ""
	}, "fr1 never done")
	u := mustGet(t, "fr1")
	assert.True(t, hasFinalizer(u), "the finalizer did not ride along the diff-base")
	writes := objectWrites(to.rec, "fr1")
	require.Len(t, writes, 1, "one metadata write: diff-base and finalizer together")
	assert.Equal(t, http.MethodPatch, writes[0].Method)
	assert.Contains(t, writes[0].Body, `"finalizers":["`+testFinalizer+`"]`)
	assert.Contains(t, writes[0].Body, "last-handled-configuration")

	require.NoError(t, kubeapi.Shared(t).AdminDynamic().Resource(widgetGVR).Delete(context.Background(), "fr1", metav1.DeleteOptions{}))
	eventually(t, 20*time.Second, func() bool { _, ok := get(t, "fr1"); return !ok }, "fr1 never went")
	assert.NotEmpty(t, log.of("delete_fn", "fr1"), "the delete handler of a handled object did not run")
	assert.Empty(t, log.of("delete_fn", "fr2"), "the delete handler ran for an object that held nothing")
}

// What a handler records that makes the object hold something carries the finalizer in the same pass:
// the handler's next run (where it would acquire) already sees it, and no pass of its own was spent.
func TestOptionalDeleteHandlerFinalizerComesWithTheRecordThatNeedsIt(t *testing.T) {
	t.Parallel()
	label := "fin-record"
	var log calls
	to := optionalDeleteOperator(t, label, &log, "yes", make(chan struct{}))
	to.start(t)
	create(t, widget(label, "rec1", map[string]any{}))
	eventually(t, 20*time.Second, func() bool { return len(log.of("create_fn", "rec1")) >= 2 }, "create never ran twice")
	runs := log.of("create_fn", "rec1")
	assert.False(t, hasFinalizer(runs[0].Object), "a finalizer pass ran before the handler")
	assert.True(t, hasFinalizer(runs[1].Object), "the run after the record did not see the finalizer")
	writes := objectWrites(to.rec, "rec1")
	require.Len(t, writes, 1)
	assert.Contains(t, writes[0].Body, `"finalizers":["`+testFinalizer+`"]`)

	require.NoError(t, kubeapi.Shared(t).AdminDynamic().Resource(widgetGVR).Delete(context.Background(), "rec1", metav1.DeleteOptions{}))
	eventually(t, 20*time.Second, func() bool { _, ok := get(t, "rec1"); return !ok }, "rec1 never went")
	assert.NotEmpty(t, log.of("delete_fn", "rec1"), "what it held was not released")
}

// An object that already holds something when it is first seen gets the finalizer before any handler
// runs (the safety net: nothing more is acquired while it is missing).
func TestOptionalDeleteHandlerFinalizerFirstWhenTheObjectAlreadyHolds(t *testing.T) {
	t.Parallel()
	label := "fin-holds"
	var log calls
	to := optionalDeleteOperator(t, label, &log, "no", make(chan struct{}))
	to.start(t)
	u := widget(label, "h1", map[string]any{})
	u.SetLabels(map[string]string{"test": label, "held": "yes"})
	create(t, u)
	eventually(t, 20*time.Second, func() bool { return len(log.of("create_fn", "h1")) >= 1 }, "create never ran")
	assert.True(t, hasFinalizer(log.of("create_fn", "h1")[0].Object), "the handler ran before the finalizer was in place")
}

// A spec change that races the closing write (the diff-base with the finalizer riding along) is not
// swallowed: the write is sent again without the finalizer, the diff-base it records is the spec the
// create handler handled, and the change runs the update handler, whose diff-base then carries the
// finalizer.
func TestARaceWithTheRideAlongFinalizerLosesNoUpdate(t *testing.T) {
	t.Parallel()
	label := "fin-race"
	var log calls
	to := newTestOperator(t, label, Options{}, func(_ *Operator, w *Watch) {
		w.OnCreate("create_fn", func(ctx context.Context, c *Cause) error {
			if log.add(c) == 1 {
				// Someone edits the spec while the handler finishes: the pass's object is now stale.
				_, err := kubeapi.Shared(t).AdminDynamic().Resource(widgetGVR).Patch(ctx, c.Object.GetName(), types.MergePatchType,
					[]byte(`{"spec":{"size":2}}`), metav1.PatchOptions{})
				require.NoError(t, err)
			}
			return nil
		})
		w.OnUpdate("update_fn", func(_ context.Context, c *Cause) error { log.add(c); return nil })
		w.OnDelete("delete_fn", func(_ context.Context, c *Cause) error { return nil }, NeededWhen(heldInStatusOrLabel))
	})
	to.start(t)
	create(t, widget(label, "race1", map[string]any{"size": 1}))
	eventually(t, 20*time.Second, func() bool { return len(log.of("update_fn", "race1")) == 1 }, "the spec change was swallowed")
	eventually(t, 20*time.Second, func() bool { return hasFinalizer(mustGet(t, "race1")) }, "the finalizer never came")
	assert.Len(t, log.of("create_fn", "race1"), 1, "the create handler ran again")
	spec, _, _ := unstructured.NestedInt64(log.of("update_fn", "race1")[0].Object.Object, "spec", "size")
	assert.Equal(t, int64(2), spec)
}
