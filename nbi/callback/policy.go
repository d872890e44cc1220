// Package callback decides which callback URIs the O-Cloud POSTs to: one policy for every kind of
// subscription (inventory now, alarms later), checked when a subscription is created and again at every
// connection a delivery makes, on the address actually dialled (so a name that resolves elsewhere later —
// DNS rebinding — gains nothing).
//
// Refused by default: loopback, link-local (169.254.0.0/16, fe80::/10), unspecified (0.0.0.0/8, ::),
// multicast, reserved (240.0.0.0/4 with the broadcast address, IPv4-compatible IPv6), the Kubernetes API
// server's addresses and the operator's own (its listeners, its pod IP), and any IPv4 address not written
// in dotted decimal (2130706433, 0177.0.0.1, 127.1, 0x7f.1: resolvers disagree on what they mean).
// Private ranges (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7, fec0::/10) are allowed — SMOs usually
// live there — unless DenyPrivate. Allow and Deny (CIDR lists) override the address classes both ways:
// the longest prefix naming an address decides, and Deny wins a tie. Nothing overrides the API server and
// the operator's own endpoints.
package callback

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/o2ims-operator/o2ims-operator/internal/netcause"
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

// Config is the policy's part of the environment.
type Config struct {
	DenyPrivate bool           // CALLBACK_DENY_PRIVATE
	Allow, Deny []netip.Prefix // CALLBACK_ALLOW_CIDRS, CALLBACK_DENY_CIDRS (comma-separated)
	CAFile      string         // CALLBACK_CA_FILE: PEM bundle trusted for https callbacks besides the system's
	SkipTest    bool           // CALLBACK_TEST=false: accept a subscription without testing its callback (test.go)
	TestTimeout time.Duration  // CALLBACK_TEST_TIMEOUT: how long the test waits for the 204 (0: DefaultTestTimeout)
	SMOHosts    []string       // SMO_URL's hosts: callbacks must be on one of them (smohosts.go); none: any host
}

// ConfigFromEnv reads CALLBACK_*; a bad value is one line naming the variable.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	var c Config
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	if v := get("CALLBACK_DENY_PRIVATE"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return Config{}, fmt.Errorf("CALLBACK_DENY_PRIVATE=%q: want true or false", v)
		}
		c.DenyPrivate = b
	}
	for _, l := range []struct {
		env string
		dst *[]netip.Prefix
	}{{"CALLBACK_ALLOW_CIDRS", &c.Allow}, {"CALLBACK_DENY_CIDRS", &c.Deny}} {
		for _, s := range strings.Split(get(l.env), ",") {
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return Config{}, fmt.Errorf("%s: %q is not a CIDR (such as 10.0.0.0/8 or fd00::/8)", l.env, s)
			}
			*l.dst = append(*l.dst, p.Masked())
		}
	}
	c.CAFile = get("CALLBACK_CA_FILE")
	if err := testConfigFromEnv(get, &c); err != nil {
		return Config{}, err
	}
	if err := smoConfigFromEnv(get, &c); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Policy decides. Build it with New; the With methods configure it before use.
type Policy struct {
	cfg    Config
	roots  *x509.CertPool // nil: the system's
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)

	mu        sync.Mutex
	apiServer []netip.AddrPort // port 0: any port
	own       func() []string  // the operator's listeners and pod IP, read at each check
	locals    []netip.Addr     // this host's interface addresses (an unspecified listener is on all)
	localsSet bool
	outgoing  Outgoing // the SMO client's credentials on every request (outgoing.go); nil: none
}

// New builds the policy of cfg, reading its CA bundle.
func New(cfg Config) (*Policy, error) {
	p := &Policy{cfg: cfg, lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
		return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	}}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("CALLBACK_CA_FILE: %v", err)
		}
		roots, err := x509.SystemCertPool()
		if err != nil || roots == nil {
			roots = x509.NewCertPool()
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CALLBACK_CA_FILE=%q holds no PEM certificate", cfg.CAFile)
		}
		p.roots = roots
	}
	return p, nil
}

// Default is the policy with no configuration: what an unconfigured store or notifier uses.
func Default() *Policy {
	p, _ := New(Config{})
	return p
}

// WithLookup replaces the resolver (tests; the default is the system's).
func (p *Policy) WithLookup(fn func(ctx context.Context, host string) ([]netip.Addr, error)) *Policy {
	p.lookup = fn
	return p
}

