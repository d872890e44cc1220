package hosts

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/o2ims-operator/o2ims-operator/framework"
	"github.com/o2ims-operator/o2ims-operator/netbox"
)

// Released is one observation of a request's release.
type Released struct {
	// Done: every host is back in the pool and nothing of ours is left in Metal3.
	Done bool
	// Message says what is still under way.
	Message string
	// Soon asks for the next pass right after this one's writes land (a checkpoint was recorded, or a
	// deletion needs confirming, and nothing else will wake the request).
	Soon bool
}

// Release undoes the hosts in reverse: our BareMetalHost and BMC Secret first (confirmed gone), a
// checkpoint on the request, then the device back to the pool. Nothing is ever done to a device or an
// object that is not this request's. NetBox being unusable is a wait naming why (outage.go).
func (st *Step) Release(ctx context.Context, c *framework.Cause) (Released, error) {
	res, err := st.releaseAll(ctx, c, false)
	if msg, ok := st.netboxWait(err); ok {
		return Released{Message: msg}, nil
	}
	return res, err
}

// releaseAll releases every recorded host. A give-back (a request whose budget ran out waiting for hosts)
// also empties the positions of hosts gone back and is done once only hosts a machine consumes are left.
func (st *Step) releaseAll(ctx context.Context, c *framework.Cause, giveBack bool) (Released, error) {
	slots, err := ReadSlots(c.Object)
	if err != nil {
		return Released{}, fmt.Errorf("reading host records: %w", err)
	}
	before := slices.Clone(slots)
	defer func() { writeSlots(c, before, slots) }()
	p, err := st.releaseSlots(ctx, c, slots, func(Slot) bool { return true })
	if err != nil {
		return Released{}, err
	}
	if !giveBack {
		if pending := append(p.pending, p.quarantining...); len(pending) > 0 {
			return Released{Message: strings.Join(pending, "; "), Soon: p.soon}, nil
		}
		return Released{Done: true}, nil
	}
	slots = slices.DeleteFunc(slots, func(s Slot) bool { return !s.holds() })
	if len(p.pending) > p.inUse || len(p.quarantining) > 0 {
		return Released{Message: strings.Join(append(p.pending, p.quarantining...), "; "), Soon: p.soon}, nil
	}
	return Released{Done: true, Message: strings.Join(p.pending, "; ")}, nil
}

// releaseProgress is one release step over several slots: what is still under way, and whether the next
// pass should follow promptly.
type releaseProgress struct {
	pending []string
	// quarantining: the same for hosts whose BMC refused the credentials ("netbox-<id> (why): step").
	quarantining []string
	soon         bool
	// inUse counts the pending hosts a machine consumes (consumer.go): they wait for Cluster API.
	inUse int
}

func (p *releaseProgress) add(s *Slot, detail string) {
	if s.Refused != "" {
		p.quarantining = append(p.quarantining, fmt.Sprintf("%s (%s): %s", s.ID, s.Refused, detail))
		return
	}
	p.pending = append(p.pending, detail)
}

// releaseSlots moves every selected slot one release step on, from the last slot to the first: our
// Metal3 objects gone (checkpoint PhaseMetal3Released, in a pass of its own), then the device back to the
// pool (PhaseReleased) — or, for a host whose BMC refused the credentials, quarantined in NetBox (failed,
// our uid cleared, the reason in its changelog).
func (st *Step) releaseSlots(ctx context.Context, c *framework.Cause, slots []Slot, selected func(Slot) bool) (releaseProgress, error) {
	uid := string(c.Object.GetUID())
	var p releaseProgress
	for i := len(slots) - 1; i >= 0; i-- {
		s := &slots[i]
		if !selected(*s) || !s.holds() {
			continue
		}
		id, err := netbox.ParseIdentity(s.ID)
		if err != nil {
			s.Phase = PhaseReleased
			continue
		}
		switch s.Phase {
		case PhaseCandidate, PhaseClaimed:
			r, err := st.metal3.deleteMetal3(ctx, c, id)
			if err != nil {
				return releaseProgress{}, err
			}
			if r.gone {
				// The checkpoint lands before NetBox hears of it, in a pass of its own.
				s.Phase = PhaseMetal3Released
				r.detail, r.confirm = s.ID+": removed from Metal3", true
			}
			p.soon = p.soon || r.confirm
			if r.inUse {
				p.inUse++
			}
			p.add(s, r.detail)
		case PhaseMetal3Released:
			if s.Refused != "" {
				if err := st.quarantineClaimed(ctx, c, s, id, uid); err != nil {
					return releaseProgress{}, err
				}
				continue
			}
			res, err := st.nb.Claims.Release(ctx, id, uid)
			if err != nil {
				return releaseProgress{}, inventoryError(err)
			}
			s.Phase = PhaseReleased
			if res == netbox.Released {
				c.Normal(EventHostFreed, fmt.Sprintf("Released host %s back to the pool", s.ID))
			}
		default:
			// An unknown phase (someone's edit) is released from the start: every step is idempotent.
			s.Phase = PhaseClaimed
			p.add(s, s.ID+": releasing")
			p.soon = true
		}
	}
	return p, nil
}

// GiveBack releases what a request that failed waiting for its hosts holds, at once: every host no machine
// consumes goes back to the pool with the checkpoints of a deletion, and its position is emptied (a later
// spec change chooses again); a host a machine consumes stays recorded and claimed (never released in use).
// Done once nothing but such hosts is left.
func (st *Step) GiveBack(ctx context.Context, c *framework.Cause) (Released, error) {
	res, err := st.releaseAll(ctx, c, true)
	if msg, ok := st.netboxWait(err); ok {
		return Released{Message: msg}, nil
	}
	return res, err
}
