package performanceapi

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"

	"github.com/o2ims-operator/o2ims-operator/performance"
	"github.com/o2ims-operator/o2ims-operator/subscriptions/smo"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// gated restarts e as a replica whose client's requests are recorded and whose watches (its caches'
// informers) the test can hold.
func (e *env) gated() (*kubeapi.Recorder, *kubeapi.WatchGate) {
	kube, rec, gate := kubeapi.GatedClient(e.T, e.Kapi.AdminConfig())
	e.kube = kube
	e.restart()
	return rec, gate
}

// The performance API's GETs — the jobs (list and one), the configuration, the subscriptions (list and
// one) — are answered from caches of their ConfigMaps (cmstore): not one request reaches the real API
// server during them, counted at the stores' client transport; the creations went to the API server
// and are read back at once.
func TestNBIGetsMakeNoAPIServerRequest(t *testing.T) {
	e := newEnv(t)
	rec, _ := e.gated()
	recv := smo.New()
	t.Cleanup(recv.Close)

	subs := v2 + "/performanceSubscriptions"
	x := e.post(subs, fmt.Sprintf(`{"callback": %q}`, recv.URL()))
	require.Equal(t, http.StatusCreated, x.Code(), string(x.Body))
	subID := x.Object(t)["performanceSubscriptionId"].(string)
	x = e.post(v2+"/measurementJobs", memJob)
	require.Equal(t, http.StatusCreated, x.Code(), string(x.Body))
	jobID := x.Object(t)["performanceMeasurementJobId"].(string)
	require.NotEmpty(t, rec.Writes("/configmaps"), "the writes go to the API server")

	// The first read of a process starts the caches (one list and one watch each); every GET after it,
	// the second round here, costs nothing.
	for round := 1; round <= 2; round++ {
		before := rec.Requests()
		for _, path := range []string{subs, subs + "/" + subID, v2 + "/measurementJobs", v2 + "/measurementJobs/" + jobID,
			v2 + "/performanceServiceConfiguration"} {
			x := e.get(path)
			require.Equal(t, http.StatusOK, x.Code(), "%s: %s", path, x.Body)
		}
		if round == 2 {
			assert.Equal(t, before, rec.Requests(), "NBI GETs reached the API server")
		}
	}
}

// A creation and a deletion are answered by the next GET of the replica that made them, though its
// cache has not seen them yet (its watch held here).
func TestAWriteIsReadBackAtOnce(t *testing.T) {
	e := newEnv(t)
	_, gate := e.gated()
	require.Empty(t, e.get(v2+"/measurementJobs").Items(t)) // the cache synced
	gate.Hold()

	x := e.post(v2+"/measurementJobs", memJob)
	require.Equal(t, http.StatusCreated, x.Code(), string(x.Body))
	id := x.Object(t)["performanceMeasurementJobId"].(string)
	assert.Equal(t, "smo-7", e.job(id)["consumerPerformanceJobId"], "the creator reads its job")
	require.Equal(t, http.StatusNoContent, e.send(http.MethodDelete, v2+"/measurementJobs/"+id, "", "").Code())
	assert.Equal(t, http.StatusNotFound, e.get(v2+"/measurementJobs/"+id).Code(), "the deleter reads its deletion")
}

// A replica whose cache is behind another's write (its watch held here) writes on what it read: the API
// server refuses that write, and the retry reads the server's state, so both jobs stand.
func TestAWriteOnAStaleCacheIsMadeAgainOnTheServersState(t *testing.T) {
	e := newEnv(t)
	rec, gate := e.gated()
	x := e.post(v2+"/measurementJobs", memJob)
	require.Equal(t, http.StatusCreated, x.Code(), string(x.Body))
	first := x.Object(t)["performanceMeasurementJobId"].(string)
	gate.Hold()
	other := performance.NewStore(kubernetes.NewForConfigOrDie(e.Kapi.AdminConfig()), e.namespace) // another replica
	t.Cleanup(other.Close)
	ctx := context.Background()
	_, err := other.Update(ctx, func(s *performance.State) (bool, error) {
		j, _ := s.Get(first)
		s.Delete(first)
		j.ID = "00000000-0000-4000-8000-000000000002"
		s.Put(j)
		return true, nil
	})
	require.NoError(t, err)

	path := "/configmaps/" + performance.StoreName
	puts, gets := rec.Count(http.MethodPut, path), rec.Count(http.MethodGet, path)
	s, err := e.store.Update(ctx, func(s *performance.State) (bool, error) { s.Config.Extensions["by"] = "here"; return true, nil })
	require.NoError(t, err)
	assert.Equal(t, puts+2, rec.Count(http.MethodPut, path), "the write on the cache's copy was refused, then made again")
	assert.Equal(t, gets+1, rec.Count(http.MethodGet, path), "on the server's state, read once")
	_, found := s.Get(first)
	assert.False(t, found, "the other replica's change stands")
	assert.Equal(t, "smo-7", e.job("00000000-0000-4000-8000-000000000002")["consumerPerformanceJobId"], "read here at once")
}
