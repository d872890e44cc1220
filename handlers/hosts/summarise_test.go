package hosts

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// While a host whose BMC refused its credentials is set aside, the request is not ready and its message
// says which host and why.
func TestSummariseNamesTheRefusedHost(t *testing.T) {
	why := "Metal3 could not register it with its BMC credentials: registration error: authentication failed"
	slots := []Slot{{Role: "worker", Index: 0, ID: "netbox-3", Phase: PhaseClaimed, Surplus: true, Refused: why}}
	res := summarise(slots, releaseProgress{}, choice{}, registration{refused: []string{"netbox-3 (" + why + ")"}})
	assert.False(t, res.Ready, "a refused host is no host")
	assert.True(t, res.Soon, "its replacement is chosen in the next pass")
	assert.Contains(t, res.Message, "quarantining 1 hosts and choosing others: netbox-3 ("+why+")")

	res = summarise([]Slot{{Role: "worker", Index: 0}}, releaseProgress{quarantining: []string{"netbox-3 (" + why + "): BareMetalHost being removed"}},
		choice{missing: map[string]int{"worker": 1}}, registration{})
	assert.False(t, res.Ready)
	assert.Contains(t, res.Message, "netbox-3 ("+why+"): BareMetalHost being removed")
}
