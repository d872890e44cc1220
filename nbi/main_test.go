package nbi

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

func TestMain(m *testing.M) {
	// Tests share one real API server. A fuzzing worker process runs only its fuzz target, which needs
	// none, so it does not start one per worker.
	flag.Parse()
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		os.Exit(m.Run())
	}
	os.Exit(kubeapi.RunMain(m, kubeapi.DefaultCRDs))
}

// informerStore is the Store the operator will provide, made of a plain dynamic informer. It answers only
// the requests whose name starts with prefix, so tests sharing the API server do not see each other's.
type informerStore struct {
	inf    cache.SharedIndexInformer
	prefix string
}

func newInformerStore(t testing.TB, dyn dynamic.Interface, prefix string) *informerStore {
	t.Helper()
	inf := dynamicinformer.NewFilteredDynamicInformer(dyn, v1alpha1.GVR, "", 0, cache.Indexers{}, nil).Informer()
	stop := make(chan struct{})
	go inf.Run(stop)
	t.Cleanup(func() { close(stop) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.True(t, cache.WaitForCacheSync(ctx.Done(), inf.HasSynced), "informer never synced")
	return &informerStore{inf: inf, prefix: prefix}
}

func (s *informerStore) List() ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, o := range s.inf.GetStore().List() {
		u := o.(*unstructured.Unstructured)
		if strings.HasPrefix(u.GetName(), s.prefix) {
			out = append(out, u)
		}
	}
	return out, nil
}

func (s *informerStore) Get(name string) (*unstructured.Unstructured, bool, error) {
	if !strings.HasPrefix(name, s.prefix) {
		return nil, false, nil
	}
	o, ok, err := s.inf.GetStore().GetByKey(name)
	if err != nil || !ok {
		return nil, false, err
	}
	return o.(*unstructured.Unstructured).DeepCopy(), true, nil
}

// env is one test's northbound API on a real listener, writing to the shared real API server.
type env struct {
	t      *testing.T
	kapi   *kubeapi.Server
	admin  dynamic.Interface
	srv    *Server
	base   string
	prefix string
	store  *informerStore
	reg    *prometheus.Registry
	logs   *observer.ObservedLogs
	client *http.Client

	api  kubeapi.Recorder // what the NBI's dynamic client sent
	auth kubeapi.Recorder // what the NBI's review client sent
}

// apiCalls and authCalls count what the NBI's clients sent to the API server so far.
func (e *env) apiCalls() int  { return len(e.api.Requests()) }
func (e *env) authCalls() int { return len(e.auth.Requests()) }

var envSeq atomic.Int64

// newEnv starts a server for the test; tweak adjusts its Config.
func newEnv(t *testing.T, tweak ...func(*Config)) *env {
	t.Helper()
	e := &env{t: t, kapi: kubeapi.Shared(t), prefix: fmt.Sprintf("t%d-", envSeq.Add(1))}
	e.admin = e.kapi.AdminDynamic()
	e.store = newInformerStore(t, e.admin, e.prefix)

	nbiCfg := e.kapi.AdminConfig()
	nbiCfg.Wrap(e.api.Wrap)
	dyn := dynamic.NewForConfigOrDie(nbiCfg)
	reviewCfg := e.kapi.AdminConfig()
	reviewCfg.Wrap(e.auth.Wrap)
	kube := kubernetes.NewForConfigOrDie(reviewCfg)

	cfg := Config{Host: "127.0.0.1", Port: 0, PageSize: 1000}
	for _, f := range tweak {
		f(&cfg)
	}
	core, logs := observer.New(zapcore.DebugLevel)
	e.logs = logs
	e.reg = prometheus.NewRegistry()
	srv, err := New(cfg, e.store, dyn, kube, zap.New(core), e.reg)
	require.NoError(t, err)
	require.NoError(t, srv.Start())
	e.srv = srv
	scheme := "http"
	if cfg.TLSCertFile != "" {
		scheme = "https"
	}
	e.base = scheme + "://" + srv.Addr()
	e.client = &http.Client{Transport: &http.Transport{Proxy: nil}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		e.deleteAll()
	})
	return e
}

