package callback

// Address classes: what the policy refuses by default and how a refusal reads.

import (
	"errors"
	"fmt"
	"net/netip"
)

// Reason is why an address is refused: a bounded set, fit for a metric label.
type Reason string

const (
	Loopback    Reason = "loopback"
	LinkLocal   Reason = "link_local"
	Unspecified Reason = "unspecified"
	Multicast   Reason = "multicast"
	Reserved    Reason = "reserved"
	Private     Reason = "private"     // only with DenyPrivate
	APIServer   Reason = "apiserver"   // the Kubernetes API server
	Operator    Reason = "operator"    // the operator's own listeners and pod IP
	Denied      Reason = "denied_cidr" // CALLBACK_DENY_CIDRS
	Notation    Reason = "notation"    // an IPv4 address not in dotted decimal, an unparsable IPv6 literal
	Unresolved  Reason = "unresolved"  // the host resolves to no address
)

// Reasons is every Reason, for metrics that want their series to exist at zero.
var Reasons = []Reason{Loopback, LinkLocal, Unspecified, Multicast, Reserved, Private, APIServer, Operator, Denied, Notation, Unresolved, NotSMO}

var why = map[Reason]string{
	Loopback:    "a loopback address",
	LinkLocal:   "a link-local address (such as the cloud metadata service)",
	Unspecified: "an unspecified address",
	Multicast:   "a multicast address",
	Reserved:    "a reserved address",
	Private:     "a private address (CALLBACK_DENY_PRIVATE=true)",
	APIServer:   "the Kubernetes API server",
	Operator:    "the operator itself",
	Denied:      "an address CALLBACK_DENY_CIDRS refuses",
}

// RefusedError is a callback (or one connection of a delivery) the policy refuses.
type RefusedError struct {
	Reason Reason
	Host   string     // as written in the callback ("" when only the address is known: a dial)
	Addr   netip.Addr // the address refused (invalid for Notation and Unresolved)
	Detail string     // for Notation and Unresolved
}

func (e *RefusedError) Error() string {
	switch {
	case e.Detail != "":
		return fmt.Sprintf("callback host %q refused: %s", e.Host, e.Detail)
	case e.Host != "" && e.Host != e.Addr.String():
		return fmt.Sprintf("callback host %q resolves to %s, %s: callbacks may not reach inside the O-Cloud", e.Host, e.Addr, why[e.Reason])
	}
	return fmt.Sprintf("callback address %s is %s: callbacks may not reach inside the O-Cloud", e.Addr, why[e.Reason])
}

var (
	v4Zero      = netip.MustParsePrefix("0.0.0.0/8")
	v4Reserved  = netip.MustParsePrefix("240.0.0.0/4")
	v4Shared    = netip.MustParsePrefix("100.64.0.0/10")
	v6Compat    = netip.MustParsePrefix("::/96")
	v6NAT64     = netip.MustParsePrefix("64:ff9b::/96")
	v6To4       = netip.MustParsePrefix("2002::/16")
	v6SiteLocal = netip.MustParsePrefix("fec0::/10")
)

// classify is the address class of a that the default refuses (Private: allowed unless DenyPrivate), ""
// for a public address. IPv6 forms that carry an IPv4 address (NAT64, 6to4) are that address's class.
func classify(a netip.Addr) Reason {
	switch {
	case a.IsLoopback():
		return Loopback
	case a.IsUnspecified(), a.Is4() && v4Zero.Contains(a):
		return Unspecified
	case a.IsLinkLocalUnicast():
		return LinkLocal
	case a.IsMulticast():
		return Multicast
	case a.Is4() && v4Reserved.Contains(a):
		return Reserved
	case a.IsPrivate(), v4Shared.Contains(a), v6SiteLocal.Contains(a):
		return Private
	case v6Compat.Contains(a):
		return Reserved // IPv4-compatible IPv6, deprecated: nothing legitimate is there
	case v6NAT64.Contains(a):
		b := a.As16()
		return classify(netip.AddrFrom4([4]byte(b[12:16])))
	case v6To4.Contains(a):
		b := a.As16()
		return classify(netip.AddrFrom4([4]byte(b[2:6])))
	}
	return ""
}

// Refusal is the policy's refusal inside err (a delivery's), or nil.
func Refusal(err error) *RefusedError {
	var re *RefusedError
	if errors.As(err, &re) {
		return re
	}
	return nil
}
