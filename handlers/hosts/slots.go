package hosts

import (
	"encoding/json"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/o2ims-operator/o2ims-operator/api/spec"
	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/framework"
)

// Phase is where a host slot is, persisted per host in status.extensions.hosts. The record is what makes
// a restart resume the same claim instead of picking (and leaking) another host. A phase read from a
// record may be none of these (someone's edit): the release starts such a host from the beginning.
type Phase string

const (
	// PhaseCandidate: chosen and recorded on the request, not yet claimed in NetBox (the record lands
	// before the claim, so a crash between the two re-reads this device rather than choosing another).
	PhaseCandidate Phase = "candidate"
	// PhaseClaimed: active in NetBox with our request uid.
	PhaseClaimed Phase = "claimed"
	// PhaseMetal3Released: release checkpoint: our BareMetalHost and BMC Secret are confirmed gone.
	PhaseMetal3Released Phase = "metal3-released"
	// PhaseReleased: back in the pool (or never ours): nothing left to do for it.
	PhaseReleased Phase = "released"
)

// Slot is one requested host: the i-th of a role. A surplus slot is a host the spec no longer asks for
// (its role's count was lowered or the role removed): it is released like on deletion, checkpoint by
// checkpoint, and dropped from the record once it is back in the pool. Its json tags are the persisted
// record, read (ReadSlots) and written (writeSlots) through this struct alone.
type Slot struct {
	Role    string `json:"role"`
	Index   int    `json:"index"`
	ID      string `json:"id,omitempty"`
	Phase   Phase  `json:"phase,omitempty"`
	Surplus bool   `json:"surplus,omitempty"`
	// Refused says why Metal3 could not register the claimed host (a BMC fault judged persistent by
	// bmcfault.go, or its credentials Secret gone; sanitised, one line): the host is surplus, released with the checkpoints of a deletion but set
	// failed in NetBox instead of staged, and its position gets another host.
	Refused string `json:"refused,omitempty"`
	// RefusedReason is the NetBox quarantine reason of Refused ("" before it was recorded: the BMC
	// refused the credentials, credentials-refused).
	RefusedReason string `json:"refusedReason,omitempty"`
	// FaultSince is when the operator first saw Metal3's registration error on the claimed host (RFC
	// 3339, UTC), dropped once the error clears: the grace period survives a restart (bmcfault.go).
	FaultSince string `json:"faultSince,omitempty"`
	// WaitingSince is when the position began to wait for a free host (RFC 3339, UTC), kept while it is
	// a candidate (a race lost keeps its place in the line) and dropped once claimed: the allocator's
	// order survives a restart, and the status says since when.
	WaitingSince string `json:"waitingSince,omitempty"`
}

// holds tells whether the slot may hold a device: a candidate's claim may have landed unanswered.
func (s Slot) holds() bool { return s.ID != "" && s.Phase != PhaseReleased }

func (s Slot) key() string { return fmt.Sprintf("%s/%d", s.Role, s.Index) }

// forget empties the position so the next choice fills it again. Only for a host we do not hold: not
// claimed yet and now not ours to claim (gone, taken, lost in a race, quarantined, our uid cleared).
func (s *Slot) forget() { *s = Slot{Role: s.Role, Index: s.Index, WaitingSince: s.WaitingSince} }

// claimed records the claim: the position waits no more.
func (s *Slot) claimed() { s.Phase, s.WaitingSince = PhaseClaimed, "" }

const extensionsHosts = "hosts"

// ReadSlots reads the host records; malformed ones (someone else's edit) are ignored with an error the
// caller logs, never a crash.
func ReadSlots(u *unstructured.Unstructured) ([]Slot, error) {
	raw, found, _ := unstructured.NestedFieldNoCopy(u.Object, v1alpha1.FieldStatus, v1alpha1.FieldExtensions, extensionsHosts)
	if !found || raw == nil {
		return nil, nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	var slots []Slot
	if err := json.Unmarshal(b, &slots); err != nil {
		return nil, fmt.Errorf("status.extensions.hosts is not a list of host records: %w", err)
	}
	return slots, nil
}

// plan lays the request's roles out as slots, keeping what was recorded for each (role, index). Recorded
// slots the spec no longer has and that may hold a device become surplus, after the requested ones, in
// their recorded order (released from the end, so a role's highest index goes first); surplus that holds
// nothing any more is dropped. A position asked for again while its old host is still being released gets
// a fresh slot: the old host is never taken back halfway through its release.
func plan(req spec.Request, recorded []Slot) []Slot {
	byKey := map[string]Slot{}
	for _, s := range recorded {
		if !s.Surplus {
			byKey[s.key()] = s
		}
	}
	wanted := map[string]bool{}
	var out []Slot
	for _, h := range req.Hosts {
		// Never sized by an unchecked count: spec.Parse bounds it already; this holds if a Request is built elsewhere.
		for i := 0; i < min(h.Count, spec.MaxHostsPerRole); i++ {
			s, ok := byKey[fmt.Sprintf("%s/%d", h.Role, i)]
			if !ok {
				s = Slot{Role: h.Role, Index: i}
			}
			wanted[s.key()] = true
			out = append(out, s)
		}
	}
	for _, s := range recorded {
		if s.Surplus && s.holds() {
			out = append(out, s)
		}
	}
	for _, s := range recorded {
		if !s.Surplus && !wanted[s.key()] && s.holds() {
			s.Surplus = true
			out = append(out, s)
		}
	}
	return out
}

// settled: every requested position has a claimed host and no surplus is left to release, so the hosts
// step has nothing to claim, choose or release.
func settled(req spec.Request, recorded []Slot) bool {
	for _, s := range plan(req, recorded) {
		if s.Surplus || s.Phase != PhaseClaimed {
			return false
		}
	}
	return true
}

// Held lists the recorded hosts that may still be held (claimed, or a candidate whose claim may have
// landed). The chain reads it also without an inventory: a deletion must not drop the finalizer then.
func Held(u *unstructured.Unstructured) []string {
	slots, _ := ReadSlots(u)
	var out []string
	for _, s := range slots {
		if s.holds() {
			out = append(out, s.ID)
		}
	}
	return out
}

// writeSlots puts the records into the pass's status patch when they changed.
func writeSlots(c *framework.Cause, before, after []Slot) {
	if slices.Equal(before, after) {
		return
	}
	c.Patch.SetStatus(slotsUnstructured(after), v1alpha1.FieldExtensions, extensionsHosts)
}

// slotsUnstructured is the records as the status holds them: each Slot by its json tags, an omitempty
// member left out, the index an int64 (what a decoded object holds, so an unchanged record compares
// equal).
func slotsUnstructured(slots []Slot) []any {
	list := make([]any, 0, len(slots))
	for _, s := range slots {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&s)
		if err != nil {
			panic(fmt.Sprintf("a host record does not convert: %v", err)) // strings, an int and a bool always do
		}
		list = append(list, m)
	}
	return list
}
