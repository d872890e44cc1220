package performanceapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/o2ims-operator/o2ims-operator/inventory"
	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/callback"
	"github.com/o2ims-operator/o2ims-operator/netbox"
	"github.com/o2ims-operator/o2ims-operator/performance"
	"github.com/o2ims-operator/o2ims-operator/subscriptions"
	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
)

const (
	v2       = RootSpec + "/v2"
	simToken = "0123456789abcdef0123456789abcdef01234567"
)

// testBounds let a job collect every second (the evaluator is driven by hand, on its own clock).
var testBounds = performance.Bounds{MaxJobs: 3, MinInterval: 1, MaxResults: 50, MaxSubscriptions: 5}

// env is the performance API and evaluator over the operator's real parts: a NetBox simulator read
// through the real NetBox client into the real inventory view (hosts host-1 and host-2), the jobs stored
// in a ConfigMap of the test's own namespace on the real API server, served by the real NBI shell.
type env struct {
	*nbitest.Env
	view      *inventory.View
	cfg       inventory.Config
	kube      kubernetes.Interface
	namespace string
	store     *performance.Store
	eval      *performance.Evaluator
	promURL   string // "" no Prometheus configured (queries fail)
	auth      bool   // NBI_AUTH=kubernetes: callers reviewed by the API server
	subs      *subscriptions.SubscriptionStore
	policy    *callback.Policy // loopback allowed, for the test's receivers

	mu     sync.Mutex
	offset time.Duration // the evaluator's clock, ahead of the real one
}

func newEnv(t *testing.T) *env { t.Helper(); return newEnvAuth(t, false) }

func newEnvAuth(t *testing.T, auth bool) *env {
	t.Helper()
	sim := netboxsim.New(netboxsim.Options{Tokens: []string{simToken}})
	for _, f := range netboxsim.StandardFields() {
		sim.AddCustomField(f)
	}
	sim.AddSite(netboxsim.Site{Name: "North"})
	sim.AddDeviceType(netboxsim.DeviceType{Model: "R760", Manufacturer: "Dell"})
	for i := 1; i <= 2; i++ {
		sim.AddDevice(netboxsim.Device{Name: fmt.Sprintf("host-%d", i), Site: "North", Model: "R760",
			Custom: map[string]any{"o2ims_managed": true}})
	}
	ts := sim.Start()
	t.Cleanup(sim.Close)
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(simToken), 0o600))
	nb, err := netbox.New(netbox.Config{URL: ts.URL, TokenFile: tokenFile, AllowHTTP: true, Timeout: 2 * time.Second}, nil, nil)
	require.NoError(t, err)
	cfg, err := inventory.ConfigFromEnv(func(string) string { return "" }, ts.URL)
	require.NoError(t, err)
	e := &env{Env: nbitest.Prepare(t), cfg: cfg, auth: auth}
	e.view = inventory.NewView(cfg, nil)
	r, err := inventory.NewRefresher(e.view, nb.Search, nil, nil)
	require.NoError(t, err)
	require.NoError(t, r.Refresh(context.Background(), true))

	e.kube = kubernetes.NewForConfigOrDie(e.Kapi.AdminConfig())
	e.namespace = e.Prefix + "performance"
	_, err = e.kube.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.namespace}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = e.kube.CoreV1().Namespaces().Delete(context.Background(), e.namespace, metav1.DeleteOptions{})
	})
	e.restart()
	return e
}

// restart is a new process (or replica after a failover) on the same storage: a new store, evaluator,
// API and listener.
func (e *env) restart() {
	t := e.T
	t.Helper()
	e.store = performance.NewStore(e.kube, e.namespace)
	t.Cleanup(e.store.Close)
	e.connect(e.promURL)
	if e.Srv != nil {
		require.NoError(t, e.Srv.Shutdown(context.Background()))
	}
	if e.policy == nil {
		p, err := callback.New(callback.Config{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
		require.NoError(t, err)
		e.policy = p
	}
	e.subs = subscriptions.NewSubscriptionStore(e.kube, e.namespace).WithKind(performance.Subscriptions).
		WithBaselineFunc(e.store.Snapshot).WithPolicy(e.policy).WithMax(testBounds.MaxSubscriptions)
	t.Cleanup(e.subs.Close)
	api := New(e.store, testBounds).WithSubscriptions(e.subs, nil)
	if e.auth {
		e.Serve(e.kube, zap.NewNop(), []nbi.API{api}, nbitest.WithKubernetesAuth)
		return
	}
	e.Serve(nil, zap.NewNop(), []nbi.API{api})
}

// connect points a new evaluator at the Prometheus at url ("" a closed port: every query fails).
func (e *env) connect(url string) {
	t := e.T
	t.Helper()
	e.promURL = url
	if url == "" {
		url = "http://127.0.0.1:1"
	}
	prom, err := performance.NewPrometheus(performance.PrometheusConfig{URL: url, Timeout: 5 * time.Second})
	require.NoError(t, err)
	targets := func() []performance.Target { return performance.TargetsOf(e.view.Snapshot()) }
	e.eval = performance.NewEvaluator(e.store, prom, targets, testBounds, zap.NewNop()).WithClock(e.now)
}

func (e *env) now() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return time.Now().Add(e.offset)
}

// evaluate runs one pass of the evaluator once every job is due (its clock moved 2 s on).
func (e *env) evaluate() {
	e.T.Helper()
	e.mu.Lock()
	e.offset += 2 * time.Second // past a 1 s interval; a query this far ahead still sees the last scrapes
	e.mu.Unlock()
	require.NoError(e.T, e.eval.Evaluate(context.Background()))
}

// resourceOf is the inventory id of the host named name.
func (e *env) resourceOf(name string) string {
	e.T.Helper()
	for _, t := range performance.TargetsOf(e.view.Snapshot()) {
		if t.Name == name {
			return t.ResourceID
		}
	}
	e.T.Fatalf("no resource %s", name)
	return ""
}

func (e *env) send(method, path, body, contentType string, headers ...string) *nbitest.Exchange {
	e.T.Helper()
	var rd io.Reader
	if body != "" {
		rd = bytes.NewReader([]byte(body))
	}
	req, err := http.NewRequest(method, e.Base+path, rd)
	require.NoError(e.T, err)
	if body != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := e.Client.Do(req)
	require.NoError(e.T, err)
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(e.T, err)
	return &nbitest.Exchange{Req: req, Resp: resp, Body: data}
}

func (e *env) get(path string) *nbitest.Exchange { return e.send(http.MethodGet, path, "", "") }

func (e *env) post(path, body string) *nbitest.Exchange {
	return e.send(http.MethodPost, path, body, "application/json")
}

// job reads a job through the API.
func (e *env) job(id string) map[string]any {
	e.T.Helper()
	x := e.get(v2 + "/measurementJobs/" + id)
	require.Equal(e.T, http.StatusOK, x.Code(), string(x.Body))
	return x.Object(e.T)
}

// value is the collected value of measurement m on resource r in job (ok false: none).
func value(job map[string]any, m, r string) (float64, bool) {
	list, _ := job["collectedMeasurements"].([]any)
	for _, it := range list {
		c := it.(map[string]any)
		if c["performanceMeasurementId"] == m && c["resourceId"] == r {
			return c["value"].(float64), true
		}
	}
	return 0, false
}

// collection is the job's extensions.collection.
func collection(job map[string]any) map[string]any {
	return job["extensions"].(map[string]any)["collection"].(map[string]any)
}
