// Package netcause words network failures for a status, an event or an INFO log: by their class, never
// with the host, IP address, port, DNS server or URL that Go's errors carry ("Get \"https://netbox.internal/
// api/status/\": dial tcp 10.20.30.40:443: connect: connection refused" says "connection refused"). The
// details stay available to a DEBUG log, where the callers put them.
package netcause

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
)

// Generic is the class of a failure none of the others fits; Timeout that of a deadline that is no
// connection's, handshake's or answer's own.
const (
	Generic = "transport failure"
	Timeout = "timed out"
)

// Of names err's class: a DNS name not found, a DNS server that does not answer, a refused, reset or closed
// connection, a timeout (connecting, the TLS handshake, awaiting the answer), a TLS certificate that is
// not trusted, expired or made for another name, a proxy's failure ("proxy: " and the class) — else
// Generic.
func Of(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "proxyconnect" {
		// net/http wraps a failure to reach the proxy so (net/http/transport.go, Issue 16997).
		return "proxy: " + of(op.Err)
	}
	return of(err)
}

func of(err error) string {
	if s := dnsClass(err); s != "" {
		return s
	}
	if s := tlsClass(err); s != "" {
		return s
	}
	if s := connClass(err); s != "" {
		return s
	}
	if s := timeoutClass(err); s != "" {
		return s
	}
	if s := proxyRefusal(err); s != "" {
		return s
	}
	return Generic
}

// dnsClass: net.DNSError as the resolver builds it (net/dnsclient_unix.go): IsNotFound for NXDOMAIN or no
// such record, IsTimeout when the server did not answer in time, else the server could not be asked or
// failed (refused, SERVFAIL).
func dnsClass(err error) string {
	var dns *net.DNSError
	switch {
	case !errors.As(err, &dns):
		return ""
	case dns.IsNotFound:
		return "DNS: name not found"
	case dns.IsTimeout:
		return "DNS: no answer from the DNS server (timeout)"
	}
	return "DNS: lookup failed (DNS server unreachable or failing)"
}

func tlsClass(err error) string {
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		record   tls.RecordHeaderError
		alert    tls.AlertError
	)
	switch {
	case errors.As(err, &unknown):
		return "TLS: certificate signed by an unknown authority"
	case errors.As(err, &hostname):
		return "TLS: certificate not valid for the host name asked for"
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return "TLS: certificate expired or not yet valid"
	case errors.As(err, &invalid):
		return "TLS: certificate invalid"
	case errors.As(err, &record) || textIn(err, plainAnswer):
		return "TLS: the server does not speak TLS"
	case errors.As(err, &alert):
		return "TLS: handshake refused by the server"
	}
	return ""
}

func connClass(err error) string {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset"
	case errors.Is(err, syscall.EHOSTUNREACH):
		return "host unreachable"
	case errors.Is(err, syscall.ENETUNREACH):
		return "network unreachable"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed before an answer (EOF)"
	}
	return ""
}

// net/http's own timeouts are unexported types; their texts are stable (net/http/transport.go).
const (
	tlsHandshakeTimeout   = "net/http: TLS handshake timeout"
	responseHeaderTimeout = "net/http: timeout awaiting response headers"
	// What net/http makes of a tls.RecordHeaderError that looks like an HTTP answer.
	plainAnswer = "http: server gave HTTP response to HTTPS client"
)

// textIn reports whether err or an error it wraps reads text.
func textIn(err error, text string) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == text {
			return true
		}
	}
	return false
}

func timeoutClass(err error) string {
	var op *net.OpError
	var ne net.Error
	switch {
	case textIn(err, tlsHandshakeTimeout):
		return "TLS handshake timed out"
	case textIn(err, responseHeaderTimeout):
		return "timed out awaiting the answer's headers"
	case errors.As(err, &op) && op.Op == "dial" && op.Timeout():
		return "connect timed out"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return Timeout
	}
	return ""
}

// proxyRefusal: a proxy that answers CONNECT with anything but 200 makes net/http fail with the bare
// status text ("Forbidden"; net/http/transport.go, dialConn): no other failure reads so.
func proxyRefusal(err error) string {
	inner := err
	var ue interface{ Unwrap() error }
	for errors.As(inner, &ue) && ue.Unwrap() != nil {
		inner = ue.Unwrap()
	}
	text := inner.Error()
	for code := 400; code < 600; code++ {
		if t := http.StatusText(code); t != "" && t == text {
			return "proxy refused the tunnel (" + text + ")"
		}
	}
	return ""
}
