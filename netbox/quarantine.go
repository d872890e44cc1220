package netbox

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/o2ims-operator/o2ims-operator/internal/quote"
)

// QuarantineReason is why a device was set to failed. It is a metric label.
type QuarantineReason string

const (
	ReasonCredentialsMissing   QuarantineReason = "credentials-missing"   // no labelled BMC Secret
	ReasonCredentialsAmbiguous QuarantineReason = "credentials-ambiguous" // more than one labelled Secret
	ReasonCredentialsInvalid   QuarantineReason = "credentials-invalid"   // empty username or password
	ReasonBMCAddressInvalid    QuarantineReason = "bmc-address-invalid"
	ReasonBootMACInvalid       QuarantineReason = "boot-mac-invalid"
	// ReasonCredentialsRefused: the BMC refused the credentials Metal3 registered the claimed host with
	// (QuarantineClaimed).
	ReasonCredentialsRefused QuarantineReason = "credentials-refused"
	// ReasonRegistrationFailed: Metal3 could not register the claimed host for longer than the grace
	// period and errorCount allow (no answer from its BMC, or a cause Metal3's message does not name).
	ReasonRegistrationFailed QuarantineReason = "registration-failed"
	// ReasonBMCAddressNotAllowed: the BMC address is outside BMC_ALLOW_CIDRS / BMC_ALLOWED_SCHEMES; the
	// credentials were never sent to it.
	ReasonBMCAddressNotAllowed QuarantineReason = "bmc-address-not-allowed"
)

var allQuarantineReasons = []QuarantineReason{
	ReasonCredentialsMissing, ReasonCredentialsAmbiguous, ReasonCredentialsInvalid,
	ReasonBMCAddressInvalid, ReasonBootMACInvalid, ReasonCredentialsRefused,
	ReasonRegistrationFailed, ReasonBMCAddressNotAllowed,
}

// Valid reports whether r is one of the defined reasons.
func (r QuarantineReason) Valid() bool {
	for _, k := range allQuarantineReasons {
		if r == k {
			return true
		}
	}
	return false
}

// maxChangelog is ObjectChange.message's max_length in NetBox.
const maxChangelog = 200

// Quarantine sets a free device (staged, unowned, in the pool; read with
// GetDevice) to status failed with one conditional PATCH and a sanitized
// changelog_message, for deterministic credential/BMC data problems only – not
// for outages. A device that is no longer free, or changed since the read
// (412), is left alone: KindPrecondition, reselect. On success *d is refreshed.
// An administrator fixes the data and sets the device staged again.
func (c *Claims) Quarantine(ctx context.Context, d *Device, reason QuarantineReason, message string) error {
	if !reason.Valid() {
		return newError(KindInvalid, "quarantine", "unknown quarantine reason %q", quote.Truncate(string(reason), 40))
	}
	if d == nil || d.ETag == "" {
		return newError(KindInvalid, "quarantine", "the device must come from GetDevice (it carries the ETag)")
	}
	if err := c.usable("quarantine"); err != nil {
		return err
	}
	if !d.Free() {
		return newError(KindPrecondition, "quarantine", "device %d is no longer staged and unowned; not quarantined", d.ID)
	}
	msg := sanitizeMessage(fmt.Sprintf("o2ims quarantine (%s): %s", reason, message), maxChangelog)
	nd, err := c.patchDevice(ctx, "quarantine", d.ID, d.ETag, devicePatch{status: StatusFailed, changelog: msg})
	if err != nil {
		return err
	}
	*d = *nd
	c.metrics.quarantine(reason)
	c.log.Warn("NetBox device quarantined", zap.Int32("deviceID", d.ID), zap.String("reason", string(reason)))
	return nil
}

// QuarantineResult is the outcome of QuarantineClaimed.
type QuarantineResult string

const (
	Quarantined QuarantineResult = "quarantined" // this call set the device failed and cleared our uid
	// NotOwned: requestUID does not own it (someone else, an administrator, or our own earlier write that
	// landed unanswered): never touched.
	NotOwned   QuarantineResult = "not-owned"
	DeviceGone QuarantineResult = "gone" // the device no longer exists in NetBox
)

// QuarantineClaimed sets a device requestUID owns to status failed and clears the owner with one
// conditional PATCH and a sanitized changelog_message, for a defect found after the claim (the BMC
// refused the credentials, or could not be registered for long enough). It is one write, never a release followed by a quarantine: in between,
// another request could claim the defective device. A 412 re-reads and re-checks (bounded); a device no
// longer ours is left alone. Timeout/5xx: error with MayHaveLanded, not replayed; the next call re-reads.
func (c *Claims) QuarantineClaimed(ctx context.Context, id int32, requestUID string, reason QuarantineReason, message string) (QuarantineResult, error) {
	if !reason.Valid() {
		return "", newError(KindInvalid, "quarantine", "unknown quarantine reason %q", quote.Truncate(string(reason), 40))
	}
	if err := checkUID("quarantine", requestUID); err != nil {
		return "", err
	}
	if err := c.usable("quarantine"); err != nil {
		return "", err
	}
	msg := sanitizeMessage(fmt.Sprintf("o2ims quarantine (%s): %s", reason, message), maxChangelog)
	log := c.log.With(zap.Int32("deviceID", id))
	for round := 0; round < maxReleaseRounds; round++ {
		d, err := c.getDevice(ctx, "quarantine", id)
		if IsKind(err, KindNotFound) {
			return DeviceGone, nil
		}
		if err != nil {
			return "", err
		}
		if !d.OwnedBy(requestUID) {
			log.Info("NetBox device no longer ours; not quarantined")
			return NotOwned, nil
		}
		_, err = c.patchDevice(ctx, "quarantine", id, d.ETag,
			devicePatch{status: StatusFailed, custom: map[string]any{c.cfg.Fields.RequestUID: nil}, changelog: msg})
		switch {
		case err == nil:
			c.metrics.quarantine(reason)
			log.Warn("NetBox device quarantined", zap.String("reason", string(reason)))
			return Quarantined, nil
		case IsKind(err, KindPrecondition):
			continue // changed since our read: re-read and re-check
		case IsKind(err, KindNotFound):
			return DeviceGone, nil
		default:
			return "", err
		}
	}
	return "", &Error{Kind: KindPrecondition, Op: "quarantine", Retryable: true,
		Err: errString("the device kept changing during its quarantine; try again")}
}
