package framework

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// Two leader-elected instances on the real API server. The leader a is deep in a pass over fe1 (its
// handler blocked) with fe2 queued behind it, when its Lease renewals stop reaching the API server (a
// partition). a stops acting RenewDeadline after its last renewal — before b can take the Lease — so the
// two never act at once; b takes over and handles both. a's handler then returns: its status write is
// never sent (and would be refused by the resourceVersion fence if it were), no event of it is posted, and
// no pass starts on a after the fence lapsed (fe2 is never handled by a).
func TestADeposedLeaderWritesNothing(t *testing.T) {
	t.Parallel()
	label := "fence"
	srv := kubeapi.Shared(t)
	require.NoError(t, srv.EnsureNamespace(context.Background(), "fence-test"))
	opts := Options{
		LeaderElect: true, LeaderElectionID: "fence-test", Namespace: "fence-test", Workers: 1,
		LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 200 * time.Millisecond,
	}
	var (
		mu        sync.Mutex
		runs      []string // "<instance>/<object>" per handler run
		actedLate atomic.Bool
	)
	inPass, release := make(chan struct{}), make(chan struct{})
	var inPassOnce sync.Once
	mk := func(name string) *testOperator {
		return newTestOperator(t, label, opts, func(op *Operator, w *Watch) {
			w.OnCreate("create_fn", func(_ context.Context, c *Cause) error {
				if !op.mayAct() {
					actedLate.Store(true)
				}
				mu.Lock()
				runs = append(runs, name+"/"+c.Object.GetName())
				mu.Unlock()
				if name == "a" && c.Object.GetName() == "fe1" {
					inPassOnce.Do(func() { close(inPass) })
					<-release // a paused pass: it ignores its context, as a stopped process would
				}
				c.Patch.SetStatus(name, "by")
				c.Event("Normal", "Handled", "handled by "+name)
				return nil
			})
		})
	}
	a, b := mk("a"), mk("b")
	partition := &leasePartition{}
	cfg := srv.AdminConfig()
	cfg.WrapTransport = partition.wrap
	a.op.clients.lease = kubernetes.NewForConfigOrDie(cfg)

	a.start(t)
	eventually(t, 20*time.Second, a.op.Leading, "a never led")
	b.start(t)
	create(t, widget(label, "fe1", map[string]any{}))
	select {
	case <-inPass:
	case <-time.After(20 * time.Second):
		t.Fatal("a never started its pass over fe1")
	}
	create(t, widget(label, "fe2", map[string]any{}))
	eventually(t, 10*time.Second, func() bool { return a.op.ctrls[0].queue.Len() == 1 }, "fe2 never queued on a")

	// Never both acting: sampled until b has handled both objects.
	var both atomic.Bool
	stopWatch := make(chan struct{})
	go func() {
		for {
			select {
			case <-stopWatch:
				return
			case <-time.After(2 * time.Millisecond):
			}
			if a.op.mayAct() && b.op.Leading() {
				both.Store(true)
			}
		}
	}()
	partition.block.Store(true)
	eventually(t, 5*time.Second, func() bool { return !a.op.mayAct() }, "a's fence never lapsed")
	eventually(t, 20*time.Second, func() bool { return statusBy(t, "fe1") == "b" && statusBy(t, "fe2") == "b" }, "b never handled both")
	close(stopWatch)
	assert.False(t, both.Load(), "a still acted while b led")

	writesBefore := len(a.rec.Writes("/widgets/fe1"))
	close(release)
	// With one worker, fe2 leaves a's queue only once the pass over fe1 has ended, writes included.
	eventually(t, 20*time.Second, func() bool { return a.op.ctrls[0].queue.Len() == 0 }, "a's pass over fe1 never ended")
	select {
	case err := <-a.done:
		require.Error(t, err)
		assert.Contains(t, err.Error(), "leader election lost")
		a.cancel = nil
	case <-time.After(20 * time.Second):
		t.Fatal("the deposed a never stopped")
	}
	assert.Equal(t, writesBefore, len(a.rec.Writes("/widgets/fe1")), "the deposed a wrote fe1: %v", a.rec.Writes("/widgets/fe1"))
	assert.Equal(t, "b", statusBy(t, "fe1"))
	for _, body := range a.rec.Bodies(http.MethodPost, "/events") {
		assert.NotContains(t, body, "handled by a", "the deposed a posted its pass's event")
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"a/fe1"}, only(runs, "a/"), "a ran a handler after its fence lapsed")
	assert.False(t, actedLate.Load(), "a handler ran while its instance's fence had lapsed")
}

