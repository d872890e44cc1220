package nbitest

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
	"k8s.io/client-go/kubernetes"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/nbi"
)

// MemStore is an in-memory Store for tests that do not need the API server (paging, benchmarks, faults).
type MemStore struct {
	Mu      sync.Mutex
	objs    map[string]*unstructured.Unstructured
	rev     uint64 // moves on every put and remove: a RevisionedStore
	Err     error
	Panic   bool
	Block   chan struct{} // List waits for it when set (a request in flight)
	Entered chan struct{}
	// Listed, when set, runs once after List has taken its snapshot and before it answers: a change
	// landing between the two.
	Listed func()
}

// NewMemStore is a MemStore holding objs.
func NewMemStore(objs ...*unstructured.Unstructured) *MemStore {
	s := &MemStore{objs: map[string]*unstructured.Unstructured{}}
	for _, o := range objs {
		s.Put(o)
	}
	return s
}

// Put stores o as a new resourceVersion.
func (s *MemStore) Put(o *unstructured.Unstructured) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	s.rev++
	// As the API server does, every write is a new resourceVersion (the NBI keys encodings by it).
	o = o.DeepCopy()
	o.SetResourceVersion(strconv.FormatUint(s.rev, 10))
	s.objs[o.GetName()] = o
}

// Remove deletes the named object.
func (s *MemStore) Remove(name string) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	delete(s.objs, name)
	s.rev++
}

func (s *MemStore) Revision() (uint64, error) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	return s.rev, s.Err
}

// PlainStore hides a store's Revision: every list sorts afresh.
type PlainStore struct{ nbi.Store }

func (s *MemStore) List() ([]*unstructured.Unstructured, error) {
	s.Mu.Lock()
	block, entered := s.Block, s.Entered
	s.Mu.Unlock()
	if entered != nil {
		close(entered)
	}
	if block != nil {
		<-block
	}
	s.Mu.Lock()
	if s.Panic {
		s.Mu.Unlock()
		panic("the store broke in a way nobody foresaw")
	}
	if s.Err != nil {
		s.Mu.Unlock()
		return nil, s.Err
	}
	out := make([]*unstructured.Unstructured, 0, len(s.objs))
	for _, o := range s.objs {
		out = append(out, o)
	}
	listed := s.Listed
	s.Listed = nil
	s.Mu.Unlock()
	if listed != nil {
		listed()
	}
	return out, nil // in a map's order: the API sorts
}

func (s *MemStore) Get(name string) (*unstructured.Unstructured, bool, error) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	if s.Err != nil {
		return nil, false, s.Err
	}
	o, ok := s.objs[name]
	if !ok {
		return nil, false, nil
	}
	return o.DeepCopy(), true, nil
}

// PRObject builds a ProvisioningRequest as the informer would hold it.
func PRObject(name string, spec map[string]any, status map[string]any) *unstructured.Unstructured {
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

// Stub is a northbound API on a real listener without the test API server.
type Stub struct {
	Srv    *nbi.Server
	Base   string
	Logs   *observer.ObservedLogs
	Reg    *prometheus.Registry
	Client *http.Client
}

// StartStub serves apis (kube and tweak as nbi.New and its Config take them) on a loopback port.
func StartStub(t testing.TB, kube kubernetes.Interface, apis []nbi.API, tweak ...func(*nbi.Config)) *Stub {
	t.Helper()
	cfg := nbi.Config{Host: "127.0.0.1", Port: 0}
	for _, f := range tweak {
		f(&cfg)
	}
	core, logs := observer.New(zapcore.DebugLevel)
	reg := prometheus.NewRegistry()
	srv, err := nbi.New(cfg, kube, zap.New(core), reg, apis...)
	require.NoError(t, err)
	require.NoError(t, srv.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return &Stub{Srv: srv, Base: "http://" + srv.Addr(), Logs: logs, Reg: reg, Client: &http.Client{Transport: &http.Transport{Proxy: nil}}}
}

// Do sends a request to the stub and checks the answer against the provisioning reference.
func (s *Stub) Do(t testing.TB, method, path string, body []byte, headers ...string) *Exchange {
	t.Helper()
	return DoRequest(t, s.Client, s.Base, method, path, body, headers...)
}

// NopLogger logs nothing.
func NopLogger() *zap.Logger { return zap.NewNop() }
