package netbox

import (
	"errors"
	"regexp"
	"strings"
	"unicode"

	"github.com/o2ims-operator/o2ims-operator/internal/netcause"
	"github.com/o2ims-operator/o2ims-operator/internal/quote"
)

var (
	// Authorization-shaped fragments and v2 tokens: an echoing proxy or server
	// must not get our token into an error, a log or a changelog.
	authFragment = regexp.MustCompile(`\b(Token|Bearer|token|bearer)\s+[A-Za-z0-9_.+/=-]{16,}`)
	v2Token      = regexp.MustCompile(`nbt_[A-Za-z0-9._-]+`)
	// URLs: BMC addresses are URLs and may carry user:password@.
	urlFragment = regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://\S+`)
	userInfo    = regexp.MustCompile(`\S+:\S+@\S+`)
)

// sanitizeText makes s a single printable line of at most max runes with
// token-shaped fragments masked.
func sanitizeText(s string, max int) string {
	s = strings.ToValidUTF8(s, "?")
	s = authFragment.ReplaceAllString(s, "$1 [redacted]")
	s = v2Token.ReplaceAllString(s, "[redacted]")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	return quote.Truncate(s, max)
}

// sanitizeMessage is sanitizeText plus removal of URLs, credentials and
// addresses, for text we put into NetBox (changelog_message), errors or logs: a
// caller's message might quote a BMC address, a server's an upstream's.
func sanitizeMessage(s string, max int) string {
	s = urlFragment.ReplaceAllString(s, "[address]")
	s = userInfo.ReplaceAllString(s, "[redacted]")
	return sanitizeText(netcause.Redact(s), max)
}

// transportCause words a failed attempt by its class only ("connection refused", "DNS: name not
// found", "TLS: certificate signed by an unknown authority"…): it becomes an Error's text, and from
// there a waiting request's status message, an event and /readyz, which must never carry NetBox's host,
// its address, the DNS server's or a proxy's (issue 34). The details go to the DEBUG log only.
func transportCause(err error) string {
	var at *attemptTimeoutError
	if errors.As(err, &at) {
		return at.Error()
	}
	return netcause.Of(err)
}

// redactSecret removes an exact secret (the current token) from s.
func redactSecret(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "[redacted]")
}
