package netbox_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/netbox"
	"github.com/o2ims-operator/o2ims-operator/tests/promtest"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
)

// up reads o2ims_netbox_up (found false when absent).
func (e *env) up() (float64, bool) {
	e.t.Helper()
	return promtest.Gather(e.t, e.reg).Value("o2ims_netbox_up", nil)
}

// NetBox reachability as last seen: 0 before any call, 1 after an answer, 0 after the 5xx answers of a
// failed read, 1 again once it answers, 0 when nothing listens.
func TestNetBoxUpFollowsTheLastAttempt(t *testing.T) {
	e := newEnv(t)
	id := e.addHost("h1", nil)
	v, found := e.up()
	require.True(t, found, "o2ims_netbox_up exists before the first call")
	assert.Zero(t, v)

	_, err := e.client.Claims.GetDevice(ctx(t), id)
	require.NoError(t, err)
	v, _ = e.up()
	assert.Equal(t, 1.0, v, "answered")

	e.sim.InjectFault(netboxsim.Fault{Method: "GET", Route: netboxsim.RouteDevice, Status: 503, Count: 100})
	_, err = e.client.Claims.GetDevice(ctx(t), id)
	require.Error(t, err)
	v, _ = e.up()
	assert.Zero(t, v, "5xx")

	e.sim.ClearFaults()
	_, err = e.client.Claims.GetDevice(ctx(t), 9999) // a 404 is an answer of a working NetBox
	require.Error(t, err)
	v, _ = e.up()
	assert.Equal(t, 1.0, v, "a 404 is an answer")

	e.sim.Close()
	_, err = e.client.Claims.GetDevice(ctx(t), id)
	require.Error(t, err)
	v, _ = e.up()
	assert.Zero(t, v, "nothing listens")
}

// A NetBox last seen down is probed by the scrape (at most every 30 s; here at once), so o2ims_netbox_up
// recovers without a request that needs NetBox; one seen up is never probed.
func TestNetBoxUpRecoversThroughTheScrapeProbe(t *testing.T) {
	e := newEnv(t)
	id := e.addHost("h1", nil)
	netbox.SetDownProbeIntervalForTest(e.client, 0)
	e.sim.InjectFault(netboxsim.Fault{Method: "GET", Route: netboxsim.RouteDevice, Status: 503, Count: 100})
	_, err := e.client.Claims.GetDevice(ctx(t), id)
	require.Error(t, err)
	e.sim.ClearFaults()
	before := e.sim.Calls("GET", netboxsim.RouteStatus)
	require.Eventually(t, func() bool { v, _ := e.up(); return v == 1 }, 10*time.Second, 20*time.Millisecond,
		"o2ims_netbox_up never recovered through a scrape")
	probes := e.sim.Calls("GET", netboxsim.RouteStatus) - before
	assert.Positive(t, probes, "the recovery came from a status probe")
	for i := 0; i < 5; i++ {
		e.up()
	}
	time.Sleep(100 * time.Millisecond)
	assert.Equal(t, before+probes, e.sim.Calls("GET", netboxsim.RouteStatus), "no probe while NetBox is up")
}
