package framework

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

func TestHealthzAnswersProbesAnd500WhenOneFails(t *testing.T) {
	t.Parallel()
	var failing atomic.Bool
	var runs atomic.Int32
	to := newTestOperator(t, "healthz", Options{}, func(op *Operator, _ *Watch) {
		op.OnProbe("now", func(context.Context) (any, error) { return "2026-11-30T00:00:00Z", nil })
		op.OnProbe("northbound", func(context.Context) (any, error) {
			runs.Add(1)
			if failing.Load() {
				return nil, errors.New("not accepting connections")
			}
			return "accepting", nil
		})
	})
	to.start(t)
	url := "http://" + to.op.HealthAddr() + "/healthz"
	code, body := httpGet(t, url)
	assert.Equal(t, 200, code)
	assert.JSONEq(t, `{"now":"2026-11-30T00:00:00Z","northbound":"accepting"}`, body)

	// Cached for ten seconds (kopf's rule): a second call does not run the probes again.
	httpGet(t, url)
	assert.Equal(t, int32(1), runs.Load())

	failing.Store(true)
	to.op.health.mu.Lock()
	to.op.health.cached = nil // expire the cache rather than wait ten seconds
	to.op.health.mu.Unlock()
	code, body = httpGet(t, url)
	assert.Equal(t, 500, code)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	assert.Equal(t, map[string]any{"error": "not accepting connections"}, got["northbound"])

	code, body = httpGet(t, "http://"+to.op.HealthAddr()+"/metrics")
	assert.Equal(t, 200, code)
	for _, name := range []string{"workqueue_depth", "rest_client_requests_total", "go_goroutines"} {
		assert.Contains(t, body, name)
	}
}

