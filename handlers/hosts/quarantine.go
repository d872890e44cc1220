package hosts

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/o2ims-operator/o2ims-operator/framework"
	"github.com/o2ims-operator/o2ims-operator/netbox"
)

// defect is a deterministic reason to set a candidate aside: NetBox's word for it and what was found.
type defect struct {
	reason  netbox.QuarantineReason
	message string
}

// setAside takes a candidate with a deterministic defect (BMC data, credentials) out of the choice:
// quarantined when it is free; when it still carries our uid (half-reset), our uid is cleared first (a
// quarantine never touches an owned device), so it is free for the next pass to quarantine or for someone
// to fix.
func (st *Step) setAside(ctx context.Context, c *framework.Cause, s *Slot, dev *netbox.Device, uid string, d defect) error {
	if dev.OwnedBy(uid) {
		if _, err := st.nb.Claims.Release(ctx, dev.ID, uid); err != nil {
			return inventoryError(err)
		}
		c.Logger.Info("half-reset candidate has a defect; our uid cleared, choosing another",
			zap.String("host", s.ID), zap.String("reason", string(d.reason)))
		s.forget()
		return nil
	}
	return st.quarantine(ctx, c, s, dev, d.reason, d.message)
}

// quarantine marks a free device failed with its reason, conditionally on the read it was judged by.
func (st *Step) quarantine(ctx context.Context, c *framework.Cause, s *Slot, dev *netbox.Device,
	reason netbox.QuarantineReason, msg string) error {
	switch err := st.nb.Claims.Quarantine(ctx, dev, reason, msg); {
	case err == nil:
		// Only a committed quarantine is announced.
		c.Warning(EventQuarantined, fmt.Sprintf("Quarantined host %s (%s): %s; choosing another", s.ID, reason, msg))
	case netbox.IsKind(err, netbox.KindPrecondition):
		// The device changed since our read (412): whoever changed it decides; not quarantined by us.
		c.Logger.Info("candidate changed before its quarantine; choosing again", zap.String("host", s.ID))
	default:
		return inventoryError(err)
	}
	s.forget()
	return nil
}

// quarantineClaimed sets a claimed host set aside for a BMC fault (Slot.Refused) failed in NetBox, our
// uid cleared, once our Metal3 objects are confirmed gone (the checkpoint): the last step of its
// release. The event is posted only when this call committed it.
func (st *Step) quarantineClaimed(ctx context.Context, c *framework.Cause, s *Slot, id int32, uid string) error {
	reason := netbox.QuarantineReason(s.RefusedReason)
	if !reason.Valid() {
		reason = netbox.ReasonCredentialsRefused // recorded before the reason was
	}
	res, err := st.nb.Claims.QuarantineClaimed(ctx, id, uid, reason, s.Refused)
	if err != nil {
		return inventoryError(err)
	}
	s.Phase = PhaseReleased
	if res == netbox.Quarantined {
		c.Warning(EventQuarantined, fmt.Sprintf("Quarantined host %s (%s): %s; another one takes its place", s.ID, reason, s.Refused))
	}
	return nil
}

// refuseAddress sets aside a candidate whose BMC address the policy refuses, like a data defect
// (bmc-address-not-allowed): its credentials are never read nor sent. It counts toward the burst guard:
// when several are refused together the policy is likelier wrong than the devices, so it waits
// unquarantined, and held says why.
func (st *Step) refuseAddress(ctx context.Context, c *framework.Cause, s *Slot, dev *netbox.Device, uid, why string) (held string, err error) {
	return st.setAsideGuarded(ctx, c, s, dev, uid, defect{netbox.ReasonBMCAddressNotAllowed, why})
}

// setAsideGuarded is setAside for a defect whose cause may be shared (the BMC address policy, a
// credentials Secret missing, ambiguous or empty: one wrong Secret or namespace for a rack): it counts
// toward the burst guard like a BMC fault, and when several are found together the candidate waits
// unquarantined and held says why.
func (st *Step) setAsideGuarded(ctx context.Context, c *framework.Cause, s *Slot, dev *netbox.Device, uid string, d defect) (held string, err error) {
	if dev.OwnedBy(uid) {
		return "", st.setAside(ctx, c, s, dev, uid, d) // our uid cleared only
	}
	if ok, together := st.guard.admit(c.Now, dev.ID, 1, st.cfg.Faults); !ok {
		return heldMessage(together, st.cfg.Faults) + "; " + s.ID + ": " + d.message, nil
	}
	return "", st.setAside(ctx, c, s, dev, uid, d)
}
