package alarmsapi

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"

	"github.com/o2ims-operator/o2ims-operator/alarms"
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

// raise raises NetBoxUnreachable (NetBox answers 503) and answers its alarmEventRecordId.
func (e *env) raise() string {
	e.T.Helper()
	e.sim.SetOutage(http.StatusServiceUnavailable)
	require.Error(e.T, e.refresh())
	e.evaluate()
	return e.only(alarms.NetBoxUnreachable)["alarmEventRecordId"].(string)
}

// The alarms API's GETs — the alarms (list and one, v1 and v2), the configuration, the subscriptions
// (list and one) — are answered from caches of their ConfigMaps (cmstore): not one request reaches the
// real API server during them, counted at the stores' client transport. The writes go to the API
// server and are read back at once by this replica.
func TestNBIGetsMakeNoAPIServerRequest(t *testing.T) {
	e := newEnv(t)
	rec, _ := e.gated()
	recv := smo.New()
	t.Cleanup(recv.Close)

	id := e.subscribe(recv.URL(), "")
	alarm := e.raise()
	require.NotEmpty(t, rec.Writes("/configmaps"), "the writes go to the API server")
	paths := []string{subsPath, subsPath + "/" + id, v1 + "/alarms", v1 + "/alarms/" + alarm, v1 + "/alarmServiceConfiguration"}
	v2 := []string{Root + "/v2/alarms", Root + "/v2/alarms/" + alarm} // 2.0.0's shapes: not the v1 reference's

	// The first read of a process starts the caches (one list and one watch each); every GET after it,
	// the second round here, costs nothing.
	for round := 1; round <= 2; round++ {
		before := rec.Requests()
		for _, path := range paths {
			x := e.get(path)
			require.Equal(t, http.StatusOK, x.Code(), "%s: %s", path, x.Body)
		}
		for _, path := range v2 {
			code, body := e.getRaw(path)
			require.Equal(t, http.StatusOK, code, "%s: %s", path, body)
		}
		if round == 2 {
			assert.Equal(t, before, rec.Requests(), "NBI GETs reached the API server")
		}
	}
	assert.Equal(t, id, e.get(subsPath + "/" + id).Object(t)["alarmSubscriptionId"], "the writer reads its own subscription")

	x := e.send(http.MethodDelete, subsPath+"/"+id, nil, "")
	require.Equal(t, http.StatusOK, x.Code(), string(x.Body))
	assert.Equal(t, http.StatusNotFound, e.get(subsPath+"/"+id).Code(), "the deleter reads its own deletion")
}

// A write is answered by the next GET of the replica that made it, though its cache has not seen the
// write yet (its watch held here): an acknowledgement, a configuration.
func TestAWriteIsReadBackAtOnce(t *testing.T) {
	e := newEnv(t)
	_, gate := e.gated()
	alarm := e.raise() // and the cache synced: the raise's GET
	gate.Hold()

	e.acknowledge(alarm) // PATCH, then GET: acknowledged
	x := e.send(http.MethodPut, v1+"/alarmServiceConfiguration", []byte(`{"retentionPeriod": 5, "extensions": {"by": "smo"}}`), "application/json")
	require.Equal(t, http.StatusOK, x.Code(), string(x.Body))
	x = e.get(v1 + "/alarmServiceConfiguration")
	require.JSONEq(t, `{"retentionPeriod": 5, "extensions": {"by": "smo"}}`, string(x.Body))
}

// A replica whose cache is behind another's write (its watch held here) writes on what it read: the API
// server refuses that write, and the retry reads the server's state, so both changes stand.
func TestAWriteOnAStaleCacheIsMadeAgainOnTheServersState(t *testing.T) {
	e := newEnv(t)
	_, gate := e.gated()
	ctx := context.Background()
	_, err := e.store.Update(ctx, func(s *alarms.State) (bool, error) { s.Config.Extensions["a"] = "first"; return true, nil })
	require.NoError(t, err)
	gate.Hold()
	other := alarms.NewStore(kubernetes.NewForConfigOrDie(e.Kapi.AdminConfig()), e.namespace) // another replica
	t.Cleanup(other.Close)
	_, err = other.Update(ctx, func(o *alarms.State) (bool, error) { o.Config.RetentionPeriod = 9; return true, nil })
	require.NoError(t, err)

	attempts := 0
	s, err := e.store.Update(ctx, func(s *alarms.State) (bool, error) {
		attempts++
		s.Config.Extensions["b"] = "second"
		return true, nil
	})
	require.NoError(t, err)
	assert.Equal(t, 2, attempts, "the write on the cache's copy conflicted, the one on the server's did not")
	assert.Equal(t, 9, s.Config.RetentionPeriod, "the other replica's change stands")
	x := e.get(v1 + "/alarmServiceConfiguration") // the cache still held
	require.JSONEq(t, `{"retentionPeriod": 9, "extensions": {"a": "first", "b": "second"}}`, string(x.Body))
}
