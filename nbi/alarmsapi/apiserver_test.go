package alarmsapi

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"

	"github.com/o2ims-operator/o2ims-operator/subscriptions/smo"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// The alarm subscriptions' GETs — the list and one — are answered from a cache of their ConfigMaps
// (cmstore): not one request reaches the real API server during them, counted at the stores' client
// transport. The creation and the deletion go to the API server and are read back at once by this
// replica. (The alarms and the configuration are still read from the API server: not cached yet.)
func TestNBIGetsMakeNoAPIServerRequest(t *testing.T) {
	e := newEnv(t)
	rec := &kubeapi.Recorder{}
	cfg := e.Kapi.AdminConfig()
	cfg.WrapTransport = rec.Wrap
	e.kube = kubernetes.NewForConfigOrDie(cfg)
	e.restart()
	recv := smo.New()
	t.Cleanup(recv.Close)

	id := e.subscribe(recv.URL(), "")
	require.NotEmpty(t, rec.Writes("/configmaps"), "the writes go to the API server")

	// The first read of a process starts the caches (one list and one watch each); every GET after it,
	// the second round here, costs nothing.
	for round := 1; round <= 2; round++ {
		before := rec.Requests()
		for _, path := range []string{subsPath, subsPath + "/" + id} {
			x := e.get(path)
			require.Equal(t, http.StatusOK, x.Code(), "%s: %s", path, x.Body)
			if path == subsPath+"/"+id {
				assert.Equal(t, id, x.Object(t)["alarmSubscriptionId"], "the writer reads its own subscription")
			}
		}
		if round == 2 {
			assert.Equal(t, before, rec.Requests(), "NBI GETs reached the API server")
		}
	}

	x := e.send(http.MethodDelete, subsPath+"/"+id, nil, "")
	require.Equal(t, http.StatusOK, x.Code(), string(x.Body))
	assert.Equal(t, http.StatusNotFound, e.get(subsPath+"/"+id).Code(), "the deleter reads its own deletion")
}
