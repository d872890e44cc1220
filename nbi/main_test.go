package nbi_test

import (
	"os"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/provisioning"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
)

// The server's tests drive it through the provisioning API (nbi/provisioning), served as the operator
// serves it.

func TestMain(m *testing.M) {
	// Tests share one real API server (RunMain starts none for a fuzzing run).
	os.Exit(kubeapi.RunMain(m, kubeapi.DefaultCRDs))
}

const apiRoot = provisioning.Root

// newEnv starts the server with the provisioning API for the test; tweak adjusts its Config.
func newEnv(t *testing.T, tweak ...func(*nbi.Config)) *nbitest.Env {
	t.Helper()
	return nbitest.NewEnv(t, func(e *nbitest.Env) []nbi.API { return []nbi.API{mustProvisioning(t, e.Store, e.Dyn)} }, tweak...)
}

// startStub serves the provisioning API over store without the test API server.
func startStub(t testing.TB, store nbi.Store, dyn dynamic.Interface, kube kubernetes.Interface, tweak ...func(*nbi.Config)) *nbitest.Stub {
	t.Helper()
	return nbitest.StartStub(t, kube, []nbi.API{mustProvisioning(t, store, dyn)}, tweak...)
}

func mustProvisioning(t testing.TB, store nbi.Store, dyn dynamic.Interface) nbi.API {
	t.Helper()
	a, err := provisioning.New(store, dyn, nil)
	require.NoError(t, err)
	return a
}

// newServer is the server with the provisioning API over store (nbi.New's other arguments as it takes
// them).
func newServer(cfg nbi.Config, store nbi.Store, dyn dynamic.Interface, kube kubernetes.Interface, log *zap.Logger, reg prometheus.Registerer) (*nbi.Server, error) {
	a, err := provisioning.New(store, dyn, nil)
	if err != nil {
		return nil, err
	}
	return nbi.New(cfg, kube, log, reg, a)
}