func TestReadinessWaitsForStartupAndCacheSync(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	to := newTestOperator(t, "readiness", Options{}, func(op *Operator, _ *Watch) {
		op.OnStartup("slow", func(ctx context.Context) error {
			select {
			case <-gate:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- to.op.Run(ctx) }()
	eventually(t, 10*time.Second, func() bool { return to.op.HealthAddr() != "" }, "listener never bound")
	base := "http://" + to.op.HealthAddr()
	code, _ := httpGet(t, base+"/readyz")
	assert.Equal(t, 503, code, "not ready during startup")
	code, _ = httpGet(t, base+"/healthz")
	assert.Equal(t, 200, code, "alive during startup")
	close(gate)
	eventually(t, 20*time.Second, func() bool { c, _ := httpGet(t, base+"/readyz"); return c == 200 }, "never ready")
	cancel()
	require.NoError(t, <-done)
}

func TestStartupFailureStopsWithItsReason(t *testing.T) {
	t.Parallel()
	to := newTestOperator(t, "startup-fail", Options{}, func(op *Operator, _ *Watch) {
		op.OnStartup("configure", func(context.Context) error { return errors.New("CREATION_TIMEOUT must be a positive integer") })
	})
	err := to.op.Run(context.Background())
	require.Error(t, err)
	assert.Equal(t, `startup activity "configure" failed: CREATION_TIMEOUT must be a positive integer`, err.Error())
}

func TestGracefulShutdownFinishesPassesInFlightThenCleansUp(t *testing.T) {
	t.Parallel()
	label := "graceful"
	entered := make(chan struct{})
	var cleaned atomic.Bool
	to := newTestOperator(t, label, Options{}, func(op *Operator, w *Watch) {
		w.OnCreate("create_fn", func(_ context.Context, c *Cause) error {
			close(entered)
			time.Sleep(500 * time.Millisecond) // a pass in flight when SIGTERM arrives
			c.Patch.SetStatus("finished", "phase")
			return nil
		})
		op.OnCleanup("stop", func(context.Context) error { cleaned.Store(true); return nil })
	})
	to.start(t)
	create(t, widget(label, "g1", map[string]any{}))
	<-entered
	require.NoError(t, to.stop(t), "a clean stop returns nil (exit 0)")
	assert.True(t, cleaned.Load(), "cleanup ran")
	assert.Equal(t, "finished", statusField(mustGet(t, "g1"), "phase"), "the pass in flight completed its write")
}

func TestFailStopsTheOperatorWithAnError(t *testing.T) {
	t.Parallel()
	to := newTestOperator(t, "fail", Options{}, func(op *Operator, _ *Watch) {
		op.OnStartup("server", func(context.Context) error {
			go func() {
				time.Sleep(200 * time.Millisecond)
				op.Fail(errors.New("the northbound API stopped by itself"))
			}()
			return nil
		})
	})
	err := to.op.Run(context.Background())
	require.EqualError(t, err, "the northbound API stopped by itself")
}

func TestTwoLeaderElectedInstancesNeverBothHandle(t *testing.T) {
	t.Parallel()
	label := "leader"
	srv := kubeapi.Shared(t)
	require.NoError(t, srv.EnsureNamespace(context.Background(), "leader-test"))
	var mu sync.Mutex
	handledBy, resumedBy := map[string]string{}, map[string]string{}
	opts := Options{
		LeaderElect: true, LeaderElectionID: "leader-test", Namespace: "leader-test",
		LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 200 * time.Millisecond,
	}
	mk := func(name string) *testOperator {
		return newTestOperator(t, label, opts, func(_ *Operator, w *Watch) {
			w.OnCreate("create_fn", func(_ context.Context, c *Cause) error {
				mu.Lock()
				handledBy[c.Object.GetName()] = name
				mu.Unlock()
				return nil
			})
			w.OnResume("create_fn", func(_ context.Context, c *Cause) error {
				mu.Lock()
				resumedBy[c.Object.GetName()] = name
				mu.Unlock()
				return nil
			})
		})
	}
	a, b := mk("a"), mk("b")
	a.start(t)
	eventually(t, 20*time.Second, func() bool { return a.op.Leading() }, "a never led")
	b.start(t)
	for _, n := range []string{"le1", "le2", "le3"} {
		create(t, widget(label, n, map[string]any{}))
	}
	eventually(t, 20*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(handledBy) == 3 }, "not handled")
	assert.False(t, b.op.Leading(), "the standby never handles while a leads")
	mu.Lock()
	for n, by := range handledBy {
		assert.Equal(t, "a", by, "%s handled by the standby", n)
	}
	mu.Unlock()
	// The standby caches the objects (its NBI reads them) but keeps nothing else per object.
	bc := b.op.ctrls[0]
	eventually(t, 10*time.Second, func() bool { _, ok, _ := b.op.Cache().Get(widgetGVR, "", "le3"); return ok }, "the standby's cache lacks le3")
	bc.mu.Lock()
	standbyState := len(bc.objects)
	bc.mu.Unlock()
	assert.Zero(t, standbyState, "a standby keeps no per-object state")
	assert.Zero(t, bc.queue.Len(), "a standby queues nothing")

	require.NoError(t, a.stop(t))
	eventually(t, 20*time.Second, func() bool { return b.op.Leading() }, "b never took over")
	create(t, widget(label, "le4", map[string]any{}))
	eventually(t, 20*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return handledBy["le4"] == "b" }, "b never handled")
	// What b found when it started handling is resumed once, as kopf does when a paused operator's
	// watch starts again; le4, created after, is a create.
	eventually(t, 20*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return resumedBy["le1"] == "b" && resumedBy["le2"] == "b" && resumedBy["le3"] == "b"
	}, "b did not resume what it found")
	mu.Lock()
	assert.NotContains(t, resumedBy, "le4")
	mu.Unlock()
}

// A rotated service-account token (kubelet rewrites the projected file) is used without a restart.
func TestRotatedTokenFileIsPickedUpWithoutRestart(t *testing.T) {
	t.Parallel()
	label := "rotation"
	srv := kubeapi.Shared(t)
	ctx := context.Background()
	const ns, sa = "rotation-test", "operator"
	tokA, err := srv.ServiceAccountToken(ctx, ns, sa, "bound-a")
	require.NoError(t, err)
	require.NoError(t, srv.BindClusterRole(ctx, "rotation-test-admin", "cluster-admin",
		rbacv1.Subject{Kind: "ServiceAccount", Name: sa, Namespace: ns}))
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(tokA), 0o600))

	cfg := &rest.Config{Host: srv.URL, BearerTokenFile: tokenFile, TLSClientConfig: rest.TLSClientConfig{CAFile: srv.CAFile}}
	clients, err := NewClients(cfg, DefaultClientOptions())
	require.NoError(t, err)
	var handled sync.Map
	op, err := New(clients, Options{Prefix: testPrefix, Name: "rotation", Logger: zaptest.NewLogger(t), BackoffBase: 50 * time.Millisecond})
	require.NoError(t, err)
	w := op.Watch(widgetGVR, WatchOptions{LabelSelector: "test=" + label})
	w.OnCreate("create_fn", func(_ context.Context, c *Cause) error {
		handled.Store(c.Object.GetName(), true)
		c.Patch.SetStatus("seen", "phase")
		return nil
	})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- op.Run(runCtx) }()
	defer func() { cancel(); <-done }()
	eventually(t, 20*time.Second, op.Ready, "never ready")
	create(t, widget(label, "rot1", map[string]any{}))
	eventually(t, 20*time.Second, func() bool { return statusField(mustGet(t, "rot1"), "phase") == "seen" }, "not handled with token A")

	// Rotate: a new token in the file, the old one revoked (its bound Secret deleted).
	tokB, err := srv.ServiceAccountToken(ctx, ns, sa, "bound-b")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(tokenFile+".new", []byte(tokB), 0o600))
	require.NoError(t, os.Rename(tokenFile+".new", tokenFile))
	require.NoError(t, srv.AdminClientset().CoreV1().Secrets(ns).Delete(ctx, "bound-a", metav1.DeleteOptions{}))
	eventually(t, 20*time.Second, func() bool {
		_, gerr := kubernetes.NewForConfigOrDie(srv.ConfigForToken(tokA)).CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return gerr != nil
	}, "token A still valid after its Secret was deleted")

	create(t, widget(label, "rot2", map[string]any{}))
	eventually(t, 20*time.Second, func() bool { return statusField(mustGet(t, "rot2"), "phase") == "seen" },
		"not handled after rotation: the new token was not picked up")
}

