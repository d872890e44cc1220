package callback

// Dialing: resolution, and the HTTP client whose every connection the policy checks on the address
// actually dialled.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"github.com/o2ims-operator/o2ims-operator/internal/netcause"
)

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
