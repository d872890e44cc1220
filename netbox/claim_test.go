package netbox_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/netbox"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
)

func TestClaim(t *testing.T) {
	e := newEnv(t)
	id := e.addHost("h", nil)
	d, err := e.client.Claims.GetDevice(ctx(t), id)
	require.NoError(t, err)
	etag := d.ETag

	res, err := e.client.Claims.Claim(ctx(t), d, uid(1))
	require.NoError(t, err)
	assert.Equal(t, netbox.Claimed, res)
	assert.Equal(t, netbox.StatusActive, d.Status)
	assert.Equal(t, uid(1), d.RequestUID)
	assert.NotEqual(t, etag, d.ETag, "d is refreshed from the answer")

	got, _ := e.sim.Device(id)
	assert.Equal(t, "active", got.Status)
	assert.Equal(t, uid(1), got.Custom["o2ims_request_uid"])
	log := e.sim.PatchLog()
	require.Len(t, log, 1)
	assert.Equal(t, etag, log[0].IfMatch, "ETag echoed verbatim")
	assert.Equal(t, map[string]any{"status": "active", "custom_fields": map[string]any{"o2ims_request_uid": uid(1)}}, log[0].Body)
	assert.Equal(t, 1.0, e.counter("o2ims_netbox_assignment_attempts_total", map[string]string{"result": "success"}))

	// Resume after a restart: already ours, nothing written.
	d, err = e.client.Claims.GetDevice(ctx(t), id)
	require.NoError(t, err)
	res, err = e.client.Claims.Claim(ctx(t), d, uid(1))
	require.NoError(t, err)
	assert.Equal(t, netbox.ClaimedAlready, res)
	assert.Len(t, e.sim.PatchLog(), 1)

	// Someone else's now: race lost without a write.
	res, err = e.client.Claims.Claim(ctx(t), d, uid(2))
	require.NoError(t, err)
	assert.Equal(t, netbox.RaceLost, res)
	assert.Len(t, e.sim.PatchLog(), 1)
	assert.Equal(t, 1.0, e.counter("o2ims_netbox_assignment_attempts_total", map[string]string{"result": "race"}))
}

func TestClaimPrechecks(t *testing.T) {
	e := newEnv(t)
	notPool := e.sim.AddDevice(netboxsim.Device{Custom: map[string]any{"o2ims_managed": false}})
	failed := e.sim.AddDevice(netboxsim.Device{Status: "failed", Custom: map[string]any{"o2ims_managed": true}})
	for _, id := range []int32{notPool, failed} {
		d, err := e.client.Claims.GetDevice(ctx(t), id)
		require.NoError(t, err)
		res, err := e.client.Claims.Claim(ctx(t), d, uid(1))
		require.NoError(t, err)
		assert.Equal(t, netbox.RaceLost, res)
	}
	assert.Empty(t, e.sim.PatchLog())

	free := e.addHost("h", nil)
	d, err := e.client.Claims.GetDevice(ctx(t), free)
	require.NoError(t, err)
	_, err = e.client.Claims.Claim(ctx(t), d, "")
	assert.True(t, netbox.IsKind(err, netbox.KindInvalid))
	_, err = e.client.Claims.Claim(ctx(t), d, "has space")
	assert.True(t, netbox.IsKind(err, netbox.KindInvalid))
	listed, err := e.client.Search.FindFreeHost(ctx(t), nil, nil)
	require.NoError(t, err)
	_, err = e.client.Claims.Claim(ctx(t), listed, uid(1))
	assert.True(t, netbox.IsKind(err, netbox.KindInvalid), "no ETag, no write")
	_, err = e.client.Claims.Claim(ctx(t), nil, uid(1))
	assert.True(t, netbox.IsKind(err, netbox.KindInvalid))
	assert.Empty(t, e.sim.PatchLog())

	// Staged but carrying our uid (an admin reset only the status): ours to take.
	half := e.sim.AddDevice(netboxsim.Device{Custom: map[string]any{"o2ims_managed": true, "o2ims_request_uid": uid(1)}})
	d, err = e.client.Claims.GetDevice(ctx(t), half)
	require.NoError(t, err)
	res, err := e.client.Claims.Claim(ctx(t), d, uid(1))
	require.NoError(t, err)
	assert.Equal(t, netbox.Claimed, res)
}

