package nbitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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
	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// InformerStore is the Store the operator will provide, made of a plain dynamic informer. It answers only
// the requests whose name starts with prefix, so tests sharing the API server do not see each other's.
type InformerStore struct {
	inf    cache.SharedIndexInformer
	prefix string
}

func NewInformerStore(t testing.TB, dyn dynamic.Interface, prefix string) *InformerStore {
	t.Helper()
	inf := dynamicinformer.NewFilteredDynamicInformer(dyn, v1alpha1.GVR, "", 0, cache.Indexers{}, nil).Informer()
	stop := make(chan struct{})
	go inf.Run(stop)
	t.Cleanup(func() { close(stop) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.True(t, cache.WaitForCacheSync(ctx.Done(), inf.HasSynced), "informer never synced")
	return &InformerStore{inf: inf, prefix: prefix}
}

func (s *InformerStore) List() ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, o := range s.inf.GetStore().List() {
		u := o.(*unstructured.Unstructured)
		if strings.HasPrefix(u.GetName(), s.prefix) {
			out = append(out, u)
		}
	}
	return out, nil
}

func (s *InformerStore) Get(name string) (*unstructured.Unstructured, bool, error) {
	if !strings.HasPrefix(name, s.prefix) {
		return nil, false, nil
	}
	o, ok, err := s.inf.GetStore().GetByKey(name)
	if err != nil || !ok {
		return nil, false, err
	}
	return o.(*unstructured.Unstructured).DeepCopy(), true, nil
}

// Env is one test's northbound API on a real listener, writing to the shared real API server.
type Env struct {
	T      *testing.T
	Kapi   *kubeapi.Server
	Admin  dynamic.Interface
	Srv    *nbi.Server
	Base   string
	Prefix string
	Store  *InformerStore
	Reg    *prometheus.Registry
	Logs   *observer.ObservedLogs
	Client *http.Client

	Dyn      dynamic.Interface // the NBI's dynamic client, recorded in APIRec
	APIRec   kubeapi.Recorder  // what the NBI's dynamic client sent
	AuthRec  kubeapi.Recorder  // what the NBI's review client sent
	kube     kubernetes.Interface
	observed *zap.Logger
}

// APICalls and AuthCalls count what the NBI's clients sent to the API server so far.
func (e *Env) APICalls() int  { return len(e.APIRec.Requests()) }
func (e *Env) AuthCalls() int { return len(e.AuthRec.Requests()) }

var envSeq atomic.Int64

// Prepare is a test's share of the API server: its own id prefix and an informer Store of its requests.
func Prepare(t *testing.T) *Env {
	t.Helper()
	e := &Env{T: t, Kapi: kubeapi.Shared(t), Prefix: fmt.Sprintf("t%d-", envSeq.Add(1))}
	e.Admin = e.Kapi.AdminDynamic()
	e.Store = NewInformerStore(t, e.Admin, e.Prefix)
	return e
}

// NewEnv starts a server for the test with the APIs apis builds (from e.Store and e.Dyn, the NBI's
// recorded dynamic client); tweak adjusts its Config.
func NewEnv(t *testing.T, apis func(e *Env) []nbi.API, tweak ...func(*nbi.Config)) *Env {
	t.Helper()
	e := Prepare(t)
	nbiCfg := e.Kapi.AdminConfig()
	nbiCfg.Wrap(e.APIRec.Wrap)
	e.Dyn = dynamic.NewForConfigOrDie(nbiCfg)
	reviewCfg := e.Kapi.AdminConfig()
	reviewCfg.Wrap(e.AuthRec.Wrap)
	e.kube = kubernetes.NewForConfigOrDie(reviewCfg)
	core, logs := observer.New(zapcore.DebugLevel)
	e.Logs, e.observed = logs, zap.New(core)
	e.Serve(e.kube, e.observed, apis(e), tweak...)
	return e
}

// Serve starts the server with apis on a free loopback port (kube and log as nbi.New takes them); tweak
// adjusts its Config.
func (e *Env) Serve(kube kubernetes.Interface, log *zap.Logger, apis []nbi.API, tweak ...func(*nbi.Config)) {
	t := e.T
	t.Helper()
	cfg := nbi.Config{Host: "127.0.0.1", Port: 0, PageSize: 1000}
	for _, f := range tweak {
		f(&cfg)
	}
	e.Reg = prometheus.NewRegistry()
	srv, err := nbi.New(cfg, kube, log, e.Reg, apis...)
	require.NoError(t, err)
	require.NoError(t, srv.Start())
	e.Srv = srv
	scheme := "http"
	if cfg.TLSCertFile != "" {
		scheme = "https"
	}
	e.Base = scheme + "://" + srv.Addr()
	e.Client = &http.Client{Transport: &http.Transport{Proxy: nil}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		e.DeleteAll()
	})
}

