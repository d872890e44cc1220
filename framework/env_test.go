package framework

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

func TestMain(m *testing.M) {
	os.Exit(kubeapi.RunMain(m, func() ([]string, error) {
		// The ProvisioningRequest CRD too: the Python image's captured requests (pythonimage_test.go).
		pr, err := kubeapi.RepoFile(kubeapi.ProvisioningRequestCRD)
		return []string{"testdata/crds.yaml", pr}, err
	}))
}

var (
	widgetGVR = schema.GroupVersionResource{Group: "test.o2ims.io", Version: "v1", Resource: "widgets"}
	gadgetGVR = schema.GroupVersionResource{Group: "test.o2ims.io", Version: "v1", Resource: "gadgets"}
)

const (
	testPrefix    = "widgets.test.o2ims.io"
	testFinalizer = "widgets.test.o2ims.io/cleanup"
)

// call is one handler invocation as the handler saw it.
type call struct {
	ID      string
	Reason  Reason
	Name    string
	Retries int
	Started time.Time
	Now     time.Time
	Object  *unstructured.Unstructured
}

type calls struct {
	mu   sync.Mutex
	list []call
}

func (c *calls) add(cause *Cause) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.list = append(c.list, call{cause.HandlerID, cause.Reason, cause.Object.GetName(), cause.Retries, cause.Started, cause.Now, cause.Object})
	n := 0
	for _, x := range c.list {
		if x.ID == cause.HandlerID && x.Name == cause.Object.GetName() {
			n++
		}
	}
	return n
}

func (c *calls) of(id, name string) []call {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []call
	for _, x := range c.list {
		if x.ID == id && (name == "" || x.Name == name) {
			out = append(out, x)
		}
	}
	return out
}

type testOperator struct {
	op     *Operator
	rec    *kubeapi.Recorder
	cancel context.CancelFunc
	done   chan error
}

// newTestOperator builds an operator on the shared API server, watching widgets labelled test=<label>
// (tests run in parallel; the label keeps their objects apart).
func newTestOperator(t *testing.T, label string, opts Options, setup func(op *Operator, w *Watch)) *testOperator {
	t.Helper()
	srv := kubeapi.Shared(t)
	rec := &kubeapi.Recorder{}
	cfg := srv.AdminConfig()
	cfg.WrapTransport = rec.Wrap
	clients, err := NewClients(cfg, DefaultClientOptions())
	require.NoError(t, err)
	if opts.Prefix == "" {
		opts.Prefix = testPrefix
	}
	if opts.Name == "" {
		opts.Name = "test-" + label
	}
	if opts.Logger == nil {
		opts.Logger = zaptest.NewLogger(t)
	}
	if opts.Liveness == "" {
		opts.Liveness = "http://127.0.0.1:0/healthz"
	}
	if opts.BackoffBase == 0 {
		opts.BackoffBase = 50 * time.Millisecond
	}
	op, err := New(clients, opts)
	require.NoError(t, err)
	w := op.Watch(widgetGVR, WatchOptions{LabelSelector: "test=" + label, Finalizer: testFinalizer})
	setup(op, w)
	return &testOperator{op: op, rec: rec}
}

func (to *testOperator) start(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	to.cancel, to.done = cancel, make(chan error, 1)
	go func() { to.done <- to.op.Run(ctx) }()
	eventually(t, 30*time.Second, func() bool { return to.op.Ready() }, "operator never became ready")
	t.Cleanup(func() { to.stop(t) })
}

// stop cancels the operator and returns what Run returned.
func (to *testOperator) stop(t *testing.T) error {
	t.Helper()
	if to.cancel == nil {
		return nil
	}
	to.cancel()
	to.cancel = nil
	select {
	case err := <-to.done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("operator did not stop")
		return nil
	}
}

// The test helpers every package shares (tests/kubeapi), under this package's short names.
var (
	eventually = kubeapi.Eventually
	hasEvent   = kubeapi.HasEvent
)

func widget(label, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.o2ims.io/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "labels": map[string]any{"test": label}},
		"spec":     spec,
	}}
	return u
}

func create(t *testing.T, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	out, err := kubeapi.Shared(t).AdminDynamic().Resource(widgetGVR).Create(context.Background(), u, metav1.CreateOptions{})
	require.NoError(t, err)
	return out
}

func get(t *testing.T, name string) (*unstructured.Unstructured, bool) {
	t.Helper()
	u, err := kubeapi.Shared(t).AdminDynamic().Resource(widgetGVR).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil, false
	}
	return u, true
}

func mustGet(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	u, ok := get(t, name)
	require.True(t, ok, "widget %s not found", name)
	return u
}

func statusField(u *unstructured.Unstructured, f string) string {
	v, _, _ := unstructured.NestedFieldNoCopy(u.Object, "status", f)
	return fmt.Sprint(v)
}

// events lists the events about a named object in a namespace.
func events(t *testing.T, namespace, name string) []corev1.Event {
	t.Helper()
	return kubeapi.Shared(t).Events(t, namespace, name, "")
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url) //nolint:noctx // test helper
	require.NoError(t, err)
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

var _ = rest.CopyConfig
