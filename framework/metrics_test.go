package framework

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/o2ims-operator/o2ims-operator/tests/promtest"
)

// An alert on increase() needs the series before its first event: every registered handler's runs,
// retries (by kind) and permanent failures, and the patch counters, exist at 0 once the operator runs and
// before any object exists; so do the readiness and leading gauges.
func TestHandlerCountersExistAtZeroBeforeTheFirstEvent(t *testing.T) {
	t.Parallel()
	to := newTestOperator(t, "metrics-zero", Options{MetricsNamespace: "zero"}, func(_ *Operator, w *Watch) {
		w.OnCreate("create_fn", func(context.Context, *Cause) error { return nil })
		w.OnResume("create_fn", func(context.Context, *Cause) error { return nil })
		w.OnDelete("delete_fn", func(context.Context, *Cause) error { return nil })
		w.OnTimer("tick", time.Hour, time.Hour, func(context.Context, *Cause) error { return nil })
	})
	reg := to.op.Registry()
	ready, ok := promtest.Gather(t, reg).Value("zero_operator_ready", nil)
	require.True(t, ok, "the readiness gauge exists before Run")
	assert.Zero(t, ready)
	to.start(t)

	res := "widgets.test.o2ims.io"
	for _, h := range []string{"create_fn", "delete_fn", "tick"} {
		for _, kind := range []string{"temporary", "error"} {
			v, ok := promtest.Gather(t, reg).Value("zero_handler_retries_total", map[string]string{"resource": res, "handler": h, "kind": kind})
			assert.True(t, ok, "retries of %s (%s) exposed before the first retry", h, kind)
			assert.Zero(t, v)
		}
		for _, outcome := range []string{"success", "temporary", "error", "permanent"} {
			_, ok := promtest.Gather(t, reg).Value("zero_handler_runs_total", map[string]string{"resource": res, "handler": h, "outcome": outcome})
			assert.True(t, ok, "runs of %s (%s)", h, outcome)
		}
		_, ok := promtest.Gather(t, reg).Value("zero_handler_permanent_failures_total", map[string]string{"resource": res, "handler": h})
		assert.True(t, ok, "permanent failures of %s", h)
	}
	for _, sub := range []string{"object", "status"} {
		_, ok := promtest.Gather(t, reg).Value("zero_object_patches_total", map[string]string{"resource": res, "subresource": sub})
		assert.True(t, ok, "patches (%s)", sub)
	}
	for _, typ := range []string{"Normal", "Warning"} {
		_, ok := promtest.Gather(t, reg).Value("zero_events_posted_total", map[string]string{"type": typ})
		assert.True(t, ok, "events posted (%s)", typ)
	}
	ready, _ = promtest.Gather(t, reg).Value("zero_operator_ready", nil)
	leading, _ := promtest.Gather(t, reg).Value("zero_operator_leading", nil)
	le, _ := promtest.Gather(t, reg).Value("zero_operator_leader_election_enabled", nil)
	assert.Equal(t, []float64{1, 1, 0}, []float64{ready, leading, le}, "ready, leading, leader election")
}

// Events queued behind a stalled writer wait rather than drop: with the API server holding the first
// writes, 3000 posted events (three times client-go's queue) are all dispatched and written once it
// answers, and posted − dispatched − dropped is what is still queued (zero when drained). Beyond the
// memory bound the surplus is dropped and counted.
func TestEventsBehindAStalledWriterWaitAndOnlyTheSurplusBeyondTheBoundIsDropped(t *testing.T) {
	t.Parallel()
	cs := fake.NewClientset()
	release := make(chan struct{})
	cs.PrependReactor("create", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		<-release
		return true, a.(k8stesting.CreateAction).GetObject(), nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := newMetrics("ev", prometheus.NewRegistry())
	r := newEventRecorder(ctx, cs, "test", zap.NewNop(), m, nil)
	defer r.shutdown()
	const posted = 3000
	for i := 0; i < posted; i++ {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%d", i), Namespace: "default", UID: "u"}}
		r.post(pod, corev1.EventTypeWarning, "Test", "message")
	}
	close(release)
	assert.Equal(t, float64(posted), testutil.ToFloat64(m.EventsPosted.WithLabelValues("Warning")))
	eventually(t, 30*time.Second, func() bool {
		return testutil.ToFloat64(m.EventWrites.WithLabelValues("success")) == posted
	}, "not every event was written: %v", testutil.ToFloat64(m.EventWrites.WithLabelValues("success")))
	assert.Equal(t, float64(posted), testutil.ToFloat64(m.EventsDispatched))
	assert.Zero(t, testutil.ToFloat64(m.EventsDropped.WithLabelValues("queue_full")))

	// The bound: a writer stalled for good, and more posted than it may hold.
	stall := make(chan struct{})
	defer close(stall)
	cs2 := fake.NewClientset()
	cs2.PrependReactor("create", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		<-stall
		return true, a.(k8stesting.CreateAction).GetObject(), nil
	})
	m2 := newMetrics("ev2", prometheus.NewRegistry())
	r2 := newEventRecorder(ctx, cs2, "test", zap.NewNop(), m2, nil)
	for i := 0; i < maxPendingEvents+eventWriters+10; i++ {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("q-%d", i), Namespace: "default", UID: types.UID(fmt.Sprint(i))}}
		r2.post(pod, corev1.EventTypeNormal, "Test", "message")
	}
	eventually(t, 10*time.Second, func() bool {
		return testutil.ToFloat64(m2.EventsDropped.WithLabelValues("queue_full")) > 0
	}, "nothing was dropped beyond the bound")
	assert.LessOrEqual(t, testutil.ToFloat64(m2.EventsDropped.WithLabelValues("queue_full")), float64(eventWriters+10))
}
