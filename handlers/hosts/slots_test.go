package hosts

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/o2ims-operator/o2ims-operator/api/spec"
)

// plan keeps what was recorded per (role, index), turns recorded positions the spec dropped into surplus
// (only while they may hold a device), and never reuses a surplus host for a position asked for again.
func TestPlanMarksDroppedPositionsSurplusAndNeverReusesThem(t *testing.T) {
	recorded := []Slot{
		{Role: "worker", Index: 0, ID: "netbox-1", Phase: PhaseClaimed},
		{Role: "worker", Index: 1, ID: "netbox-2", Phase: PhaseClaimed},
		{Role: "worker", Index: 2, ID: "netbox-3", Phase: PhaseCandidate},
		{Role: "cp", Index: 0, ID: "netbox-4", Phase: PhaseClaimed},
		{Role: "cp", Index: 1}, // empty: nothing to release
	}
	req := spec.Request{Hosts: []spec.HostRequest{{Role: "worker", Count: 1}}}
	got := plan(req, recorded)
	assert.Equal(t, []Slot{
		{Role: "worker", Index: 0, ID: "netbox-1", Phase: PhaseClaimed},
		{Role: "worker", Index: 1, ID: "netbox-2", Phase: PhaseClaimed, Surplus: true},
		{Role: "worker", Index: 2, ID: "netbox-3", Phase: PhaseCandidate, Surplus: true},
		{Role: "cp", Index: 0, ID: "netbox-4", Phase: PhaseClaimed, Surplus: true},
	}, got)
	assert.False(t, settled(req, recorded))

	// worker/1 asked for again while netbox-2 is still being released: a fresh slot, netbox-2 stays surplus.
	got[1].Phase = PhaseMetal3Released
	got[3].Phase = PhaseReleased // back in the pool: dropped
	req = spec.Request{Hosts: []spec.HostRequest{{Role: "worker", Count: 2}}}
	again := plan(req, got)
	assert.Equal(t, []Slot{
		{Role: "worker", Index: 0, ID: "netbox-1", Phase: PhaseClaimed},
		{Role: "worker", Index: 1},
		{Role: "worker", Index: 1, ID: "netbox-2", Phase: PhaseMetal3Released, Surplus: true},
		{Role: "worker", Index: 2, ID: "netbox-3", Phase: PhaseCandidate, Surplus: true},
	}, again)
	assert.True(t, idsInUse(again)[2], "a surplus host is never chosen again while it is released")

	assert.True(t, settled(spec.Request{Hosts: []spec.HostRequest{{Role: "worker", Count: 1}}},
		[]Slot{{Role: "worker", Index: 0, ID: "netbox-1", Phase: PhaseClaimed}}))
}
