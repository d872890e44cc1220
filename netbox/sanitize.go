package netbox

import (
	"regexp"
	"strings"
	"unicode"

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

// sanitizeMessage is sanitizeText plus removal of URLs and credentials, for
// text we put into NetBox (changelog_message) or logs: a caller's message might
// quote a BMC address.
func sanitizeMessage(s string, max int) string {
	s = urlFragment.ReplaceAllString(s, "[address]")
	s = userInfo.ReplaceAllString(s, "[redacted]")
	return sanitizeText(s, max)
}

// redactSecret removes an exact secret (the current token) from s.
func redactSecret(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "[redacted]")
}
