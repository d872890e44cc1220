package provisioning

import (
	"encoding/base64"
	"os"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
)

func TestMain(m *testing.M) {
	// Tests share one real API server (RunMain starts none for a fuzzing run).
	os.Exit(kubeapi.RunMain(m, kubeapi.DefaultCRDs))
}

// env is one test's provisioning API on a real listener (tests/nbitest), writing to the shared real
// API server.
type env = nbitest.Env

// newEnv starts the provisioning API for the test; tweak adjusts its Config.
func newEnv(t *testing.T, tweak ...func(*nbi.Config)) *env {
	t.Helper()
	return nbitest.NewEnv(t, func(e *nbitest.Env) []nbi.API { return []nbi.API{mustNew(t, e.Store, e.Dyn)} }, tweak...)
}

// startStub serves the provisioning API over store without the test API server.
func startStub(t testing.TB, store nbi.Store, dyn dynamic.Interface, kube kubernetes.Interface, tweak ...func(*nbi.Config)) *nbitest.Stub {
	t.Helper()
	return nbitest.StartStub(t, kube, []nbi.API{mustNew(t, store, dyn)}, tweak...)
}

func mustNew(t testing.TB, store nbi.Store, dyn dynamic.Interface) *API {
	t.Helper()
	a, err := New(store, dyn, nil)
	require.NoError(t, err)
	return a
}

// info decodes an answer's ProvisioningRequestInfo.
func info(t testing.TB, x *nbitest.Exchange) ProvisioningRequestInfo {
	t.Helper()
	return nbitest.Decode[ProvisioningRequestInfo](t, x)
}

// list decodes an answer's ProvisioningRequestList.
func list(t testing.TB, x *nbitest.Exchange) ProvisioningRequestList {
	t.Helper()
	return nbitest.Decode[ProvisioningRequestList](t, x)
}

// newServer is the NBI serving the provisioning API alone, as the operator builds it without an
// inventory (nbi.New's other arguments as it takes them).
func newServer(cfg nbi.Config, store nbi.Store, dyn dynamic.Interface, kube kubernetes.Interface, log *zap.Logger, reg prometheus.Registerer) (*nbi.Server, error) {
	a, err := New(store, dyn, nil)
	if err != nil {
		return nil, err
	}
	return nbi.New(cfg, kube, log, reg, a)
}

// encodeMarker is the marker a page hands out after lastID (base64url, as nbi's list pipeline writes it).
func encodeMarker(lastID string) string { return base64.RawURLEncoding.EncodeToString([]byte(lastID)) }