// WithAPIServer names the Kubernetes API server: each of hosts is an address, host:port or URL (a rest
// Config's Host, KUBERNETES_SERVICE_HOST). Without a port every port of the address is refused (a
// Service's ClusterIP is the API server's alone); with one only that endpoint (an out-of-cluster API
// server may share its address). A name is resolved now.
func (p *Policy) WithAPIServer(ctx context.Context, hosts ...string) *Policy {
	for _, h := range hosts {
		for _, ap := range p.endpoints(ctx, h) {
			p.mu.Lock()
			p.apiServer = append(p.apiServer, ap)
			p.mu.Unlock()
		}
	}
	return p
}

// WithOwn names the operator's own endpoints, read at every check (a listener may bind after the policy
// is built): "ip:port" of each listener (an unspecified ip: every address of this host), and addresses
// without a port (the pod IP: every port).
func (p *Policy) WithOwn(fn func() []string) *Policy {
	p.mu.Lock()
	p.own = fn
	p.mu.Unlock()
	return p
}

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

// CheckAddr decides one endpoint: nil when a callback may connect to it.
func (p *Policy) CheckAddr(ap netip.AddrPort) error {
	a, port := canonical(ap.Addr()), ap.Port()
	if !a.IsValid() {
		return &RefusedError{Reason: Notation, Detail: "no address"}
	}
	if r := p.protected(a, port); r != "" {
		return &RefusedError{Reason: r, Addr: a}
	}
	allow, deny := longest(p.cfg.Allow, a), longest(p.cfg.Deny, a)
	if deny >= 0 && deny >= allow {
		return &RefusedError{Reason: Denied, Addr: a}
	}
	if allow > deny {
		return nil
	}
	if r := classify(a); r != "" && (r != Private || p.cfg.DenyPrivate) {
		return &RefusedError{Reason: r, Addr: a}
	}
	return nil
}

// longest is the length of the longest prefix of ps holding a (-1: none).
func longest(ps []netip.Prefix, a netip.Addr) int {
	best := -1
	for _, p := range ps {
		if p.Contains(a) && p.Bits() > best {
			best = p.Bits()
		}
	}
	return best
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

// protected is APIServer or Operator when a:port is one of theirs, else "".
func (p *Policy) protected(a netip.Addr, port uint16) Reason {
	p.mu.Lock()
	api, own := p.apiServer, p.own
	p.mu.Unlock()
	for _, e := range api {
		if e.Addr() == a && (e.Port() == 0 || e.Port() == port) {
			return APIServer
		}
	}
	if own == nil {
		return ""
	}
	for _, s := range own() {
		for _, e := range p.endpoints(context.Background(), s) {
			switch {
			case e.Addr() == a && (e.Port() == 0 || e.Port() == port):
				return Operator
			case e.Addr().IsUnspecified() && e.Port() == port && (a.IsLoopback() || a.IsUnspecified() || p.isLocal(a)):
				return Operator
			}
		}
	}
	return ""
}

// isLocal: a is an address of one of this host's interfaces.
func (p *Policy) isLocal(a netip.Addr) bool {
	p.mu.Lock()
	if !p.localsSet {
		p.localsSet = true
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, x := range addrs {
				if n, ok := x.(*net.IPNet); ok {
					if l, ok := netip.AddrFromSlice(n.IP); ok {
						p.locals = append(p.locals, canonical(l))
					}
				}
			}
		}
	}
	locals := p.locals
	p.mu.Unlock()
	for _, l := range locals {
		if l == a {
			return true
		}
	}
	return false
}

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

// CheckURL decides a callback at creation: its host (an address, or every address its name resolves to
// now) and port. It assumes an absolute http(s) URI with a host (the subscription's own validation).
func (p *Policy) CheckURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return &RefusedError{Reason: Notation, Host: raw, Detail: "not a URI"}
	}
	host, ip, err := Host(u)
	if err != nil {
		return err
	}
	port, err := portOf(u)
	if err != nil {
		return err
	}
	if ip.IsValid() {
		if err := p.checkSMO(host, []netip.Addr{ip}); err != nil {
			return err
		}
		return p.CheckAddr(netip.AddrPortFrom(ip, port))
	}
	if name := strings.TrimSuffix(strings.ToLower(host), "."); name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return &RefusedError{Reason: Loopback, Host: host, Addr: netip.MustParseAddr("127.0.0.1")} // RFC 6761
	}
	addrs, err := p.resolve(ctx, host)
	if err != nil {
		return err
	}
	if err := p.checkSMO(host, addrs); err != nil {
		return err
	}
	for _, a := range addrs {
		if err := p.CheckAddr(netip.AddrPortFrom(a, port)); err != nil {
			var re *RefusedError
			if errors.As(err, &re) {
				re.Host = host
			}
			return err
		}
	}
	return nil
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

