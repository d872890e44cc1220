package app

import (
	"context"
	"errors"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/framework"
	"github.com/o2ims-operator/o2ims-operator/nbi"
)

// cacheStore serves the NBI's reads from the operator's informer cache; until the cache has synced it
// refuses (503) rather than answer an empty list.
type cacheStore struct{ op *framework.Operator }

var _ nbi.RevisionedStore = cacheStore{}

var errNotSynced = errors.New("the operator's cache of provisioning requests is not synced yet")

func (s cacheStore) List() ([]*unstructured.Unstructured, error) {
	if !s.op.Ready() {
		return nil, errNotSynced
	}
	return s.op.Cache().List(v1alpha1.GVR, "")
}

// Revision lets the NBI keep a list's id order between pages until the cache changes; like List, it
// refuses while the cache is not synced (at start, or once stopping), so no kept order is answered then.
func (s cacheStore) Revision() (uint64, error) {
	if !s.op.Ready() {
		return 0, errNotSynced
	}
	return s.op.Cache().Revision(v1alpha1.GVR)
}

func (s cacheStore) Get(name string) (*unstructured.Unstructured, bool, error) {
	if !s.op.Ready() {
		return nil, false, errNotSynced
	}
	return s.op.Cache().Peek(v1alpha1.GVR, "", name) // read-only, as nbi.Store allows
}

// northbound is the NBI as a runnable of every replica: Start binds its listener and serves until the
// operator stops (Start then returns; the listener drains in the cleanup activity stop_northbound, once
// the passes have stopped, within the one stop deadline). A port in use, or the serving loop ending by
// itself, is Start's error, which stops the operator: exit non-zero and the pod is restarted.
type northbound struct {
	srv *nbi.Server
	log *zap.Logger
}

func (n northbound) NeedLeaderElection() bool { return false }

func (n northbound) Start(ctx context.Context) error {
	if err := n.srv.Start(); err != nil {
		return err
	}
	n.log.Info("northbound API listening", zap.String("address", n.srv.Addr()))
	select {
	case <-ctx.Done():
		return nil
	case err := <-n.srv.Stopped():
		return err // says so in one line already
	}
}
