package alarmsapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/o2ims-operator/o2ims-operator/alarms"
	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/inventory"
	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/callback"
	"github.com/o2ims-operator/o2ims-operator/netbox"
	"github.com/o2ims-operator/o2ims-operator/subscriptions"
	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
	"github.com/o2ims-operator/o2ims-operator/tests/promtest"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
)

const (
	v1          = Root + "/v1"
	simToken    = "0123456789abcdef0123456789abcdef01234567"
	testTimeout = 30 * time.Minute
)

// env is the alarms API and raiser over the operator's real parts: a NetBox simulator read through the
// real NetBox client into the real inventory view, requests on the real API server read through an
// informer, the alarms stored in a ConfigMap of the test's own namespace.
type env struct {
	*nbitest.Env
	sim       *netboxsim.Server
	nb        *netbox.Client
	view      *inventory.View
	refresher *inventory.Refresher
	cfg       inventory.Config
	kube      kubernetes.Interface
	namespace string
	facts     alarms.Facts
	store     *alarms.Store
	raiser    *alarms.Raiser
	reg       *prometheus.Registry
	subs      *subscriptions.SubscriptionStore // the alarm subscriptions
	policy    *callback.Policy                 // theirs: loopback allowed, for the test's receivers

	pageSize int // the next restart's page size (0: the default)

	mu     sync.Mutex
	offset time.Duration     // the raiser's clock, ahead of the real one
	dmFor  map[string]string // request name → deployment manager id the inventory answers
}

// newEnv seeds the simulator with one site of two free hosts of one type.
func newEnv(t *testing.T) *env {
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

	e := &env{Env: nbitest.Prepare(t), sim: sim, nb: nb, cfg: cfg, dmFor: map[string]string{}}
	e.view = inventory.NewView(cfg, nil)
	nb.Claims.ObserveWrites(e.view.Written)
	e.refresher, err = inventory.NewRefresher(e.view, nb.Search, nil, nil)
	require.NoError(t, err)
	require.NoError(t, e.refresher.Refresh(context.Background(), true))

	e.kube = kubernetes.NewForConfigOrDie(e.Kapi.AdminConfig())
	e.namespace = e.Prefix + "alarms"
	_, err = e.kube.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.namespace}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = e.kube.CoreV1().Namespaces().Delete(context.Background(), e.namespace, metav1.DeleteOptions{})
	})
	e.facts = alarms.NewFacts(e.Store, e.view, e.deploymentManagers, nb.Gate.Degraded)
	e.restart()
	return e
}