func (p *Policy) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	addrs, err := p.lookup(ctx, host)
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) && (dnsErr.IsTemporary || dnsErr.IsTimeout) && !dnsErr.IsNotFound {
		// The resolver did not answer: nothing is known of the host yet, so it is not refused.
		return nil, &LookupError{Host: host, Err: err}
	}
	if err != nil || len(addrs) == 0 {
		detail := "it resolves to no address"
		if err != nil {
			detail = "it does not resolve: " + lookupText(err)
		}
		return nil, &RefusedError{Reason: Unresolved, Host: host, Detail: detail}
	}
	return addrs, nil
}

// LookupError is a resolver that did not answer (a timeout, a temporary failure): retryable, and no
// refusal — the policy has nothing to judge yet.
type LookupError struct {
	Host string
	Err  error
}

func (e *LookupError) Error() string {
	return fmt.Sprintf("callback host %q could not be resolved right now: %s", e.Host, lookupText(e.Err))
}

// lookupText is a resolver's error without the DNS server's address (or a UDP socket's) that Go's text
// carries ("lookup smo.example on 10.96.0.10:53: …"): it is answered to the caller and logged.
func lookupText(err error) string {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return "lookup " + dnsErr.Name + ": " + netcause.Redact(dnsErr.Err)
	}
	return netcause.Redact(err.Error())
}

func (e *LookupError) Unwrap() error { return e.Err }

// HTTPAnswer is how the NBI answers a subscription whose callback it met (nbi.Answerer): 503, retry in 5 s
// — the resolver may answer then, and the caller did nothing wrong.
func (e *LookupError) HTTPAnswer() (status int, detail string, retryAfter int) {
	return http.StatusServiceUnavailable, e.Error() + "; retry later", 5
}

// Control is a net.Dialer Control hook: it refuses a connection to an address the policy refuses, on the
// address about to be connected to (after every resolution).
func (p *Policy) Control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &RefusedError{Reason: Notation, Host: address, Detail: "not an address and port"}
	}
	return p.CheckAddr(ap)
}

// Client is the HTTP client deliveries use: every connection through Control (names resolved by the
// policy's resolver), no proxy (a proxy would connect where the policy cannot see), certificates verified
// against the system's roots and CALLBACK_CA_FILE, redirects refused (the callback registered is the only
// one POSTed to, and nothing it carries goes elsewhere); with WithOutgoing, every request carries the SMO
// client's credentials (outgoing.go).
func (p *Policy) Client(timeout time.Duration) *http.Client {
	dialer := &net.Dialer{Timeout: timeout, Control: p.Control}
	return &http.Client{
		Timeout: timeout,
		Transport: p.outgoingRoundTripper(&http.Transport{
			Proxy: nil,
			DialContext: func(ctx context.Context, network, address string) (net.Conn, error) {
				host, port, err := net.SplitHostPort(address)
				if err != nil {
					return nil, err
				}
				var addrs []netip.Addr
				if a, err := netip.ParseAddr(host); err == nil {
					addrs = []netip.Addr{a}
				} else if addrs, err = p.resolve(ctx, host); err != nil {
					return nil, err
				}
				if err := p.checkSMO(host, addrs); err != nil {
					return nil, err
				}
				var last error
				for _, a := range addrs {
					conn, err := dialer.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
					if err == nil {
						return conn, nil
					}
					last = err
				}
				return nil, last
			},
			TLSClientConfig:     &tls.Config{RootCAs: p.roots, MinVersion: tls.VersionTLS12},
			ForceAttemptHTTP2:   true,
			MaxIdleConnsPerHost: 2,
			IdleConnTimeout:     90 * time.Second,
			TLSHandshakeTimeout: timeout,
		}),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Refusal is the policy's refusal inside err (a delivery's), or nil.
func Refusal(err error) *RefusedError {
	var re *RefusedError
	if errors.As(err, &re) {
		return re
	}
	return nil
}
