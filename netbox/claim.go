package netbox

import (
	"context"
	"errors"
	"unicode"

	"go.uber.org/zap"
)

// Claims is the client's part that changes devices: Claim, Release (release.go) and Quarantine
// (quarantine.go), each one conditional PATCH after a read by id (GetDevice), and the observers that
// hear of those writes (observers.go).
type Claims struct{ *conn }

// GetDevice reads one device with its ETag. A missing ETag is an error: the
// client never writes without If-Match.
func (c *Claims) GetDevice(ctx context.Context, id int32) (*Device, error) {
	if err := c.usable("get"); err != nil {
		return nil, err
	}
	return c.getDevice(ctx, "get", id)
}

// ClaimResult is the outcome of Claim.
type ClaimResult string

const (
	Claimed        ClaimResult = "claimed"         // this call made the device ours
	ClaimedAlready ClaimResult = "claimed-already" // it was already active with our uid (resume)
	RaceLost       ClaimResult = "race-lost"       // someone else has it, or it left the pool: reselect
)

// Claim makes d (just read with GetDevice) active and owned by requestUID with
// one conditional PATCH carrying only status and the owner field. A 412 is
// resolved by re-reading. A timeout, 5xx or lost answer returns an error with
// MayHaveLanded=true and is never replayed: the caller's next pass re-reads.
// On Claimed, *d is refreshed from NetBox's answer (new ETag included).
func (c *Claims) Claim(ctx context.Context, d *Device, requestUID string) (ClaimResult, error) {
	if err := checkUID("claim", requestUID); err != nil {
		return "", err
	}
	if err := c.usable("claim"); err != nil {
		return "", err
	}
	if d == nil || d.ETag == "" {
		return "", newError(KindInvalid, "claim", "the device must come from GetDevice (it carries the ETag)")
	}
	log := c.log.With(zap.Int32("deviceID", d.ID))
	if d.Status == StatusActive && d.OwnedBy(requestUID) {
		return ClaimedAlready, nil
	}
	if !d.ClaimableBy(requestUID) {
		c.metrics.attempt(resultRace)
		log.Info("NetBox device no longer free; claim skipped")
		return RaceLost, nil
	}

	nd, err := c.patchDevice(ctx, "claim", d.ID, d.ETag,
		devicePatch{status: StatusActive, custom: map[string]any{c.cfg.Fields.RequestUID: requestUID}})
	switch {
	case err == nil:
		if nd.Status != StatusActive || !nd.OwnedBy(requestUID) {
			c.metrics.attempt(resultError)
			return "", &Error{Kind: KindProtocol, Op: "claim", MayHaveLanded: true,
				Err: errors.New("NetBox accepted the claim but answered another state")}
		}
		*d = *nd
		c.metrics.attempt(resultSuccess)
		log.Info("NetBox device claimed")
		return Claimed, nil
	case IsKind(err, KindPrecondition):
		// The device changed since our read: whoever changed it decides.
		fresh, rerr := c.getDevice(ctx, "claim", d.ID)
		if IsKind(rerr, KindNotFound) {
			c.metrics.attempt(resultRace)
			return RaceLost, nil
		}
		if rerr != nil {
			c.metrics.attempt(resultError)
			return "", rerr
		}
		if fresh.Status == StatusActive && fresh.OwnedBy(requestUID) {
			*d = *fresh
			c.metrics.attempt(resultSuccess)
			log.Info("NetBox device claimed (confirmed after 412)")
			return Claimed, nil
		}
		c.metrics.attempt(resultRace)
		log.Info("NetBox claim lost a race (412)")
		return RaceLost, nil
	case IsKind(err, KindNotFound):
		c.metrics.attempt(resultRace)
		return RaceLost, nil
	default:
		c.metrics.attempt(resultError)
		var e *Error
		if errors.As(err, &e) {
			log.Warn("NetBox claim failed", zap.String("kind", string(e.Kind)), zap.Int("status", e.Status),
				zap.Bool("mayHaveLanded", e.MayHaveLanded))
		}
		return "", err
	}
}

// ClaimableBy tells whether a claim for requestUID may start from d: in the pool, staged, and unowned or
// owned by requestUID already (an admin's half-reset: set staged, owner left in place — ours to take back).
func (d *Device) ClaimableBy(requestUID string) bool {
	return d.Managed && d.Status == StatusStaged && (d.unowned() || d.OwnedBy(requestUID))
}

// checkUID: a Kubernetes uid is short printable text; an empty one would
// "claim" a device for nobody.
func checkUID(op, uid string) error {
	if uid == "" || len(uid) > 128 {
		return newError(KindInvalid, op, "request uid must be 1 to 128 characters")
	}
	for _, r := range uid {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return newError(KindInvalid, op, "request uid holds spaces or control characters")
		}
	}
	return nil
}