// 412: another operator claimed the device between our read and our write.
func TestClaimPreconditionFailedOtherWins(t *testing.T) {
	e := newEnv(t)
	id := e.addHost("h", nil)
	d, err := e.client.Claims.GetDevice(ctx(t), id)
	require.NoError(t, err)
	require.NoError(t, e.sim.SetCustom(id, "o2ims_request_uid", uid(9)))
	require.NoError(t, e.sim.SetStatus(id, "active"))

	res, err := e.client.Claims.Claim(ctx(t), d, uid(1))
	require.NoError(t, err)
	assert.Equal(t, netbox.RaceLost, res)
	log := e.sim.PatchLog()
	require.Len(t, log, 1)
	assert.Equal(t, 412, log[0].Status)
	got, _ := e.sim.Device(id)
	assert.Equal(t, uid(9), got.Custom["o2ims_request_uid"])
	assert.Equal(t, 1.0, e.counter("o2ims_netbox_assignment_attempts_total", map[string]string{"result": "race"}))
	assert.Equal(t, 1.0, e.counter("o2ims_netbox_api_errors_total", map[string]string{"type": "412"}))
}

// 412, but the re-read shows the device is ours (an earlier write of ours landed).
func TestClaimPreconditionFailedOurs(t *testing.T) {
	e := newEnv(t)
	id := e.addHost("h", nil)
	d, err := e.client.Claims.GetDevice(ctx(t), id)
	require.NoError(t, err)
	require.NoError(t, e.sim.SetCustom(id, "o2ims_request_uid", uid(1)))
	require.NoError(t, e.sim.SetStatus(id, "active"))

	res, err := e.client.Claims.Claim(ctx(t), d, uid(1))
	require.NoError(t, err)
	assert.Equal(t, netbox.Claimed, res)
	assert.Equal(t, uid(1), d.RequestUID)
}

// The answer to the PATCH is lost after NetBox committed it: the error says the
// write may have landed, it is not replayed, and the next pass finds it ours.
func TestClaimLostAnswerNotReplayed(t *testing.T) {
	e := newEnv(t)
	id := e.addHost("h", nil)
	d, err := e.client.Claims.GetDevice(ctx(t), id)
	require.NoError(t, err)
	e.sim.DropPatchAnswers(1)

	res, err := e.client.Claims.Claim(ctx(t), d, uid(1))
	require.Error(t, err)
	assert.Empty(t, res)
	var ne *netbox.Error
	require.True(t, errors.As(err, &ne))
	assert.True(t, ne.MayHaveLanded)
	assert.True(t, ne.Retryable)
	assert.Equal(t, netbox.KindTransport, ne.Kind)
	assert.Contains(t, err.Error(), "may have been applied")
	log := e.sim.PatchLog()
	require.Len(t, log, 1, "one PATCH, never replayed")
	assert.True(t, log[0].Dropped)
	assert.Equal(t, 1.0, e.counter("o2ims_netbox_assignment_attempts_total", map[string]string{"result": "error"}))

	d, err = e.client.Claims.GetDevice(ctx(t), id)
	require.NoError(t, err)
	res, err = e.client.Claims.Claim(ctx(t), d, uid(1))
	require.NoError(t, err)
	assert.Equal(t, netbox.ClaimedAlready, res)
	assert.Len(t, e.sim.PatchLog(), 1)
}

func TestClaimServerErrorNotReplayed(t *testing.T) {
	e := newEnv(t)
	id := e.addHost("h", nil)
	d, err := e.client.Claims.GetDevice(ctx(t), id)
	require.NoError(t, err)
	e.sim.InjectFault(netboxsim.Fault{Method: "PATCH", Route: netboxsim.RouteDevice, Status: 503, Count: 5})
	_, err = e.client.Claims.Claim(ctx(t), d, uid(1))
	var ne *netbox.Error
	require.True(t, errors.As(err, &ne))
	assert.Equal(t, netbox.KindServer, ne.Kind)
	assert.True(t, ne.MayHaveLanded)
	assert.Equal(t, 1, e.sim.Calls("PATCH", netboxsim.RouteDevice), "PATCH never retried")

	// 429 and 403 on a write: refused before processing.
	for _, status := range []int{429, 403, 400} {
		e.sim.ClearFaults()
		e.sim.InjectFault(netboxsim.Fault{Method: "PATCH", Route: netboxsim.RouteDevice, Status: status})
		_, err = e.client.Claims.Claim(ctx(t), d, uid(1))
		require.True(t, errors.As(err, &ne))
		assert.Equal(t, status, ne.Status)
		assert.False(t, ne.MayHaveLanded, "status %d", status)
	}
}

