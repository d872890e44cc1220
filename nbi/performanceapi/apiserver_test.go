package performanceapi

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"

	"github.com/o2ims-operator/o2ims-operator/subscriptions/smo"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// The performance subscriptions' GETs — the list and one — are answered from a cache of their
// ConfigMaps (cmstore): not one request reaches the real API server during them, counted at the
// stores' client transport; the creation went to the API server and is read back at once. (The jobs
// and the configuration are still read from the API server: not cached yet.)
func TestNBIGetsMakeNoAPIServerRequest(t *testing.T) {
	e := newEnv(t)
	rec := &kubeapi.Recorder{}
	cfg := e.Kapi.AdminConfig()
	cfg.WrapTransport = rec.Wrap
	e.kube = kubernetes.NewForConfigOrDie(cfg)
	e.restart()
	recv := smo.New()
	t.Cleanup(recv.Close)

	subs := v2 + "/performanceSubscriptions"
	x := e.post(subs, fmt.Sprintf(`{"callback": %q}`, recv.URL()))
	require.Equal(t, http.StatusCreated, x.Code(), string(x.Body))
	subID := x.Object(t)["performanceSubscriptionId"].(string)
	require.NotEmpty(t, rec.Writes("/configmaps"), "the writes go to the API server")

	// The first read of a process starts the caches (one list and one watch each); every GET after it,
	// the second round here, costs nothing.
	for round := 1; round <= 2; round++ {
		before := rec.Requests()
		for _, path := range []string{subs, subs + "/" + subID} {
			x := e.get(path)
			require.Equal(t, http.StatusOK, x.Code(), "%s: %s", path, x.Body)
		}
		if round == 2 {
			assert.Equal(t, before, rec.Requests(), "NBI GETs reached the API server")
		}
	}
}