// restart is a new replica (or process) on the same storage: a new store, metrics, raiser and API.
func (e *env) restart() {
	t := e.T
	e.store = alarms.NewStore(e.kube, e.namespace).WithClock(e.now)
	t.Cleanup(e.store.Close)
	e.reg = prometheus.NewRegistry()
	metrics, err := alarms.NewMetrics(e.reg, e.store)
	require.NoError(t, err)
	e.raiser = alarms.NewRaiser(alarms.Config{Inventory: e.cfg, CreationTimeout: testTimeout, Now: e.now},
		e.facts, e.store, metrics, zap.NewNop())
	if e.Srv != nil {
		require.NoError(t, e.Srv.Shutdown(context.Background()))
	}
	if e.policy == nil {
		p, err := callback.New(callback.Config{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
		require.NoError(t, err)
		e.policy = p
	}
	e.subs = subscriptions.NewSubscriptionStore(e.kube, e.namespace).WithKind(alarms.Subscriptions).
		WithBaselineFunc(e.store.Snapshot).WithPolicy(e.policy)
	t.Cleanup(e.subs.Close)
	api := New(e.store, metrics).WithAlertmanager(alarms.NewReceiver(e.cfg, e.facts)).WithSubscriptions(e.subs, nil)
	e.Serve(nil, zap.NewNop(), []nbi.API{api}, func(c *nbi.Config) {
		if e.pageSize > 0 {
			c.PageSize = e.pageSize
		}
	})
}

func (e *env) now() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return time.Now().Add(e.offset)
}

func (e *env) advance(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.offset += d
}

func (e *env) deploymentManagers() ([]*inventory.Entry, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []*inventory.Entry
	for name, uid := range e.dmFor {
		out = append(out, e.cfg.DeploymentManagerEntry(&inventory.Cluster{UID: uid, Name: "c", Namespace: "default", RequestID: name}))
	}
	return out, nil
}

// evaluate runs the raiser once.
func (e *env) evaluate() {
	e.T.Helper()
	require.NoError(e.T, e.raiser.Evaluate(context.Background()))
}

// refresh re-reads NetBox into the view (err: what the refresh met).
func (e *env) refresh() error { return e.refresher.Refresh(context.Background(), true) }

// send sends a request to the alarms API and checks the exchange against the alarms reference.
func (e *env) send(method, path string, body []byte, contentType string) *nbitest.Exchange {
	e.T.Helper()
	req, err := http.NewRequest(method, e.Base+path, bytes.NewReader(body))
	require.NoError(e.T, err)
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := e.Client.Do(req)
	require.NoError(e.T, err)
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(e.T, err)
	x := &nbitest.Exchange{Req: req, Resp: resp, Body: data}
	nbitest.CheckAlarmsAgainstReference(e.T, x, body)
	return x
}

func (e *env) get(path string) *nbitest.Exchange { return e.send(http.MethodGet, path, nil, "") }

func (e *env) patch(path, body string) *nbitest.Exchange {
	return e.send(http.MethodPatch, path, []byte(body), mediaMergePatch)
}

// alarmsOf lists the alarms of definition def.
func (e *env) alarmsOf(def *alarms.Definition) []map[string]any {
	e.T.Helper()
	x := e.get(v1 + "/alarms?filter=" + url.QueryEscape("(eq,extensions/alarmName,"+def.Name+")"))
	require.Equal(e.T, http.StatusOK, x.Code(), string(x.Body))
	return x.Items(e.T)
}

// only is the one alarm of def.
func (e *env) only(def *alarms.Definition) map[string]any {
	e.T.Helper()
	items := e.alarmsOf(def)
	require.Len(e.T, items, 1, "one %s alarm", def.Name)
	return items[0]
}

// metric reads a counter or gauge of the alarms by definition.
func (e *env) metric(name string, labels map[string]string) float64 {
	e.T.Helper()
	v, _ := promtest.Gather(e.T, e.reg).Value(name, labels)
	return v
}

// request creates a request of the test and gives it a provisioningStatus, then waits for the cache.
func (e *env) request(name, state, message string) string {
	e.T.Helper()
	id := e.ID(name)
	if _, found, _ := e.Store.Get(id); !found {
		e.CreateDirect(id, nbitest.SimpleSpec("c-"+name))
	}
	e.SetStatus(id, map[string]any{"provisioningStatus": map[string]any{
		"provisioningState": state, "provisioningMessage": message, "provisioningUpdateTime": time.Now().UTC().Format(time.RFC3339),
	}})
	e.waitCached(id, func(st string) bool { return st == state })
	return id
}

func (e *env) waitCached(id string, ok func(state string) bool) {
	e.T.Helper()
	require.Eventually(e.T, func() bool {
		u, found, _ := e.Store.Get(id)
		if !found {
			return ok("")
		}
		st, _ := u.Object["status"].(map[string]any)
		ps, _ := st["provisioningStatus"].(map[string]any)
		s, _ := ps["provisioningState"].(string)
		return ok(s)
	}, 10*time.Second, 20*time.Millisecond)
}

func (e *env) deleteRequest(id string) {
	e.T.Helper()
	require.NoError(e.T, e.Admin.Resource(v1alpha1.GVR).Delete(context.Background(), id, metav1.DeleteOptions{}))
	require.Eventually(e.T, func() bool { _, found, _ := e.Store.Get(id); return !found }, 10*time.Second, 20*time.Millisecond)
}
