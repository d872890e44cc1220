package netbox

import (
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/o2ims-operator/o2ims-operator/internal/quote"
)

// Metal3 BMC address schemes (baremetal-operator pkg/hardwareutils/bmc):
// name → allowed "+http"/"+https" suffixes.
var bmcSchemes = map[string][]string{
	"ipmi":                 nil,
	"libvirt":              nil,
	"irmc":                 nil,
	"redfish":              {"http", "https"},
	"ilo5-redfish":         {"http", "https"},
	"idrac-redfish":        {"http", "https"},
	"redfish-virtualmedia": {"http", "https"},
	"ilo5-virtualmedia":    {"http", "https"},
	"idrac-virtualmedia":   {"http", "https"},
	"redfish-uefihttp":     {"http", "https"},
	"ilo4":                 {"https"},
	"ilo4-virtualmedia":    {"https"},
	"ilo5":                 {"https"},
}

func knownBMCScheme(s string) bool {
	name, suffix, plus := strings.Cut(s, "+")
	allowed, ok := bmcSchemes[name]
	if !ok {
		return false
	}
	return !plus || slices.Contains(allowed, suffix)
}

// DNS names as Metal3 checks them.
var dnsNameRE = regexp.MustCompile(`^(([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9\-]{0,61}[a-zA-Z0-9])\.)*([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9\-]{0,61}[A-Za-z0-9])$`)

// BMCDataProblem reports a deterministic problem with the device's BMC address
// or boot MAC – grounds for quarantine. The message never quotes the values.
func (d *Device) BMCDataProblem() (QuarantineReason, string, bool) {
	if msg := bmcAddressProblem(d.BMCAddress, d.bmcNotText); msg != "" {
		return ReasonBMCAddressInvalid, msg, true
	}
	if msg := bootMACProblem(d.BootMAC, d.macNotText); msg != "" {
		return ReasonBootMACInvalid, msg, true
	}
	return "", "", false
}

// bmcAddressProblem follows Metal3's parsing (a bare host[:port] means IPMI;
// "host:port" without "//" is reparsed as a URL) and adds what Metal3 would
// only find later: a host is required, credentials must not be embedded.
func bmcAddressProblem(addr string, notText bool) string {
	if notText {
		return "BMC address is not text"
	}
	if strings.TrimSpace(addr) == "" {
		return "BMC address is missing"
	}
	if addr != strings.TrimSpace(addr) || strings.ContainsAny(addr, " \t\r\n") {
		return "BMC address contains whitespace"
	}
	u, msg := parseBMCAddress(addr)
	if msg != "" {
		return msg
	}
	if !knownBMCScheme(u.Scheme) {
		return "BMC address type " + strconv.Quote(quote.Truncate(u.Scheme, 40)) + " is not supported by Metal3"
	}
	if u.User != nil {
		return "BMC address must not embed credentials"
	}
	host := u.Hostname()
	if host == "" {
		return "BMC address has no host"
	}
	if net.ParseIP(host) == nil && !dnsNameRE.MatchString(host) {
		return "BMC address host is not a valid hostname or IP address"
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "BMC address port is invalid"
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return "BMC address port is invalid"
	}
	return ""
}

// parseBMCAddress parses a BMC address as Metal3 does (a bare host[:port] means IPMI; "host:port"
// without "//" is reparsed as a URL).
func parseBMCAddress(addr string) (*url.URL, string) {
	u, err := url.Parse(addr)
	if err != nil {
		if strings.Contains(addr, ":") {
			if _, _, err2 := net.SplitHostPort(addr); err2 != nil {
				return nil, "BMC address cannot be parsed"
			}
		}
		u = &url.URL{Scheme: "ipmi", Host: addr}
	} else {
		if u.Opaque != "" {
			if u, err = url.Parse(strings.Replace(addr, ":", "://", 1)); err != nil {
				return nil, "BMC address cannot be parsed"
			}
		}
		if u.Scheme == "" && u.Hostname() == "" {
			if u, err = url.Parse("ipmi://" + addr); err != nil {
				return nil, "BMC address cannot be parsed"
			}
		}
	}
	return u, ""
}

// BMCEndpoint is the scheme and host Metal3 would connect to for a BMC address BMCDataProblem accepts
// (ok false for any other).
func BMCEndpoint(addr string) (scheme, host string, ok bool) {
	if bmcAddressProblem(addr, false) != "" {
		return "", "", false
	}
	u, _ := parseBMCAddress(addr)
	return strings.ToLower(u.Scheme), u.Hostname(), true
}

func bootMACProblem(mac string, notText bool) string {
	if notText {
		return "boot MAC is not text"
	}
	if strings.TrimSpace(mac) == "" {
		return "boot MAC is missing"
	}
	hw, err := net.ParseMAC(mac)
	if err != nil || len(hw) != 6 {
		return "boot MAC is not a valid 48-bit MAC address"
	}
	zero := true
	for _, b := range hw {
		if b != 0 {
			zero = false
		}
	}
	if zero || hw[0]&1 == 1 {
		return "boot MAC is all-zero or a multicast/broadcast address"
	}
	return ""
}
