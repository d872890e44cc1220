package netbox_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/netbox/netboxsim"
)

// up reads o2ims_netbox_up (found false when absent).
func (e *env) up() (float64, bool) {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	require.NoError(e.t, err)
	for _, mf := range mfs {
		if mf.GetName() == "o2ims_netbox_up" && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// NetBox reachability as last seen: 0 before any call, 1 after an answer, 0 after the 5xx answers of a
// failed read, 1 again once it answers, 0 when nothing listens.
func TestNetBoxUpFollowsTheLastAttempt(t *testing.T) {
	e := newEnv(t)
	id := e.addHost("h1", nil)
	v, found := e.up()
	require.True(t, found, "o2ims_netbox_up exists before the first call")
	assert.Zero(t, v)

	_, err := e.client.GetDevice(ctx(t), id)
	require.NoError(t, err)
	v, _ = e.up()
	assert.Equal(t, 1.0, v, "answered")

	e.sim.InjectFault(netboxsim.Fault{Method: "GET", Route: netboxsim.RouteDevice, Status: 503, Count: 100})
	_, err = e.client.GetDevice(ctx(t), id)
	require.Error(t, err)
	v, _ = e.up()
	assert.Zero(t, v, "5xx")

	e.sim.ClearFaults()
	_, err = e.client.GetDevice(ctx(t), 9999) // a 404 is an answer of a working NetBox
	require.Error(t, err)
	v, _ = e.up()
	assert.Equal(t, 1.0, v, "a 404 is an answer")

	e.sim.Close()
	_, err = e.client.GetDevice(ctx(t), id)
	require.Error(t, err)
	v, _ = e.up()
	assert.Zero(t, v, "nothing listens")
}