func TestClaimTimeoutNotReplayed(t *testing.T) {
	e := newEnv(t, withConfig(func(c *netbox.Config) { c.Timeout = 50 * time.Millisecond }))
	id := e.addHost("h", nil)
	d, err := e.client.Claims.GetDevice(ctx(t), id)
	require.NoError(t, err)
	e.sim.SetLatency("PATCH", netboxsim.RouteDevice, time.Hour)
	_, err = e.client.Claims.Claim(ctx(t), d, uid(1))
	var ne *netbox.Error
	require.True(t, errors.As(err, &ne))
	assert.Equal(t, netbox.KindTimeout, ne.Kind)
	assert.True(t, ne.MayHaveLanded)
	assert.Equal(t, 1, e.sim.Calls("PATCH", netboxsim.RouteDevice))
}

func TestClaimDeviceDeleted(t *testing.T) {
	e := newEnv(t)
	id := e.addHost("h", nil)
	d, err := e.client.Claims.GetDevice(ctx(t), id)
	require.NoError(t, err)
	e.sim.DeleteDevice(id)
	res, err := e.client.Claims.Claim(ctx(t), d, uid(1))
	require.NoError(t, err)
	assert.Equal(t, netbox.RaceLost, res)
}

// 50 reconcilers, 20 hosts: exactly 20 claims, no host claimed twice.
func TestConcurrentClaims(t *testing.T) {
	e := newEnv(t)
	e.addCapability("gpu_model", "select", "a100")
	for i := 0; i < 20; i++ {
		e.addHost("h", map[string]any{"gpu_model": "a100"})
	}
	e.addHost("other", map[string]any{"gpu_model": nil})
	sel := netbox.Selector{"gpu_model": "a100"}

	var (
		mu      sync.Mutex
		winners = map[int32]string{}
		noHost  int
		errs    []error
		wg      sync.WaitGroup
	)
	for g := 0; g < 50; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			me := uid(g)
			skip := map[int32]bool{}
			for round := 0; round < 100; round++ {
				cand, err := e.client.Search.FindFreeHost(ctx(t), sel, skip)
				if errors.Is(err, netbox.ErrNoFreeHost) {
					mu.Lock()
					noHost++
					mu.Unlock()
					return
				}
				if err == nil {
					cand, err = e.client.Claims.GetDevice(ctx(t), cand.ID)
				}
				var res netbox.ClaimResult
				if err == nil {
					res, err = e.client.Claims.Claim(ctx(t), cand, me)
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				switch res {
				case netbox.Claimed:
					mu.Lock()
					if prev, dup := winners[cand.ID]; dup {
						errs = append(errs, errors.New("device claimed twice: "+prev+" and "+me))
					}
					winners[cand.ID] = me
					mu.Unlock()
					return
				case netbox.RaceLost:
					skip[cand.ID] = true
				default:
					mu.Lock()
					errs = append(errs, errors.New("unexpected "+string(res)))
					mu.Unlock()
					return
				}
			}
		}(g)
	}
	wg.Wait()
	require.Empty(t, errs)
	assert.Len(t, winners, 20)
	assert.Equal(t, 30, noHost)

	owners := map[string]bool{}
	committed := 0
	for _, r := range e.sim.PatchLog() {
		if r.Committed {
			committed++
		}
	}
	assert.Equal(t, 20, committed)
	for _, d := range e.sim.Devices() {
		if d.Custom["gpu_model"] != "a100" {
			assert.Equal(t, "staged", d.Status)
			continue
		}
		assert.Equal(t, "active", d.Status)
		o, _ := d.Custom["o2ims_request_uid"].(string)
		assert.Equal(t, winners[d.ID], o)
		assert.False(t, owners[o], "one host per reconciler")
		owners[o] = true
	}
	assert.Equal(t, 20.0, e.counter("o2ims_netbox_assignment_attempts_total", map[string]string{"result": "success"}))
}
