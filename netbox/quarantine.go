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
)

var allQuarantineReasons = []QuarantineReason{
	ReasonCredentialsMissing, ReasonCredentialsAmbiguous, ReasonCredentialsInvalid,
	ReasonBMCAddressInvalid, ReasonBootMACInvalid,
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
func (c *Client) Quarantine(ctx context.Context, d *Device, reason QuarantineReason, message string) error {
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
	nd, err := c.patchDevice(ctx, "quarantine", d.ID, d.ETag, StatusFailed, nil, msg)
	if err != nil {
		return err
	}
	*d = *nd
	c.metrics.quarantine(reason)
	c.log.Warn("NetBox device quarantined", zap.Int32("deviceID", d.ID), zap.String("reason", string(reason)))
	return nil
}
