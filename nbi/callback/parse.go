package callback

// Parsing: how the policy reads a callback's host and port, and the endpoints it is told of.

import (
	"context"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// endpoints reads "ip", "ip:port", "host", "host:port" or a URL into addresses; a name is resolved.
func (p *Policy) endpoints(ctx context.Context, s string) []netip.AddrPort {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	if u, err := url.Parse(s); err == nil && u.Host != "" && (u.Scheme == "http" || u.Scheme == "https") {
		s = u.Host
		if u.Port() == "" {
			s = net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
		}
	}
	host, port := s, uint16(0)
	if h, ps, err := net.SplitHostPort(s); err == nil {
		n, err := strconv.ParseUint(ps, 10, 16)
		if err != nil {
			return nil
		}
		host, port = h, uint16(n)
	}
	host = strings.Trim(host, "[]")
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.AddrPort{netip.AddrPortFrom(canonical(a), port)}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := p.lookup(ctx, host)
	if err != nil {
		return nil
	}
	var out []netip.AddrPort
	for _, a := range addrs {
		out = append(out, netip.AddrPortFrom(canonical(a), port))
	}
	return out
}

// canonical is a's comparable form: IPv4-mapped IPv6 as IPv4, no zone.
func canonical(a netip.Addr) netip.Addr { return a.Unmap().WithZone("") }

// Host reads a callback URI's host as the policy does: an IP literal (IPv6 with a zone or IPv4-mapped
// included) is its address; an IPv4 address in any notation but dotted decimal is refused (Notation); a
// name is returned as ip invalid.
func Host(u *url.URL) (host string, ip netip.Addr, err error) {
	host = u.Hostname()
	if strings.Contains(host, ":") {
		a, perr := netip.ParseAddr(host)
		if perr != nil {
			return host, netip.Addr{}, &RefusedError{Reason: Notation, Host: host, Detail: "not an IPv6 address"}
		}
		return host, canonical(a), nil
	}
	if a, perr := netip.ParseAddr(host); perr == nil {
		return host, a, nil
	}
	// WHATWG URL and inet_aton read a host whose last label is a number as an IPv4 address (decimal,
	// octal, hexadecimal, one to four parts); a DNS name never ends so. Written in dotted decimal it
	// parsed above, so anything else is refused rather than guessed at.
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	if name == "" || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789.-_") != "" {
		return host, netip.Addr{}, &RefusedError{Reason: Notation, Host: host,
			Detail: "a host name is letters, digits, hyphens and dots (an internationalised name in its xn-- form)"}
	}
	last := name[strings.LastIndexByte(name, '.')+1:]
	if numeric(last) {
		return host, netip.Addr{}, &RefusedError{Reason: Notation, Host: host,
			Detail: "an IPv4 address is written in dotted decimal (such as 192.0.2.1), without leading zeros"}
	}
	return host, netip.Addr{}, nil
}

func numeric(label string) bool {
	if label == "" {
		return false
	}
	if h, ok := strings.CutPrefix(label, "0x"); ok {
		return strings.Trim(h, "0123456789abcdef") == ""
	}
	return strings.Trim(label, "0123456789") == ""
}

func portOf(u *url.URL) (uint16, error) {
	if ps := u.Port(); ps != "" {
		n, err := strconv.ParseUint(ps, 10, 16)
		if err != nil {
			return 0, &RefusedError{Reason: Notation, Host: u.Host, Detail: "invalid port"}
		}
		return uint16(n), nil
	}
	if u.Scheme == "https" {
		return 443, nil
	}
	return 80, nil
}
