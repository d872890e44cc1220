package nbi

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
)

// memStore is an in-memory Store for tests that do not need the API server (paging, benchmarks, faults).
type memStore struct {
	mu      sync.Mutex
	objs    map[string]*unstructured.Unstructured
	rev     uint64 // moves on every put and remove: a RevisionedStore
	err     error
	panic   bool
	block   chan struct{} // List waits for it when set (a request in flight)
	entered chan struct{}
	// listed, when set, runs once after List has taken its snapshot and before it answers: a change
	// landing between the two.
	listed func()
}

func newMemStore(objs ...*unstructured.Unstructured) *memStore {
	s := &memStore{objs: map[string]*unstructured.Unstructured{}}
	for _, o := range objs {
		s.put(o)
	}
	return s
}

func (s *memStore) put(o *unstructured.Unstructured) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rev++
	// As the API server does, every write is a new resourceVersion (the NBI keys encodings by it).
	o = o.DeepCopy()
	o.SetResourceVersion(strconv.FormatUint(s.rev, 10))
	s.objs[o.GetName()] = o
}

func (s *memStore) remove(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.objs, name)
	s.rev++
}

func (s *memStore) Revision() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rev, s.err
}

// plainStore hides a store's Revision: every list sorts afresh.
type plainStore struct{ Store }

func (s *memStore) List() ([]*unstructured.Unstructured, error) {
	s.mu.Lock()
	block, entered := s.block, s.entered
	s.mu.Unlock()
	if entered != nil {
		close(entered)
	}
	if block != nil {
		<-block
	}
	s.mu.Lock()
	if s.panic {
		s.mu.Unlock()
		panic("the store broke in a way nobody foresaw")
	}
	if s.err != nil {
		s.mu.Unlock()
		return nil, s.err
	}
	out := make([]*unstructured.Unstructured, 0, len(s.objs))
	for _, o := range s.objs {
		out = append(out, o)
	}
	listed := s.listed
	s.listed = nil
	s.mu.Unlock()
	if listed != nil {
		listed()
	}
	return out, nil // in a map's order: the API sorts
}

func (s *memStore) Get(name string) (*unstructured.Unstructured, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, false, s.err
	}
	o, ok := s.objs[name]
	if !ok {
		return nil, false, nil
	}
	return o.DeepCopy(), true, nil
}

// prObject builds a ProvisioningRequest as the informer would hold it.
func prObject(name string, spec map[string]any, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.APIVersion,
		"kind":       v1alpha1.Kind,
		"metadata":   map[string]any{"name": name},
		"spec":       spec,
	}}
	if status != nil {
		u.Object["status"] = status
	}
	u.SetUID(types.UID("uid-" + name))
	u.SetCreationTimestamp(metav1.NewTime(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)))
	return u
}

// stub is a northbound API on a real listener without the test API server.
type stub struct {
	srv    *Server
	base   string
	logs   *observer.ObservedLogs
	reg    *prometheus.Registry
	client *http.Client
}

func startStub(t testing.TB, store Store, dyn dynamic.Interface, kube kubernetes.Interface, tweak ...func(*Config)) *stub {
	t.Helper()
	cfg := Config{Host: "127.0.0.1", Port: 0}
	for _, f := range tweak {
		f(&cfg)
	}
	core, logs := observer.New(zapcore.DebugLevel)
	reg := prometheus.NewRegistry()
	srv, err := New(cfg, store, dyn, kube, zap.New(core), reg)
	require.NoError(t, err)
	require.NoError(t, srv.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return &stub{srv: srv, base: "http://" + srv.Addr(), logs: logs, reg: reg, client: &http.Client{Transport: &http.Transport{Proxy: nil}}}
}

func (s *stub) do(t testing.TB, method, path string, body []byte, headers ...string) *exchange {
	t.Helper()
	return doRequest(t, s.client, s.base, method, path, body, headers...)
}

func nopLogger() *zap.Logger { return zap.NewNop() }