// deleteAll removes this test's requests, finalizers included.
func (e *env) deleteAll() {
	ctx := context.Background()
	list, err := e.admin.Resource(v1alpha1.GVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, u := range list.Items {
		if !strings.HasPrefix(u.GetName(), e.prefix) {
			continue
		}
		if len(u.GetFinalizers()) > 0 {
			_, _ = e.admin.Resource(v1alpha1.GVR).Patch(ctx, u.GetName(), "application/merge-patch+json",
				[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		}
		_ = e.admin.Resource(v1alpha1.GVR).Delete(ctx, u.GetName(), metav1.DeleteOptions{})
	}
}

// id is a request id private to this test.
func (e *env) id(name string) string { return e.prefix + name }

const collectionPath = apiRoot + "/v1/provisioningRequests"

func namedPath(id string) string { return collectionPath + "/" + id }

// exchange is one request and its answer, already checked against the reference.
type exchange struct {
	req  *http.Request
	resp *http.Response
	body []byte
}

func (x *exchange) code() int { return x.resp.StatusCode }

// object decodes a JSON or YAML answer.
func (x *exchange) object(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, yaml.Unmarshal(x.body, &m), "answer %d: %s", x.code(), x.body)
	return m
}

func (x *exchange) problem(t testing.TB) ProblemDetails {
	t.Helper()
	var p ProblemDetails
	require.NoError(t, yaml.Unmarshal(x.body, &p), "answer %d: %s", x.code(), x.body)
	return p
}

func (x *exchange) info(t testing.TB) ProvisioningRequestInfo {
	t.Helper()
	var i ProvisioningRequestInfo
	require.NoError(t, yaml.Unmarshal(x.body, &i), "answer %d: %s", x.code(), x.body)
	return i
}

func (x *exchange) list(t testing.TB) ProvisioningRequestList {
	t.Helper()
	var l ProvisioningRequestList
	require.NoError(t, yaml.Unmarshal(x.body, &l), "answer %d: %s", x.code(), x.body)
	return l
}

// do sends a request to the real listener and checks the answer against the reference. headers are
// name/value pairs; a body defaults to Content-Type application/json.
func (e *env) do(method, path string, body []byte, headers ...string) *exchange {
	e.t.Helper()
	return doRequest(e.t, e.client, e.base, method, path, body, headers...)
}

func doRequest(t testing.TB, client *http.Client, base, method, path string, body []byte, headers ...string) *exchange {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, rd)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", mediaJSON)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	resp, err := client.Do(req)
	require.NoError(t, err, "%s %s", method, path)
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	x := &exchange{req: req, resp: resp, body: data}
	checkAgainstReference(t, x, body)
	return x
}

func jsonBody(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// requestBody is a valid ProvisioningRequestData for id.
func requestBody(id string) map[string]any {
	return map[string]any{
		"provisioningRequestId": id,
		"name":                  "edge cluster " + id,
		"description":           "provisioned by the tests",
		"templateName":          "nephio-workload-cluster",
		"templateVersion":       "v3.0.0",
		"templateParameters": map[string]any{
			"clusterName": "edge-" + id,
			"labels":      map[string]any{"nephio.org/site-type": "edge"},
		},
	}
}

// createDirect writes a request straight to the API server (as kubectl would), not through the NBI.
func (e *env) createDirect(id string, spec map[string]any, finalizers ...string) *unstructured.Unstructured {
	e.t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.APIVersion,
		"kind":       v1alpha1.Kind,
		"metadata":   map[string]any{"name": id},
		"spec":       spec,
	}}
	if len(finalizers) > 0 {
		u.SetFinalizers(finalizers)
	}
	created, err := e.admin.Resource(v1alpha1.GVR).Create(context.Background(), u, metav1.CreateOptions{})
	require.NoError(e.t, err)
	return created
}

// setStatus writes status.provisioningStatus (and the resource set) through the status subresource.
func (e *env) setStatus(id string, status map[string]any) *unstructured.Unstructured {
	e.t.Helper()
	ctx := context.Background()
	u, err := e.admin.Resource(v1alpha1.GVR).Get(ctx, id, metav1.GetOptions{})
	require.NoError(e.t, err)
	u.Object["status"] = status
	out, err := e.admin.Resource(v1alpha1.GVR).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	require.NoError(e.t, err)
	return out
}

// eventually polls the named GET until cond holds (the informer follows the API server a moment later).
func (e *env) eventually(path string, cond func(*exchange) bool, what string) *exchange {
	e.t.Helper()
	return e.eventuallyAs("", path, cond, what)
}

// eventuallyAs is eventually with a bearer token ("" for none): RBAC follows a moment later, too.
// Polled on the test's goroutine; on timeout the last answer is shown.
func (e *env) eventuallyAs(token, path string, cond func(*exchange) bool, what string) *exchange {
	e.t.Helper()
	var headers []string
	if token != "" {
		headers = bearer(token)
	}
	var x *exchange
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) {
			x = e.do(http.MethodGet, path, nil, headers...)
			return cond(x), nil
		})
	if err != nil {
		e.t.Fatalf("%s never happened; last answer %d: %s", what, x.code(), x.body)
	}
	return x
}

func (e *env) waitCached(id string) *exchange {
	e.t.Helper()
	return e.eventually(namedPath(id), func(x *exchange) bool { return x.code() == http.StatusOK }, id+" in the cache")
}

func simpleSpec(cluster string) map[string]any {
	return map[string]any{
		"templateName":       "nephio-workload-cluster",
		"templateVersion":    "v3.0.0",
		"templateParameters": map[string]any{"clusterName": cluster},
	}
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }
