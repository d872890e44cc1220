package netbox_test

import (
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/netbox"
)

// A client whose write fence refuses (the operator's replica does not lead, or no longer does) sends no
// write at all: a claim, a quarantine, a release and a quarantine of a claimed host are refused unsent
// (KindFenced: nothing landed, not retryable) and never reach NetBox — the simulator sees only the reads,
// which go on. Once the fence allows, the same claim lands: the fence, not the device, refused it.
func TestAFencedClientWritesNothing(t *testing.T) {
	var refuse atomic.Bool
	refuse.Store(true)
	notLeader := errors.New("not the leader (test)")
	e := newEnv(t, withConfig(func(c *netbox.Config) {
		c.WriteFence = func() error {
			if refuse.Load() {
				return notLeader
			}
			return nil
		}
	}))
	free := e.addHost("free", nil)
	claimed := e.addHost("claimed", nil)
	require.NoError(t, e.sim.SetStatus(claimed, "active"))
	require.NoError(t, e.sim.SetCustom(claimed, "o2ims_request_uid", uid(2)))
	e.sim.LogCalls(true)

	d, err := e.client.Claims.GetDevice(ctx(t), free)
	require.NoError(t, err, "a read is fenced")
	_, err = e.client.Claims.Claim(ctx(t), d, uid(1))
	assertFenced(t, err, notLeader, "claim")
	assertFenced(t, e.client.Claims.Quarantine(ctx(t), d, netbox.ReasonRegistrationFailed, "test"), notLeader, "quarantine")
	_, err = e.client.Claims.Release(ctx(t), claimed, uid(2))
	assertFenced(t, err, notLeader, "release")
	_, err = e.client.Claims.QuarantineClaimed(ctx(t), claimed, uid(2), netbox.ReasonRegistrationFailed, "test")
	assertFenced(t, err, notLeader, "quarantine of a claimed host")

	for _, c := range e.sim.CallLog() {
		assert.Equal(t, http.MethodGet, c.Method, "a fenced client sent %s %s", c.Method, c.Route)
	}
	assert.Empty(t, e.sim.PatchLog(), "a fenced write reached NetBox")
	got, _ := e.sim.Device(free)
	assert.Equal(t, "staged", got.Status)
	got, _ = e.sim.Device(claimed)
	assert.Equal(t, uid(2), got.Custom["o2ims_request_uid"])

	refuse.Store(false)
	res, err := e.client.Claims.Claim(ctx(t), d, uid(1))
	require.NoError(t, err)
	assert.Equal(t, netbox.Claimed, res)
	assert.Len(t, e.sim.PatchLog(), 1)
}

func assertFenced(t *testing.T, err, why error, what string) {
	t.Helper()
	var e *netbox.Error
	require.True(t, errors.As(err, &e), "%s: %v", what, err)
	assert.Equal(t, netbox.KindFenced, e.Kind, "%s: %v", what, err)
	assert.False(t, e.MayHaveLanded, what)
	assert.False(t, e.Retryable, what)
	assert.ErrorIs(t, err, why, what)
}
