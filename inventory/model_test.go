package inventory

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
)

var seedFlag = flag.Uint64("seed", 0, "seed of TestViewModel (0: from the clock)")

// TestViewModel drives NetBox through seeded random sequences — administrators' edits (status,
// capability, pool flag, site), additions, deletions, the operator's own claims — interleaved with
// changes-only and full refreshes, and checks after every step that (1) replaying every Change the view
// emitted onto a plain map gives exactly the view's objects (nothing missed, nothing invented: what the
// notifier relies on), and (2) after a full refresh, the view equals a fresh view read from NetBox.
// Replay a failure with -seed.
func TestViewModel(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay: go test -run TestViewModel ./inventory/ -args -seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	f := newFixture(t, 8)
	ctx := context.Background()
	model := map[string]*Entry{}
	apply := func() {
		for _, c := range f.takeChanges() {
			if c.Prior == nil {
				require.Nil(t, model[c.ID], "create of an object already there: %s %s", c.Kind, c.ID)
			} else {
				require.NotNil(t, model[c.ID], "modify/delete of an unknown object: %s %s", c.Kind, c.ID)
				require.True(t, bytes.Equal(model[c.ID].JSON, c.Prior.JSON), "prior state is not what was last told")
			}
			if c.Post == nil {
				delete(model, c.ID)
			} else {
				model[c.ID] = c.Post
			}
		}
	}
	viewObjects := func(v *View) map[string]string {
		out := map[string]string{}
		v.mu.RLock()
		defer v.mu.RUnlock()
		for id, c := range v.objectsLocked() {
			out[id] = string(c.Post.JSON)
		}
		return out
	}
	sites := []string{"North", "South", "East"}
	for step := 0; step < 300; step++ {
		devs := f.sim.Devices()
		d := devs[rng.IntN(len(devs))]
		var what string
		switch op := rng.IntN(9); op {
		case 0:
			st := []string{"staged", "failed", "offline", "active"}[rng.IntN(4)]
			what = fmt.Sprintf("status %d %s", d.ID, st)
			require.NoError(t, f.sim.SetStatus(d.ID, st))
		case 1:
			what = fmt.Sprintf("cpu %d", d.ID)
			require.NoError(t, f.sim.SetCustom(d.ID, "cpu_cores", int64(8<<rng.IntN(4))))
		case 2:
			what = fmt.Sprintf("pool flag %d", d.ID)
			require.NoError(t, f.sim.SetCustom(d.ID, "o2ims_managed", rng.IntN(3) > 0))
		case 3:
			s := sites[rng.IntN(len(sites))]
			what = fmt.Sprintf("site %d %s", d.ID, s)
			require.NoError(t, f.sim.SetSite(d.ID, s))
		case 4:
			what = "add"
			f.sim.AddDevice(netboxsim.Device{Site: sites[rng.IntN(len(sites))], Custom: map[string]any{"o2ims_managed": true}})
		case 5:
			if len(devs) > 3 {
				what = fmt.Sprintf("delete %d", d.ID)
				f.sim.DeleteDevice(d.ID)
			}
		case 6:
			what = fmt.Sprintf("claim %d", d.ID)
			if dev, err := f.nb.Claims.GetDevice(ctx, d.ID); err == nil {
				_, _ = f.nb.Claims.Claim(ctx, dev, "0b7a1f6e-0000-4000-8000-000000000001")
			}
		case 7:
			what = "changes refresh"
			require.NoError(t, f.ref.Refresh(ctx, false))
		case 8:
			what = "full refresh"
			require.NoError(t, f.ref.Refresh(ctx, true))
			fresh := NewView(f.cfg, nil)
			r, err := NewRefresher(fresh, f.nb.Search, nil, nil)
			require.NoError(t, err)
			require.NoError(t, r.Refresh(ctx, true))
			require.Equal(t, viewObjects(fresh), viewObjects(f.view), "step %d (%s): the view differs from NetBox after a full refresh", step, what)
		}
		apply()
		got := map[string]string{}
		for id, e := range model {
			got[id] = string(e.JSON)
		}
		require.Equal(t, viewObjects(f.view), got, "step %d (%s): the changes replayed do not give the view", step, what)
	}
}
