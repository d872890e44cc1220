package hosts

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/netbox"
)

// Metal3's messages, as BMO and Ironic write them (bmcerrors.go cites where), classified by the table.
func TestRegistrationErrorsAreClassifiedByTheirSource(t *testing.T) {
	node := "6d2b5f0e-9d55-4a44-8e0a-1f4a7d6b2c11"
	for _, tc := range []struct {
		msg    string
		cause  faultCause
		reason netbox.QuarantineReason
	}{
		{"Failed to get power state for node " + node + ". Error: Redfish exception occurred. Error: HTTP POST https://10.0.0.9/redfish/v1/SessionService/Sessions returned code 401. Base.1.0.GeneralError: unknown error. Extended information: None",
			causeAuth, netbox.ReasonCredentialsRefused},
		{"Failed to get power state for node " + node + ". Error: Redfish exception occurred. Error: HTTP GET https://10.0.0.9/redfish/v1/Systems/1 returned code 403. Base.1.0.InsufficientPrivilege: x Extended information: []",
			causeAuth, netbox.ReasonCredentialsRefused},
		{"Failed to get power state for node " + node + ". Error: Redfish connection failed for node " + node + ": Unable to connect to https://10.0.0.9/redfish/v1. Error: timed out",
			causeUncertain, netbox.ReasonRegistrationFailed},
		{"Failed to get power state for node " + node + ". Error: IPMI call failed: power status.", causeUncertain, netbox.ReasonRegistrationFailed},
		{"BMC CredentialsName secret doesn't exist failed to fetch BMC credentials from secret reference", causeOurSecret, netbox.ReasonRegistrationFailed},
		{"Validation error with BMC credentials: Missing BMC connection detail 'username' in credentials", causeOurSecret, netbox.ReasonRegistrationFailed},
	} {
		bmh := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{
			"operationalStatus": "error", "errorType": "registration error", "errorMessage": tc.msg, "errorCount": int64(2),
		}}}
		f := registrationFaultOf(bmh)
		assert.True(t, f.failing, tc.msg)
		assert.Equal(t, tc.cause, f.cause, tc.msg)
		assert.Equal(t, int64(2), f.count)
		assert.Equal(t, tc.reason, f.cause.reason(), tc.msg)
	}
	ok := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"operationalStatus": "OK"}}}
	assert.False(t, registrationFaultOf(ok).failing)
}

// The burst guard: quarantines in the window plus hosts failing now stay within BMC_FAULT_BURST; the
// window forgets old ones.
func TestTheFaultGuardAdmitsNoMoreThanTheBurst(t *testing.T) {
	p := FaultPolicy{Burst: 3, BurstWindow: time.Hour}
	var g faultGuard
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 3; i++ {
		ok, _ := g.admit(t0, int32(i+1), 1, p)
		require.True(t, ok, "quarantine %d", i+1)
	}
	ok, together := g.admit(t0, 4, 1, p)
	assert.False(t, ok, "a fourth within the window")
	assert.Equal(t, 4, together)
	var fresh faultGuard
	ok, _ = fresh.admit(t0, 1, 5, p)
	assert.False(t, ok, "five failing at once: none")
	ok, _ = g.admit(t0.Add(time.Hour), 4, 1, p)
	assert.True(t, ok, "the window forgot the old ones")
}

func TestTheBMCAddressPolicy(t *testing.T) {
	def, err := ParseAddressPolicy("", "")
	require.NoError(t, err)
	cidr, err := ParseAddressPolicy("10.0.0.0/8, fd00::/8", "redfish+https,ipmi")
	require.NoError(t, err)
	for _, tc := range []struct {
		p       AddressPolicy
		addr    string
		refused bool
	}{
		{def, "redfish+https://10.0.0.9/redfish/v1/Systems/1", false},
		{def, "redfish-virtualmedia+https://bmc.example.net/redfish/v1/Systems/1", false},
		{def, "ipmi://10.0.0.9:623", false},
		{def, "10.0.0.9", false},
		{def, "redfish+http://10.0.0.9/redfish/v1/Systems/1", true},
		{def, "idrac-virtualmedia+http://10.0.0.9/redfish/v1/Systems/1", true},
		{def, "redfish+https://127.0.0.1/redfish/v1/Systems/1", true},
		{def, "redfish+https://169.254.169.254/redfish/v1/Systems/1", true},
		{cidr, "redfish+https://10.1.2.3/redfish/v1/Systems/1", false},
		{cidr, "redfish+https://[fd00::5]/redfish/v1/Systems/1", false},
		{cidr, "ipmi://10.0.0.9", false},
		{cidr, "redfish+https://192.168.1.5/redfish/v1/Systems/1", true},
		{cidr, "redfish+https://bmc.example.net/redfish/v1/Systems/1", true},
		{cidr, "redfish-virtualmedia+https://10.1.2.3/redfish/v1/Systems/1", true},
		{def, "not a url at all", false}, // BMCDataProblem's to report
	} {
		why := tc.p.refusal(tc.addr)
		assert.Equal(t, tc.refused, why != "", "%s: %q", tc.addr, why)
		assert.NotContains(t, why, "10.", "the address is never quoted")
		assert.NotContains(t, why, "192.168", "the address is never quoted")
	}
	_, err = ParseAddressPolicy("10.0.0.0/33", "")
	assert.Error(t, err)
}

// failedPool is a pool whose view holds quarantined devices, by id, with when they changed.
type failedPool struct {
	Pool
	synced bool
	failed map[int32]time.Time
}

func (p failedPool) IsSynced() bool { return p.synced }
func (p failedPool) FailedSince(since time.Time) []int32 {
	var out []int32
	for id, t := range p.failed {
		if !t.Before(since) {
			out = append(out, id)
		}
	}
	return out
}

// The burst's count is NetBox's: a restarted process (empty memory) still sees the quarantines of the
// window, counts once a device both it and the view know, adds its own decisions the view has not seen
// land yet, and holds until the view is listed.
func TestTheBurstGuardCountsNetBoxsQuarantinesAcrossRestarts(t *testing.T) {
	p := FaultPolicy{Burst: 3, BurstWindow: time.Hour}
	now := time.Now()
	pool := failedPool{synced: true, failed: map[int32]time.Time{1: now.Add(-10 * time.Minute), 2: now.Add(-time.Minute), 9: now.Add(-2 * time.Hour)}}
	restarted := faultGuard{pool: pool}
	ok, together := restarted.admit(now, 3, 1, p)
	assert.True(t, ok, "two in the window, one outside it: the third is admitted")
	assert.Equal(t, 3, together)
	ok, together = restarted.admit(now, 4, 1, p)
	assert.False(t, ok, "a fourth within the window, though the view has not seen the third land")
	assert.Equal(t, 4, together)
	pool.failed[3] = now // the third landed: still three, not four
	ok, together = restarted.over(now, 0, p)
	assert.False(t, ok)
	assert.Equal(t, 3, together)

	notListed := faultGuard{pool: failedPool{}}
	ok, together = notListed.admit(now, 1, 1, p)
	assert.False(t, ok, "admitted before NetBox's quarantines could be counted")
	assert.Equal(t, unknownBurst, together)
	assert.NotContains(t, heldMessage(together, p), "quarantines held", "the alarm's phrase for a count not made")
}
