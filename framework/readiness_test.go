package framework

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// runAsync runs the operator until the returned stop is called; stop returns what Run returned. done is
// closed when Run has returned, with its result in *result.
func runAsync(t *testing.T, op *Operator) (stop func() error, done <-chan struct{}, result *error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	fin := make(chan struct{})
	var res error
	go func() { res = op.Run(ctx); close(fin) }()
	eventually(t, 10*time.Second, func() bool { return op.HealthAddr() != "" }, "listener never bound")
	stop = func() error {
		cancel()
		select {
		case <-fin:
			return res
		case <-time.After(30 * time.Second):
			t.Fatal("operator did not stop")
			return nil
		}
	}
	t.Cleanup(func() { _ = stop() })
	return stop, fin, &res
}

// While a startup activity waits (NetBox at start, say), the operator is alive — /healthz 200 — and not
// ready, with what it waits for in /readyz's body.
func TestReadyzSaysWhatAStartupActivityWaitsFor(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	to := newTestOperator(t, "readyz-startup", Options{}, func(op *Operator, _ *Watch) {
		op.OnProbe("now", func(context.Context) (any, error) { return "now", nil })
		op.OnStartup("inventory", func(ctx context.Context) error {
			ReportWaiting(ctx, "NetBox is not answering yet: 503 Service Unavailable; retrying")
			select {
			case <-gate:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	})
	stop, _, _ := runAsync(t, to.op)
	base := "http://" + to.op.HealthAddr()
	eventually(t, 10*time.Second, func() bool {
		_, body := httpGet(t, base+"/readyz")
		return strings.Contains(body, "NetBox is not answering yet")
	}, "/readyz never said what startup waits for")
	code, body := httpGet(t, base+"/readyz")
	assert.Equal(t, 503, code)
	assert.Equal(t, "not ready: startup activity \"inventory\": NetBox is not answering yet: 503 Service Unavailable; retrying\n", body)
	code, _ = httpGet(t, base+"/healthz")
	assert.Equal(t, 200, code, "alive while startup waits")
	close(gate)
	eventually(t, 20*time.Second, func() bool { c, _ := httpGet(t, base+"/readyz"); return c == 200 }, "never ready")
	require.NoError(t, stop())
}

// A signal during a startup activity is a clean stop (exit 0), not a failed activity.
func TestSignalDuringStartupIsACleanStop(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{})
	to := newTestOperator(t, "startup-signal", Options{}, func(op *Operator, _ *Watch) {
		op.OnStartup("wait", func(ctx context.Context) error {
			close(entered)
			<-ctx.Done()
			return errors.New("NetBox is not answering")
		})
	})
	stop, _, _ := runAsync(t, to.op)
	<-entered
	require.NoError(t, stop())
}

// Fail stops the operator wherever it is: during a startup activity, and while the caches have not synced
// (a watch that never syncs used to leave the NBI's failure unheard until the caches synced: never).
func TestFailStopsTheOperatorBeforeTheCachesSync(t *testing.T) {
	t.Parallel()
	absent := schema.GroupVersionResource{Group: "test.o2ims.io", Version: "v1", Resource: "neverserved"}
	to := newTestOperator(t, "fail-before-sync", Options{}, func(op *Operator, w *Watch) {
		w.Related(absent, "", SameName(false)) // never syncs: nothing serves it
		op.OnStartup("server", func(context.Context) error {
			go func() {
				// Fail once the operator is stuck on the refused watch (or after a while regardless).
				for i := 0; i < 400 && !strings.Contains(op.NotReadyReason(), "cannot watch neverserved.v1.test.o2ims.io"); i++ {
					time.Sleep(50 * time.Millisecond)
				}
				op.Fail(errors.New("the northbound API stopped by itself"))
			}()
			return nil
		})
	})
	_, done, res := runAsync(t, to.op)
	select {
	case <-done:
		require.EqualError(t, *res, "the northbound API stopped by itself")
	case <-time.After(60 * time.Second):
		t.Fatal("Fail before the caches synced did not stop the operator")
	}

	during := newTestOperator(t, "fail-in-startup", Options{}, func(op *Operator, _ *Watch) {
		op.OnStartup("wait", func(ctx context.Context) error {
			go op.Fail(errors.New("the northbound API stopped by itself"))
			<-ctx.Done()
			return ctx.Err()
		})
	})
	require.EqualError(t, during.op.Run(context.Background()), "the northbound API stopped by itself")
}

// A watch whose resource is not served (its CRD is absent) is reported within seconds in one log line
// naming the resource and what installs it, and in /readyz; the operator stays up, alive and not ready.
// Installing the CRD mends it without a restart.
func TestAWatchOfAnAbsentCRDIsReportedAndHealsWhenInstalled(t *testing.T) {
	t.Parallel()
	gvr := schema.GroupVersionResource{Group: "test.o2ims.io", Version: "v1", Resource: "sprockets"}
	core, logs := observer.New(zapcore.InfoLevel)
	remedy := func(g schema.GroupVersionResource, ns string, why Refusal) string {
		return fmt.Sprintf("apply manifests/sprockets (%s %s)", why, ns)
	}
	to := newTestOperator(t, "absent-crd", Options{Logger: zap.New(core), Remedy: remedy}, func(op *Operator, w *Watch) {
		w.Related(gvr, "default", SameName(false))
	})
	stop, _, _ := runAsync(t, to.op)
	base := "http://" + to.op.HealthAddr()
	want := `cannot watch sprockets.v1.test.o2ims.io in namespace "default": the API server does not serve it, its CustomResourceDefinition is absent (404: `
	eventually(t, 60*time.Second, func() bool { return len(logs.FilterMessageSnippet(want).All()) > 0 }, "never logged: %v", logs.All())
	line := logs.FilterMessageSnippet(want).All()[0]
	assert.Equal(t, zapcore.ErrorLevel, line.Level)
	assert.True(t, strings.HasSuffix(line.Message, "; apply manifests/sprockets (absent default)"), line.Message)
	assert.NotContains(t, line.Message, "\n", "one line")
	code, body := httpGet(t, base+"/readyz")
	assert.Equal(t, 503, code)
	assert.Contains(t, body, want)
	assert.Contains(t, body, "apply manifests/sprockets")
	code, _ = httpGet(t, base+"/healthz")
	assert.Equal(t, 200, code, "alive: the state is not-ready, not a restart loop")
	assert.False(t, to.op.Ready())
	time.Sleep(3 * time.Second) // several reflector retries
	assert.Len(t, logs.FilterMessageSnippet(want).All(), 1, "reported once, not at every retry")

	crd := filepath.Join(t.TempDir(), "sprockets.yaml")
	require.NoError(t, os.WriteFile(crd, []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: sprockets.test.o2ims.io}
spec:
  group: test.o2ims.io
  names: {kind: Sprocket, listKind: SprocketList, plural: sprockets, singular: sprocket}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`), 0o600))
	srv := kubeapi.Shared(t)
	ctx := context.Background()
	require.NoError(t, srv.InstallCRDs(ctx, crd))
	t.Cleanup(func() { _ = srv.DeleteCRD(context.Background(), "sprockets.test.o2ims.io") })
	eventually(t, 90*time.Second, func() bool { c, _ := httpGet(t, base+"/readyz"); return c == 200 }, "never ready after the CRD was installed")
	eventually(t, 10*time.Second, func() bool { return logs.FilterMessage("watch works again").Len() > 0 }, "the mend was not logged")
	require.NoError(t, stop())
}

// A watch RBAC refuses (403) is reported the same way, with the API server's words naming the identity;
// granting the permission mends it without a restart.
func TestAForbiddenWatchIsReportedAndHealsWhenGranted(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	ctx := context.Background()
	const ns, sa = "readiness-rbac", "limited"
	token, err := srv.ServiceAccountToken(ctx, ns, sa, "")
	require.NoError(t, err)
	subject := rbacv1.Subject{Kind: "ServiceAccount", Name: sa, Namespace: ns}
	cs := srv.AdminClientset()
	_, err = cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "readiness-widgets"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"test.o2ims.io"}, Resources: []string{"widgets", "widgets/status"}, Verbs: []string{"get", "list", "watch", "patch", "update"}},
			{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, srv.BindClusterRole(ctx, "readiness-widgets", "readiness-widgets", subject))

	core, logs := observer.New(zapcore.InfoLevel)
	clients, err := NewClients(srv.ConfigForToken(token), DefaultClientOptions())
	require.NoError(t, err)
	op, err := New(clients, Options{Prefix: testPrefix, Name: "test-forbidden", Logger: zap.New(core),
		Liveness: "http://127.0.0.1:0/healthz", Remedy: func(schema.GroupVersionResource, string, Refusal) string {
			return "apply manifests/inventory"
		}})
	require.NoError(t, err)
	w := op.Watch(widgetGVR, WatchOptions{LabelSelector: "test=forbidden", Finalizer: testFinalizer})
	w.Related(gadgetGVR, ns, SameName(false))
	stop, _, _ := runAsync(t, op)
	base := "http://" + op.HealthAddr()

	want := `cannot watch gadgets.v1.test.o2ims.io in namespace "readiness-rbac": permission denied (403: `
	eventually(t, 60*time.Second, func() bool { return len(logs.FilterMessageSnippet(want).All()) > 0 }, "never logged: %v", logs.All())
	msg := logs.FilterMessageSnippet(want).All()[0].Message
	assert.Contains(t, msg, `system:serviceaccount:readiness-rbac:limited`)
	assert.True(t, strings.HasSuffix(msg, "; apply manifests/inventory"), msg)
	code, body := httpGet(t, base+"/readyz")
	assert.Equal(t, 503, code)
	assert.Contains(t, body, want)
	assert.Contains(t, body, "apply manifests/inventory")
	code, _ = httpGet(t, base+"/healthz")
	assert.Equal(t, 200, code)

	_, err = cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"test.o2ims.io"}, Resources: []string{"gadgets"}, Verbs: []string{"get", "list", "watch"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "gadgets"},
		Subjects:   []rbacv1.Subject{subject},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	eventually(t, 90*time.Second, func() bool { c, _ := httpGet(t, base+"/readyz"); return c == 200 }, "never ready after the grant")
	require.NoError(t, stop())
}

// One deadline for the whole stop: a pass that ignores cancellation and a cleanup activity that would take
// longer both end within ShutdownTimeout of the signal, and cleanup's context carries that same deadline
// (the budgets used to add up: the drain's, then a fresh one for cleanup, then the health listener's).
func TestStopSharesOneDeadline(t *testing.T) {
	t.Parallel()
	label := "deadline"
	entered := make(chan struct{})
	var cleanupDeadline atomic.Value
	const budget = 2 * time.Second
	// The handler outlives the test by design (it ignores its context), so its pass logs after the test has
	// ended: a logger tied to t would panic then.
	to := newTestOperator(t, label, Options{ShutdownTimeout: budget, Logger: zap.NewNop()}, func(op *Operator, w *Watch) {
		w.OnCreate("create_fn", func(context.Context, *Cause) error {
			close(entered)
			time.Sleep(20 * time.Second) // a pass that ignores its context
			return nil
		})
		op.OnCleanup("drain", func(ctx context.Context) error {
			d, _ := ctx.Deadline()
			cleanupDeadline.Store(d)
			<-ctx.Done() // an NBI drain that takes all it is given
			return ctx.Err()
		})
	})
	to.start(t)
	create(t, widget(label, "deadline-1", map[string]any{}))
	<-entered
	signalled := time.Now()
	to.cancel()
	to.cancel = nil
	select {
	case err := <-to.done:
		require.NoError(t, err)
	case <-time.After(budget + 20*time.Second):
		t.Fatal("the stop did not end")
	}
	d, ok := cleanupDeadline.Load().(time.Time)
	require.True(t, ok, "cleanup ran with a deadline")
	assert.False(t, d.After(signalled.Add(budget).Add(time.Second)),
		"cleanup's deadline %s is the stop's (%s after the signal), not a fresh budget", d.Sub(signalled), budget)
}

// A degraded part is said in /readyz without changing its status: 200 while ready (the pod stays in its
// Services), 503 only for what readiness itself waits for; the line goes when the part is usable again.
func TestDegradedPartsAreSaidByReadyzWithoutChangingItsStatus(t *testing.T) {
	r := newReadiness(zap.NewNop(), nil)
	var why atomic.Value
	why.Store("NetBox unreachable since 2026-01-02T03:04:05Z (HTTP 503);\n requests with hosts wait")
	r.degraded = append(r.degraded, degradation{"netbox", func() string { return why.Load().(string) }},
		degradation{"other", func() string { return "" }})
	get := func(ready bool) (int, string) {
		rec := httptest.NewRecorder()
		r.serve(func() bool { return ready })(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return rec.Code, rec.Body.String()
	}
	code, body := get(true)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok\ndegraded: netbox: NetBox unreachable since 2026-01-02T03:04:05Z (HTTP 503); requests with hosts wait\n", body,
		"one line per degraded part; a part with nothing to say says nothing")
	r.setStage("waiting for the caches of x to sync")
	code, body = get(false)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "not ready: waiting for the caches of x to sync\ndegraded: netbox: NetBox unreachable since 2026-01-02T03:04:05Z (HTTP 503); requests with hosts wait\n", body)
	why.Store("")
	code, body = get(true)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok\n", body, "usable again: the line is gone")
}
