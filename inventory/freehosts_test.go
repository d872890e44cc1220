package inventory

import (
	"context"
	"iter"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/netbox"
)

// The free index follows NetBox: the first listing fills it, the operator's own claim and release move
// a host out and back at once, and a host an administrator took shows taken as soon as a claim reads it
// (one GET), before any refresh.
func TestFreeHostsFollowNetBoxAndAClaimsReadCorrectsThem(t *testing.T) {
	f := newFixture(t, 3)
	ctx := context.Background()
	var mu sync.Mutex
	var told []string
	f.view.OnFreeChange(func(d *netbox.InventoryDevice, free bool) {
		mu.Lock()
		defer mu.Unlock()
		told = append(told, netbox.Identity(d.ID)+map[bool]string{true: " free", false: " taken"}[free])
	})
	freeNow := func() []int32 {
		var out []int32
		f.view.ReadFree(func(free iter.Seq[*netbox.InventoryDevice], lookup func(int32) *netbox.InventoryDevice) {
			for d := range free {
				require.Equal(t, d, lookup(d.ID))
				out = append(out, d.ID)
			}
		})
		slices.Sort(out)
		return out
	}
	takeTold := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := told
		told = nil
		return out
	}

	require.NoError(t, f.ref.Refresh(ctx, true))
	require.Equal(t, []int32{1, 2, 3}, freeNow())
	require.Equal(t, []string{"netbox-1 free", "netbox-2 free", "netbox-3 free"}, takeTold())

	uid := "0b7a1f6e-0000-4000-8000-000000000001"
	d, err := f.nb.Claims.GetDevice(ctx, 1)
	require.NoError(t, err)
	_, err = f.nb.Claims.Claim(ctx, d, uid)
	require.NoError(t, err)
	require.Equal(t, []int32{2, 3}, freeNow(), "our claim shows at once")
	require.Equal(t, []string{"netbox-1 taken"}, takeTold())
	_, err = f.nb.Claims.Release(ctx, 1, uid)
	require.NoError(t, err)
	require.Equal(t, []int32{1, 2, 3}, freeNow(), "our release shows at once")
	require.Equal(t, []string{"netbox-1 free"}, takeTold())

	// An administrator takes host 2; no refresh runs. The view still thinks it free until a claim reads it.
	require.NoError(t, f.sim.SetStatus(2, netbox.StatusActive))
	require.Equal(t, []int32{1, 2, 3}, freeNow())
	d, err = f.nb.Claims.GetDevice(ctx, 2)
	require.NoError(t, err)
	require.False(t, d.Free())
	require.Equal(t, []int32{1, 3}, freeNow(), "one read corrects the view")
	require.Equal(t, []string{"netbox-2 taken"}, takeTold())

	// A free host an administrator changes is news (it may match a selector it did not); one deleted in
	// NetBox leaves the view as soon as a read meets its 404, not at the next full listing.
	require.NoError(t, f.sim.SetCustom(3, "cpu_cores", int64(64)))
	require.NoError(t, f.ref.Refresh(ctx, false))
	require.Equal(t, []string{"netbox-3 free"}, takeTold())
	require.True(t, f.sim.DeleteDevice(3))
	_, err = f.nb.Claims.GetDevice(ctx, 3)
	require.True(t, netbox.IsKind(err, netbox.KindNotFound))
	require.Equal(t, []int32{1}, freeNow())
	require.Equal(t, []string{"netbox-3 taken"}, takeTold())
	require.Nil(t, f.resource(t, 3), "gone from the inventory too")
}