// DeleteAll removes this test's requests, finalizers included.
func (e *Env) DeleteAll() {
	ctx := context.Background()
	list, err := e.Admin.Resource(v1alpha1.GVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, u := range list.Items {
		if !strings.HasPrefix(u.GetName(), e.Prefix) {
			continue
		}
		if len(u.GetFinalizers()) > 0 {
			_, _ = e.Admin.Resource(v1alpha1.GVR).Patch(ctx, u.GetName(), "application/merge-patch+json",
				[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		}
		_ = e.Admin.Resource(v1alpha1.GVR).Delete(ctx, u.GetName(), metav1.DeleteOptions{})
	}
}

// ID is a request id private to this test.
func (e *Env) ID(name string) string { return e.Prefix + name }

// Exchange is one request and its answer, already checked against the reference.
type Exchange struct {
	Req  *http.Request
	Resp *http.Response
	Body []byte
}

// Code is the answer's status.
func (x *Exchange) Code() int { return x.Resp.StatusCode }

// Object decodes a JSON or YAML answer.
func (x *Exchange) Object(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, yaml.Unmarshal(x.Body, &m), "answer %d: %s", x.Code(), x.Body)
	return m
}

// Problem decodes a ProblemDetails answer.
func (x *Exchange) Problem(t testing.TB) nbi.ProblemDetails {
	t.Helper()
	var p nbi.ProblemDetails
	require.NoError(t, yaml.Unmarshal(x.Body, &p), "answer %d: %s", x.Code(), x.Body)
	return p
}

// Do sends a request to the real listener and checks the answer against the reference. headers are
// name/value pairs; a body defaults to Content-Type application/json.
func (e *Env) Do(method, path string, body []byte, headers ...string) *Exchange {
	e.T.Helper()
	return DoRequest(e.T, e.Client, e.Base, method, path, body, headers...)
}

// DoRequest sends a request to base and checks the answer against the provisioning reference.
func DoRequest(t testing.TB, client *http.Client, base, method, path string, body []byte, headers ...string) *Exchange {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, rd)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", query.MediaJSON)
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
	x := &Exchange{Req: req, Resp: resp, Body: data}
	CheckAgainstReference(t, x, body)
	return x
}

// JSONBody is v as JSON.
func JSONBody(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// RequestBody is a valid ProvisioningRequestData for id.
func RequestBody(id string) map[string]any {
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

// CreateDirect writes a request straight to the API server (as kubectl would), not through the NBI.
func (e *Env) CreateDirect(id string, spec map[string]any, finalizers ...string) *unstructured.Unstructured {
	e.T.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.APIVersion,
		"kind":       v1alpha1.Kind,
		"metadata":   map[string]any{"name": id},
		"spec":       spec,
	}}
	if len(finalizers) > 0 {
		u.SetFinalizers(finalizers)
	}
	created, err := e.Admin.Resource(v1alpha1.GVR).Create(context.Background(), u, metav1.CreateOptions{})
	require.NoError(e.T, err)
	return created
}

// SetStatus writes status.provisioningStatus (and the resource set) through the status subresource.
func (e *Env) SetStatus(id string, status map[string]any) *unstructured.Unstructured {
	e.T.Helper()
	ctx := context.Background()
	u, err := e.Admin.Resource(v1alpha1.GVR).Get(ctx, id, metav1.GetOptions{})
	require.NoError(e.T, err)
	u.Object["status"] = status
	out, err := e.Admin.Resource(v1alpha1.GVR).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	require.NoError(e.T, err)
	return out
}

// Eventually polls the named GET until cond holds (the informer follows the API server a moment later).
func (e *Env) Eventually(path string, cond func(*Exchange) bool, what string) *Exchange {
	e.T.Helper()
	return e.EventuallyAs("", path, cond, what)
}

// EventuallyAs is Eventually with a bearer token ("" for none): RBAC follows a moment later, too.
// Polled on the test's goroutine; on timeout the last answer is shown.
func (e *Env) EventuallyAs(token, path string, cond func(*Exchange) bool, what string) *Exchange {
	e.T.Helper()
	var headers []string
	if token != "" {
		headers = Bearer(token)
	}
	var x *Exchange
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) {
			x = e.Do(http.MethodGet, path, nil, headers...)
			return cond(x), nil
		})
	if err != nil {
		e.T.Fatalf("%s never happened; last answer %d: %s", what, x.Code(), x.Body)
	}
	return x
}

// WaitCached polls until the request id is in the cache.
func (e *Env) WaitCached(id string) *Exchange {
	e.T.Helper()
	return e.Eventually(NamedPath(id), func(x *Exchange) bool { return x.Code() == http.StatusOK }, id+" in the cache")
}

// SimpleSpec is a minimal spec naming cluster.
func SimpleSpec(cluster string) map[string]any {
	return map[string]any{
		"templateName":       "nephio-workload-cluster",
		"templateVersion":    "v3.0.0",
		"templateParameters": map[string]any{"clusterName": cluster},
	}
}

// IsNotFound is apierrors.IsNotFound.
func IsNotFound(err error) bool { return apierrors.IsNotFound(err) }

// Bearer is the Authorization header of token, as headers of Do.
func Bearer(token string) []string { return []string{"Authorization", "Bearer " + token} }

// Status is a condition of Eventually: the answer's code is code.
func Status(code int) func(*Exchange) bool { return func(x *Exchange) bool { return x.Code() == code } }

// RequireNoSecretsLogged checks that no log line carries any of the tokens.
func (e *Env) RequireNoSecretsLogged(secrets ...string) {
	e.T.Helper()
	for _, entry := range e.Logs.All() {
		line := entry.Message + " " + fmt.Sprint(entry.ContextMap())
		for _, s := range secrets {
			require.NotContains(e.T, line, s, "a token was logged")
		}
	}
}

// Items decodes a JSON array answer (the inventory's lists).
func (x *Exchange) Items(t testing.TB) []map[string]any {
	t.Helper()
	var l []map[string]any
	require.NoError(t, json.Unmarshal(x.Body, &l), "answer %d: %s", x.Code(), x.Body)
	return l
}

// WithKubernetesAuth is a Config tweak: callers authenticated and authorised by the API server.
func WithKubernetesAuth(c *nbi.Config) { c.Auth = nbi.AuthKubernetes }

// Decode decodes a JSON or YAML answer into a T.
func Decode[T any](t testing.TB, x *Exchange) T {
	t.Helper()
	var v T
	require.NoError(t, yaml.Unmarshal(x.Body, &v), "answer %d: %s", x.Code(), x.Body)
	return v
}
