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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// sentWrite is a mutating request as a client's transport sent it, and when.
type sentWrite struct {
	at           time.Time
	method, path string
}

// The Widget CRD prunes unknown status fields: these tests write phase, message and extensions (an earlier
// version wrote status.by and status.result, which the API server drops silently, and never saw them land).

// Two leader-elected instances on the real API server. The leader a is in a pass over fe1 (its handler
// paused, as a stopped process would be) with fe2 queued behind it, when its Lease renewals stop reaching
// the API server (a partition of its lease client only). a's fence lapses RenewDeadline after the send
// of its last renewal — before b can take the Lease — and b takes over and handles both objects. Then
// a's handler writes outside its pass (a ConfigMap and a widget with context.Background(), a NetBox write
// asked of the leader fence) and returns with a status and an event: a sends nothing (no write at all on
// its clients after its fence time, none of it on the API server; each refusal counted), and it stops.
// While b stands by, it writes what every replica serves (an NBI's ConfigMap) but nothing to NetBox.
func TestADeposedLeaderWritesNothing(t *testing.T) {
	t.Parallel()
	label := "fence"
	srv := kubeapi.Shared(t)
	require.NoError(t, srv.EnsureNamespace(context.Background(), "fence-test"))
	opts := Options{
		LeaderElect: true, LeaderElectionID: "fence-test", Namespace: "fence-test", Workers: 1,
		LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 200 * time.Millisecond,
		ShutdownTimeout: 2 * time.Minute, // the deposed leader's drain waits for its paused pass
	}
	var (
		mu    sync.Mutex
		runs  []string // "<instance>/<object>" per handler run
		stray strayResult
		ops   = map[string]*Operator{}
	)
	inPass, release := make(chan struct{}), make(chan struct{})
	mk := func(name string) *testOperator {
		return newTestOperator(t, label, opts, func(op *Operator, w *Watch) {
			ops[name] = op
			w.OnCreate("create_fn", func(_ context.Context, c *Cause) error {
				mu.Lock()
				runs = append(runs, name+"/"+c.Object.GetName())
				mu.Unlock()
				if name == "a" && c.Object.GetName() == "fe1" {
					close(inPass)
					<-release // paused: it ignores its context
					sw := strayWrites(ops["a"], label, "fence-test")
					mu.Lock()
					stray = sw
					mu.Unlock()
				}
				c.Patch.SetStatus(name, "phase")
				c.Normal("Handled", "handled by "+name)
				return nil
			})
		})
	}
	a, b := mk("a"), mk("b")
	var (
		sentMu sync.Mutex
		sent   []sentWrite
	)
	a.rec.Reroute = func(req *http.Request) *http.Request {
		if req.Method != http.MethodGet {
			sentMu.Lock()
			sent = append(sent, sentWrite{time.Now(), req.Method, req.URL.Path})
			sentMu.Unlock()
		}
		return req
	}
	partition := &leasePartition{}
	cfg := srv.AdminConfig()
	cfg.WrapTransport = partition.wrap
	a.op.clients.lease = kubernetes.NewForConfigOrDie(cfg)

	a.start(t)
	eventually(t, 20*time.Second, a.op.Leading, "a never led")
	b.start(t)
	standbyWrites(t, b.op, label, "fence-test")
	create(t, widget(label, "fe1", map[string]any{}))
	<-inPass
	create(t, widget(label, "fe2", map[string]any{}))
	eventually(t, 20*time.Second, func() bool { return a.op.ctrls[0].queue.Len() == 1 }, "fe2 never queued on a")

	partition.block.Store(true)
	eventually(t, 20*time.Second, func() bool { return !a.op.mayAct() }, "a's fence never lapsed")
	fenceAt := a.op.fence.deadline()
	eventually(t, 30*time.Second, func() bool { return statusBy(t, "fe1") == "b" && statusBy(t, "fe2") == "b" }, "b never handled both")
	lease, err := srv.AdminClientset().CoordinationV1().Leases("fence-test").Get(context.Background(), "fence-test", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, lease.Spec.AcquireTime)
	assert.True(t, lease.Spec.AcquireTime.After(fenceAt), "b took the Lease at %s, before a's fence lapsed at %s",
		lease.Spec.AcquireTime.Time, fenceAt)

	close(release)
	// The paused pass ends in a's apply, which refuses its status write before sending it.
	eventually(t, 30*time.Second, func() bool {
		return testutil.ToFloat64(a.op.metrics.Fenced.WithLabelValues("status")) == 1
	}, "a's paused pass never reached its write")
	select {
	case err := <-a.done:
		require.Error(t, err)
		assert.Contains(t, err.Error(), "leader election lost")
		a.cancel = nil
	case <-time.After(time.Minute):
		t.Fatal("the deposed a never stopped")
	}
	mu.Lock()
	got := stray
	mu.Unlock()
	assert.True(t, IsClass(got.configMap, ClassFenced), "a's ConfigMap write: %v", got.configMap)
	assert.True(t, IsClass(got.widget, ClassFenced), "a's widget write: %v", got.widget)
	assert.True(t, IsClass(got.netbox, ClassFenced), "a's NetBox write: %v", got.netbox)
	assert.Equal(t, 2.0, testutil.ToFloat64(a.op.metrics.Fenced.WithLabelValues("kube-write")))
	assert.Equal(t, 1.0, testutil.ToFloat64(a.op.metrics.Fenced.WithLabelValues("netbox-write")))
	_, err = srv.AdminClientset().CoreV1().ConfigMaps("fence-test").Get(context.Background(), "stray-"+label, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "a's ConfigMap reached the API server: %v", err)
	_, found := get(t, "stray-"+label)
	assert.False(t, found, "a's widget reached the API server")
	sentMu.Lock()
	for _, w := range sent {
		assert.False(t, w.at.After(fenceAt), "a sent %s %s %s after its fence lapsed", w.method, w.path, w.at.Sub(fenceAt))
	}
	sentMu.Unlock()
	assert.Equal(t, "b", statusBy(t, "fe1"))
	for _, e := range events(t, "default", "fe1") {
		assert.NotContains(t, e.Message, "handled by a", "the deposed a posted its pass's event")
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"a/fe1"}, only(runs, "a/"), "a ran a handler after its fence lapsed")
}

// strayResult is what the writes a handler sends outside its pass's context met.
type strayResult struct{ configMap, widget, netbox error }

// strayWrites are writes made as a runnable, a release step or a goroutine makes them, with a context of
// their own: a ConfigMap and a widget (labelled apart, so no watch would take it) through op's clients,
// and a NetBox write asked of op's leader fence, as the NetBox client asks it.
func strayWrites(op *Operator, label, ns string) strayResult {
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "stray-" + label, Namespace: ns}}
	_, cmErr := op.Clients().Kubernetes.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
	_, wErr := op.Clients().Dynamic.Resource(widgetGVR).Create(ctx, widget(label+"-stray", "stray-"+label, map[string]any{}), metav1.CreateOptions{})
	return strayResult{configMap: cmErr, widget: wErr, netbox: op.LeaderWrites("netbox-write")()}
}

// standbyWrites checks what a replica that never led may write: what every replica serves (here a
// ConfigMap, as the NBI's subscriptions are), with a context of its own — and nothing to NetBox.
func standbyWrites(t *testing.T, op *Operator, label, ns string) {
	t.Helper()
	require.False(t, op.Leading())
	kube := op.Clients().Kubernetes.CoreV1().ConfigMaps(ns)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "standby-" + label, Namespace: ns}}
	_, err := kube.Create(context.Background(), cm, metav1.CreateOptions{})
	require.NoError(t, err, "a standby could not write what every replica serves")
	require.NoError(t, kube.Delete(context.Background(), cm.Name, metav1.DeleteOptions{}))
	assert.True(t, IsClass(op.LeaderWrites("netbox-write")(), ClassFenced), "a standby may write to NetBox")
	assert.Equal(t, 1.0, testutil.ToFloat64(op.metrics.Fenced.WithLabelValues("netbox-write")))
	assert.Zero(t, testutil.ToFloat64(op.metrics.Fenced.WithLabelValues("kube-write")))
}

// A pass whose object changed between its read and its write (someone else wrote the status) has its
// status write refused by the resourceVersion it carries — nothing of it ever merged, as a watch of the
// object shows — and runs again on the newer object, deciding from what it now reads; no Warning.
func TestAStatusWriteOnAStaleReadIsRefusedAndThePassRunsAgain(t *testing.T) {
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
			other, _, _ := unstructured.NestedString(c.Object.Object, "status", "message")
			c.Patch.SetStatus(map[string]any{"run": int64(n), "sawOther": other}, "extensions", "result")
			return nil
		})
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wi, err := dyn(t).Watch(ctx, metav1.ListOptions{LabelSelector: "test=" + label})
	require.NoError(t, err)
	defer wi.Stop()
	to.start(t)
	create(t, widget(label, "sw1", map[string]any{}))
	<-edited
	// Someone else writes the status while the pass works (the NBI, a user, a new leader).
	u, err := dyn(t).Get(context.Background(), "sw1", metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(u.Object, "theirs", "status", "message"))
	theirs, err := dyn(t).UpdateStatus(context.Background(), u, metav1.UpdateOptions{})
	require.NoError(t, err)
	close(resume)

	// Every version of the object the API server stored, until the pass's result landed.
	var result map[string]any
	for result == nil {
		select {
		case ev := <-wi.ResultChan():
			require.NotEqual(t, watch.Error, ev.Type, "watch: %v", ev.Object)
			obj, ok := ev.Object.(*unstructured.Unstructured)
			require.True(t, ok)
			result, _, _ = unstructured.NestedMap(obj.Object, "status", "extensions", "result")
		case <-time.After(30 * time.Second):
			t.Fatal("the pass's result never landed")
		}
	}
	assert.Equal(t, int64(2), result["run"], "the refused write merged, or the pass ran more than once again: %v", result)
	assert.Equal(t, "theirs", result["sawOther"], "the result was not decided on the newer object")
	assert.Equal(t, "theirs", statusField(mustGet(t, "sw1"), "message"), "the other writer's status was overwritten")
	bodies := to.rec.Bodies(http.MethodPatch, "/widgets/sw1/status")
	require.Len(t, bodies, 2, "one refused status write, one that landed: %v", bodies)
	assert.NotContains(t, bodies[0], `"resourceVersion":"`+theirs.GetResourceVersion()+`"`)
	assert.Contains(t, bodies[0], `"resourceVersion":"`, "the status write is not fenced")
	assert.Contains(t, bodies[1], `"resourceVersion":"`+theirs.GetResourceVersion()+`"`, "the second run did not read the newer object")
	assert.Equal(t, int32(2), runs.Load())
	for _, e := range events(t, "default", "sw1") {
		assert.NotEqual(t, "Warning", e.Type, "a conflict surfaced as a warning: %s", e.Message)
	}
}

// leasePartition fails every request of the lease client once blocked, as a partition between the
// leader and the API server would.
type leasePartition struct{ block atomic.Bool }

func (p *leasePartition) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if p.block.Load() {
			return nil, errors.New("partitioned (test)")
		}
		return rt.RoundTrip(req)
	})
}

func dyn(t *testing.T) dynamic.NamespaceableResourceInterface {
	return kubeapi.Shared(t).AdminDynamic().Resource(widgetGVR)
}

func statusBy(t *testing.T, name string) string {
	t.Helper()
	u, ok := get(t, name)
	if !ok {
		return ""
	}
	by, _, _ := unstructured.NestedString(u.Object, "status", "phase")
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
	stub := &stubLock{id: "me"}
	lock := &fencedLock{Interface: stub, fence: f}
	assert.False(t, f.valid(), "valid before any renewal")
	ctx := f.leaderContext(context.Background())

	require.NoError(t, lock.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"}))
	assert.True(t, f.valid(), "a renewal by this identity does not open the fence")
	stub.fail = true
	_ = lock.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"})
	assert.True(t, f.valid(), "a failed renewal closed the fence before its deadline")
	f.renewed(time.Now().Add(-2 * time.Hour))
	assert.True(t, f.valid(), "an older renewal shortened the fence")

	// A renewal whose deadline is already past lapses the fence at once, whatever the timer does.
	g := newLeaseFence(time.Millisecond, func() { lapsed <- struct{}{} })
	gctx := g.leaderContext(context.Background())
	g.renewed(time.Now().Add(-time.Second))
	assert.False(t, g.valid())
	<-lapsed
	assert.Error(t, gctx.Err(), "the passes' context outlived the fence")
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

// The fence never outlasts what another replica may wait: the Lease keeps whole seconds of duration and
// a standby may date a renewal up to a second early.
func TestFenceWindowIsShorterThanAStandbyWaits(t *testing.T) {
	assert.Equal(t, 10*time.Second, fenceWindow(15*time.Second, 10*time.Second), "the defaults: RenewDeadline")
	assert.Equal(t, time.Second, fenceWindow(2*time.Second, 1500*time.Millisecond))
	assert.Equal(t, time.Second, fenceWindow(2900*time.Millisecond, 2*time.Second), "2.9 s is stored as 2 s")
	assert.LessOrEqual(t, fenceWindow(1500*time.Millisecond, time.Second), time.Duration(0), "no usable window")
}
