package netbox_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/netbox"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
)

func claimed(e *env, owner string) int32 {
	return e.sim.AddDevice(netboxsim.Device{Status: "active", Custom: map[string]any{
		"o2ims_managed": true, "o2ims_request_uid": owner}})
}

func TestRelease(t *testing.T) {
	e := newEnv(t)
	id := claimed(e, uid(1))
	res, err := e.client.Claims.Release(ctx(t), id, uid(1))
	require.NoError(t, err)
	assert.Equal(t, netbox.Released, res)
	got, _ := e.sim.Device(id)
	assert.Equal(t, "staged", got.Status)
	assert.Nil(t, got.Custom["o2ims_request_uid"])
	log := e.sim.PatchLog()
	require.Len(t, log, 1)
	assert.Equal(t, map[string]any{"status": "staged", "custom_fields": map[string]any{"o2ims_request_uid": nil}}, log[0].Body)
	assert.NotEmpty(t, log[0].IfMatch)

	// Idempotent.
	res, err = e.client.Claims.Release(ctx(t), id, uid(1))
	require.NoError(t, err)
	assert.Equal(t, netbox.AlreadyFree, res)
	assert.Len(t, e.sim.PatchLog(), 1)

	// Back in the pool.
	d, err := e.client.Search.FindFreeHost(ctx(t), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, id, d.ID)
}

func TestReleaseNeverTouchesOthers(t *testing.T) {
	e := newEnv(t)
	other := claimed(e, uid(2))
	res, err := e.client.Claims.Release(ctx(t), other, uid(1))
	require.NoError(t, err)
	assert.Equal(t, netbox.NotOurs, res)

	quarantined := e.sim.AddDevice(netboxsim.Device{Status: "failed", Custom: map[string]any{"o2ims_managed": true}})
	res, err = e.client.Claims.Release(ctx(t), quarantined, uid(1))
	require.NoError(t, err)
	assert.Equal(t, netbox.NotOurs, res)
	assert.Empty(t, e.sim.PatchLog())

	res, err = e.client.Claims.Release(ctx(t), 4242, uid(1))
	require.NoError(t, err)
	assert.Equal(t, netbox.Gone, res)

	_, err = e.client.Claims.Release(ctx(t), other, "")
	assert.True(t, netbox.IsKind(err, netbox.KindInvalid))
}

// An administrator marked our device failed (or removed it from the pool):
// ownership is cleared, their status is kept.
func TestReleaseKeepsAdminStatus(t *testing.T) {
	e := newEnv(t)
	id := claimed(e, uid(1))
	require.NoError(t, e.sim.SetStatus(id, "failed"))
	res, err := e.client.Claims.Release(ctx(t), id, uid(1))
	require.NoError(t, err)
	assert.Equal(t, netbox.Released, res)
	got, _ := e.sim.Device(id)
	assert.Equal(t, "failed", got.Status)
	assert.Nil(t, got.Custom["o2ims_request_uid"])
	assert.Equal(t, map[string]any{"custom_fields": map[string]any{"o2ims_request_uid": nil}}, e.sim.PatchLog()[0].Body)
}

// A 412 re-reads and re-checks: here the device changed hands in between.
func TestReleasePreconditionRecheck(t *testing.T) {
	e := newEnv(t)
	id := claimed(e, uid(1))
	e.sim.SetPatchHook(func(id int32) {
		e.sim.SetPatchHook(nil)
		_ = e.sim.SetCustom(id, "o2ims_request_uid", uid(2))
	})
	res, err := e.client.Claims.Release(ctx(t), id, uid(1))
	require.NoError(t, err)
	assert.Equal(t, netbox.NotOurs, res)
	got, _ := e.sim.Device(id)
	assert.Equal(t, uid(2), got.Custom["o2ims_request_uid"])
	assert.Equal(t, 2, e.sim.Calls("GET", netboxsim.RouteDevice))

	// A 412 from an unrelated edit: the second round releases.
	id2 := claimed(e, uid(1))
	e.sim.SetPatchHook(func(id int32) {
		e.sim.SetPatchHook(nil)
		_ = e.sim.SetCustom(id, "o2ims_boot_mac", "52:54:00:00:00:01")
	})
	res, err = e.client.Claims.Release(ctx(t), id2, uid(1))
	require.NoError(t, err)
	assert.Equal(t, netbox.Released, res)

	// Bounded: a device that changes on every write.
	id3 := claimed(e, uid(1))
	n := 0
	e.sim.SetPatchHook(func(id int32) { n++; _ = e.sim.SetCustom(id, "o2ims_boot_mac", "52:54:00:00:00:02") })
	_, err = e.client.Claims.Release(ctx(t), id3, uid(1))
	assert.True(t, netbox.IsKind(err, netbox.KindPrecondition), "%v", err)
	assert.Contains(t, err.Error(), "kept changing")
	assert.Equal(t, 3, n)
}

func TestReleaseLostAnswer(t *testing.T) {
	e := newEnv(t)
	id := claimed(e, uid(1))
	e.sim.InjectFault(netboxsim.Fault{Method: "PATCH", Route: netboxsim.RouteDevice, Status: 504})
	_, err := e.client.Claims.Release(ctx(t), id, uid(1))
	var ne *netbox.Error
	require.True(t, errors.As(err, &ne))
	assert.True(t, ne.MayHaveLanded)
	assert.Equal(t, 1, e.sim.Calls("PATCH", netboxsim.RouteDevice))

	e.sim.DropPatchAnswers(1)
	_, err = e.client.Claims.Release(ctx(t), id, uid(1))
	require.True(t, errors.As(err, &ne))
	assert.True(t, ne.MayHaveLanded)
	res, err := e.client.Claims.Release(ctx(t), id, uid(1))
	require.NoError(t, err)
	assert.Equal(t, netbox.AlreadyFree, res, "the next pass reads the outcome")
}

// go-netbox 4.3 cannot decode a FIELD_CHOICES status; the client reads the
// answer tolerantly instead of failing the release.
func TestReleaseCustomStatusTolerantDecode(t *testing.T) {
	e := newEnv(t, withSim(netboxsim.Options{ExtraStatuses: []string{"racked"}}))
	id := claimed(e, uid(1))
	require.NoError(t, e.sim.SetStatus(id, "racked"))
	d, err := e.client.Claims.GetDevice(ctx(t), id)
	require.NoError(t, err)
	assert.Equal(t, "racked", d.Status)
	assert.NotEmpty(t, d.ETag)
	res, err := e.client.Claims.Release(ctx(t), id, uid(1))
	require.NoError(t, err)
	assert.Equal(t, netbox.Released, res)
	got, _ := e.sim.Device(id)
	assert.Equal(t, "racked", got.Status)
	assert.Nil(t, got.Custom["o2ims_request_uid"])
}
