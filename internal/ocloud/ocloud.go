// Package ocloud derives the O-Cloud's ids: UUIDv5 in the O-Cloud's id of what each object is in NetBox
// (or Cluster API), so every replica, every restart and every side agrees without storing them. One copy
// for the chain, which records the hosts' resource ids on the ProvisioningRequest
// (oCloudInfrastructureResourceIds), and the inventory API, which answers them: computed, never looked up.
package ocloud

import (
	"fmt"
	"strings"

	"github.com/google/uuid"
)

// defaultNamespace names the UUIDv5 space of a default O-Cloud id: derived from the NetBox URL, so every
// replica and every restart of one installation agrees without configuration.
var defaultNamespace = uuid.MustParse("6f3f8a0e-3a8e-5b41-9c4e-0b2d6f1e2a11")

// DefaultID is the O-Cloud id when OCLOUD_ID is not set: UUIDv5 of NETBOX_URL (without a trailing /).
func DefaultID(netboxURL string) uuid.UUID {
	return uuid.NewSHA1(defaultNamespace, []byte(strings.TrimRight(netboxURL, "/")))
}

// IDFromEnv is OCLOUD_ID when set (a UUID in its 36-character form), else DefaultID(netboxURL).
func IDFromEnv(getenv func(string) string, netboxURL string) (uuid.UUID, error) {
	v := strings.TrimSpace(getenv("OCLOUD_ID"))
	if v == "" {
		return DefaultID(netboxURL), nil
	}
	id, err := uuid.Parse(v)
	if err != nil || len(v) != 36 {
		return uuid.UUID{}, fmt.Errorf("%s=%q: want a UUID (8-4-4-4-12 hexadecimal digits)", "OCLOUD_ID", v)
	}
	return id, nil
}

// ID is the id of the object named by format and args in O-Cloud ocloud.
func ID(ocloud uuid.UUID, format string, args ...any) string {
	return uuid.NewSHA1(ocloud, []byte(fmt.Sprintf(format, args...))).String()
}

// ResourceID is the inventory resource id of NetBox device id in O-Cloud ocloud.
func ResourceID(ocloud uuid.UUID, device int32) string {
	return ID(ocloud, "netbox/dcim.device/%d", device)
}
