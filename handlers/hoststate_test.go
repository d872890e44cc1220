package handlers

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// plan keeps what was recorded per (role, index), turns recorded positions the spec dropped into surplus
// (only while they may hold a device), and never reuses a surplus host for a position asked for again.
func TestPlanMarksDroppedPositionsSurplusAndNeverReusesThem(t *testing.T) {
	recorded := []hostSlot{
		{Role: "worker", Index: 0, ID: "netbox-1", Phase: phaseClaimed},
		{Role: "worker", Index: 1, ID: "netbox-2", Phase: phaseClaimed},
		{Role: "worker", Index: 2, ID: "netbox-3", Phase: phaseCandidate},
		{Role: "cp", Index: 0, ID: "netbox-4", Phase: phaseClaimed},
		{Role: "cp", Index: 1}, // empty: nothing to release
	}
	req := Request{Hosts: []HostRequest{{Role: "worker", Count: 1}}}
	got := plan(req, recorded)
	assert.Equal(t, []hostSlot{
		{Role: "worker", Index: 0, ID: "netbox-1", Phase: phaseClaimed},
		{Role: "worker", Index: 1, ID: "netbox-2", Phase: phaseClaimed, Surplus: true},
		{Role: "worker", Index: 2, ID: "netbox-3", Phase: phaseCandidate, Surplus: true},
		{Role: "cp", Index: 0, ID: "netbox-4", Phase: phaseClaimed, Surplus: true},
	}, got)
	assert.False(t, settled(req, recorded))

	// worker/1 asked for again while netbox-2 is still being released: a fresh slot, netbox-2 stays surplus.
	got[1].Phase = phaseMetal3Released
	got[3].Phase = phaseReleased // back in the pool: dropped
	req = Request{Hosts: []HostRequest{{Role: "worker", Count: 2}}}
	again := plan(req, got)
	assert.Equal(t, []hostSlot{
		{Role: "worker", Index: 0, ID: "netbox-1", Phase: phaseClaimed},
		{Role: "worker", Index: 1},
		{Role: "worker", Index: 1, ID: "netbox-2", Phase: phaseMetal3Released, Surplus: true},
		{Role: "worker", Index: 2, ID: "netbox-3", Phase: phaseCandidate, Surplus: true},
	}, again)
	assert.True(t, idsInUse(again)[2], "a surplus host is never chosen again while it is released")

	assert.True(t, settled(Request{Hosts: []HostRequest{{Role: "worker", Count: 1}}},
		[]hostSlot{{Role: "worker", Index: 0, ID: "netbox-1", Phase: phaseClaimed}}))
}
