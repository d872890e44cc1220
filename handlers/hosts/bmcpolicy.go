package hosts

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/o2ims-operator/o2ims-operator/netbox"
)

// AddressPolicy says where the operator may send a host's BMC credentials (BMC_ALLOW_CIDRS,
// BMC_ALLOWED_SCHEMES): the BMC address is a NetBox field any NetBox editor can set, and Metal3 sends
// the credentials to it. A device whose address the policy refuses is never registered (no BMC Secret,
// no BareMetalHost); see claim.go for what happens to it.
type AddressPolicy struct {
	// CIDRs: the BMC must be an IP literal inside one of them; empty: any address but loopback,
	// link-local, unspecified or multicast (the operator's own node, a cloud's metadata service).
	CIDRs []netip.Prefix
	// Schemes: the Metal3 BMC address types allowed, exactly; empty: every type but the plain-HTTP ones
	// ("redfish+http", "idrac-virtualmedia+http", …).
	Schemes []string
}

// ParseAddressPolicy reads BMC_ALLOW_CIDRS and BMC_ALLOWED_SCHEMES (comma lists).
func ParseAddressPolicy(cidrs, schemes string) (AddressPolicy, error) {
	var p AddressPolicy
	for _, c := range splitList(cidrs) {
		pfx, err := netip.ParsePrefix(c)
		if err != nil {
			return p, fmt.Errorf("BMC_ALLOW_CIDRS: %q is not a CIDR (like 10.20.0.0/16)", c)
		}
		p.CIDRs = append(p.CIDRs, pfx.Masked())
	}
	for _, s := range splitList(schemes) {
		p.Schemes = append(p.Schemes, strings.ToLower(s))
	}
	return p, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// refusal says why the policy refuses a BMC address ("" when it allows it). The address itself is
// never quoted (it goes to NetBox's changelog, events and status); only its type is.
func (p AddressPolicy) refusal(addr string) string {
	scheme, host, ok := netbox.BMCEndpoint(addr)
	if !ok {
		return "" // an invalid address is BMCDataProblem's to report
	}
	switch {
	case len(p.Schemes) > 0 && !slices.Contains(p.Schemes, scheme):
		return fmt.Sprintf("BMC address type %q is not in BMC_ALLOWED_SCHEMES", scheme)
	case len(p.Schemes) == 0 && strings.HasSuffix(scheme, "+http"):
		return fmt.Sprintf("BMC address type %q sends the credentials in clear over HTTP (allow it with BMC_ALLOWED_SCHEMES)", scheme)
	}
	ip, err := netip.ParseAddr(host)
	if len(p.CIDRs) == 0 {
		if err == nil && (ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsUnspecified() || ip.IsMulticast() || ip.IsLinkLocalMulticast()) {
			return "BMC address is a loopback, link-local, unspecified or multicast address"
		}
		return ""
	}
	if err != nil {
		return "BMC address is a name, and BMC_ALLOW_CIDRS admits IP addresses only"
	}
	ip = ip.Unmap()
	for _, pfx := range p.CIDRs {
		if pfx.Contains(ip) {
			return ""
		}
	}
	return "BMC address is outside BMC_ALLOW_CIDRS"
}