// A pass whose object changed between its read and its write (another writer's status edit) has its
// status write refused by the resourceVersion fence — nothing of it merged — and is done again on the
// newer object, without an error in status, a Warning or a backoff: the second run's status lands.
func TestAStatusWriteOnAStaleReadIsRefusedAndThePassRedone(t *testing.T) {
	t.Parallel()
	label := "stale-write"
	var runs atomic.Int32
	edited, resume := make(chan struct{}), make(chan struct{})
	to := newTestOperator(t, label, Options{}, func(_ *Operator, w *Watch) {
		w.OnCreate("create_fn", func(_ context.Context, c *Cause) error {
			n := runs.Add(1)
			if n == 1 {
				close(edited)
				<-resume
			}
			c.Patch.SetStatus(map[string]any{"run": int64(n), "seen": c.Object.GetResourceVersion()}, "result")
			return nil
		})
	})
	to.start(t)
	create(t, widget(label, "sw1", map[string]any{}))
	<-edited
	// Someone else writes the status while the pass works (as the NBI or a user may).
	u, err := dyn(t).Get(context.Background(), "sw1", metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(u.Object, "theirs", "status", "other"))
	_, err = dyn(t).UpdateStatus(context.Background(), u, metav1.UpdateOptions{})
	require.NoError(t, err)
	close(resume)

	eventually(t, 20*time.Second, func() bool {
		u, err := dyn(t).Get(context.Background(), "sw1", metav1.GetOptions{})
		if err != nil {
			return false
		}
		run, _, _ := unstructured.NestedInt64(u.Object, "status", "result", "run")
		return run == 2
	}, "the pass was not done again after its write was refused")
	u, err = dyn(t).Get(context.Background(), "sw1", metav1.GetOptions{})
	require.NoError(t, err)
	other, _, _ := unstructured.NestedString(u.Object, "status", "other")
	assert.Equal(t, "theirs", other, "the other writer's status was overwritten")
	bodies := to.rec.Bodies(http.MethodPatch, "/widgets/sw1/status")
	require.Len(t, bodies, 2, "one refused status write, one that landed: %v", bodies)
	assert.Contains(t, bodies[0], `"resourceVersion"`, "the status write is not fenced")
	assert.Equal(t, int32(2), runs.Load())
	for _, e := range events(t, "default", "sw1") {
		assert.NotEqual(t, corev1.EventTypeWarning, e.Type, "a conflict surfaced as a warning: %s", e.Message)
	}
	assert.Equal(t, 1.0, testutil.ToFloat64(to.op.metrics.WriteConflicts.WithLabelValues("widgets.test.o2ims.io", "status")))
}

// leasePartition fails every request of the lease client once blocked, as a partition between the
// leader and the API server would.
type leasePartition struct{ block atomic.Bool }

func (p *leasePartition) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if p.block.Load() {
			return nil, errors.New("partitioned (test)")
		}
		return rt.RoundTrip(req)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func dyn(t *testing.T) dynamic.NamespaceableResourceInterface {
	return kubeapi.Shared(t).AdminDynamic().Resource(widgetGVR)
}

func statusBy(t *testing.T, name string) string {
	t.Helper()
	u, err := dyn(t).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	by, _, _ := unstructured.NestedString(u.Object, "status", "by")
	return by
}

func only(list []string, prefix string) []string {
	var out []string
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}

// The fence holds RenewDeadline from the send of the last successful renewal by this identity, lapses
// (once, calling back) when no renewal extends it, ends for good when the Lease is written away, and its
// context ends with it. No API server: the lock under it is a stub.
func TestLeaseFenceFollowsTheRenewals(t *testing.T) {
	lapsed := make(chan struct{}, 2)
	f := newLeaseFence(time.Hour, func() { lapsed <- struct{}{} })
	lock := &fencedLock{Interface: &stubLock{id: "me"}, fence: f}
	assert.False(t, f.valid(), "valid before any renewal")
	ctx := f.leaderContext(context.Background())

	require.NoError(t, lock.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"}))
	assert.True(t, f.valid(), "a renewal by this identity does not open the fence")
	stub := lock.Interface.(*stubLock)
	stub.fail = true
	_ = lock.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"})
	assert.True(t, f.valid(), "a failed renewal closed the fence before its deadline")

	// A renewal whose deadline is already past (sent a window ago) lapses the fence at once.
	f.renewed(time.Now().Add(-2 * time.Hour))
	assert.True(t, f.valid(), "an older renewal shortened the fence")
	g := newLeaseFence(time.Millisecond, func() { lapsed <- struct{}{} })
	gctx := g.leaderContext(context.Background())
	g.renewed(time.Now().Add(-time.Second))
	select {
	case <-lapsed:
	case <-time.After(10 * time.Second):
		t.Fatal("the fence never lapsed")
	}
	assert.False(t, g.valid())
	assert.Error(t, gctx.Err(), "the leader's context outlived the fence")
	g.renewed(time.Now())
	assert.False(t, g.valid(), "a lapsed fence opened again")

	// Writing the Lease away (client-go's release) ends the fence without calling back.
	stub.fail = false
	require.NoError(t, lock.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: ""}))
	assert.False(t, f.valid())
	assert.Error(t, ctx.Err())
	assert.Len(t, lapsed, 0, "a release counted as a lapse")
}

type stubLock struct {
	resourcelock.Interface
	id   string
	fail bool
}

func (s *stubLock) Identity() string { return s.id }
func (s *stubLock) Update(context.Context, resourcelock.LeaderElectionRecord) error {
	if s.fail {
		return errors.New("refused (stub)")
	}
	return nil
}