func TestClientRefusesRedirectsAndNeverForwardsTheToken(t *testing.T) {
	t.Parallel()
	var leaked atomic.Bool
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			leaked.Store(true)
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer elsewhere.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusFound)
	}))
	defer redirector.Close()

	clients, err := NewClients(&rest.Config{Host: redirector.URL, BearerToken: "secret-token"}, DefaultClientOptions())
	require.NoError(t, err)
	_, err = clients.Kubernetes.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{})
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrRedirectRefused)
	assert.True(t, IsClass(ClassifyAPIError("get namespace", false, err), ClassProtocol))
	assert.False(t, leaked.Load(), "the redirect was followed")
}

func TestCallsAreBoundedByTheTimeout(t *testing.T) {
	t.Parallel()
	// A server that accepts and never answers is what a stalled API server looks like.
	stall := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-stall }))
	defer func() { close(stall); srv.Close() }()
	opts := DefaultClientOptions()
	opts.Timeout = 300 * time.Millisecond
	clients, err := NewClients(&rest.Config{Host: srv.URL}, opts)
	require.NoError(t, err)
	start := time.Now()
	_, err = clients.Kubernetes.CoreV1().Namespaces().Get(context.Background(), "x", metav1.GetOptions{})
	elapsed := time.Since(start)
	require.Error(t, err)
	ae, ok := AsAPIError(ClassifyAPIError("get namespace", false, err))
	require.True(t, ok)
	assert.Equal(t, ClassTransport, ae.Class)
	assert.True(t, ae.Retryable)
	// Bounded below too: a refused connection would also "not hang" while exercising no timeout.
	assert.GreaterOrEqual(t, elapsed, 300*time.Millisecond)
}
