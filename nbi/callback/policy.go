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
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

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
