package netcause

import "regexp"

// Redact masks the addresses in a text that quotes an error as Go or a server wrote it: URLs, "dial tcp
// <address>", "lookup <name> on <DNS server>", IPv4 and IPv6 addresses (with their ports), host:port, and
// the names an x509 hostname error lists. It is the last defence where a text reaches a status or an
// event; a failure worded by Of carries nothing to mask.
func Redact(s string) string {
	for _, r := range redactions {
		s = r.re.ReplaceAllString(s, r.with)
	}
	return s
}

var redactions = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://[^\s"'<>]+`), "[url]"},
	{regexp.MustCompile(`\blookup \S+ on \S+?(:?(?:\s|$))`), "lookup [name] on [DNS server]$1"},
	{regexp.MustCompile(`\blookup [^\s:]+`), "lookup [name]"},
	{regexp.MustCompile(`\b(dial|read|write|proxyconnect) (tcp|udp)([46]?) \S+?(:?(?:\s|$))`), "$1 $2$3 [address]$4"},
	{regexp.MustCompile(`certificate is valid for [^"]*?, not \S+`), "certificate is valid for other names"},
	// A bracketed IPv6 literal has a colon: an index such as hosts[1] is not an address.
	{regexp.MustCompile(`\[[0-9A-Fa-f.%]*:[0-9A-Fa-f:.%]*\](:\d+)?`), "[address]"},
	{regexp.MustCompile(`\b(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?\b`), "[address]"},
	{regexp.MustCompile(`\b(?:[0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}\b|\b(?:[0-9A-Fa-f]{1,4}:)+:(?:[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4})*)?`), "[address]"},
	{regexp.MustCompile(`\b[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+:\d{1,5}\b`), "[address]"},
}
