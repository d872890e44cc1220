// Package quote is how the operator quotes a value back in a message (a caller's value in an error, a
// server's message in a log): shortened by runes, never inside one (Truncate), its JSON type in words
// (JSONType).
package quote

import "unicode/utf8"

// Truncate returns s if it has at most max runes, else its first max-1 runes and "…", so the result
// has max runes and is valid UTF-8 wherever s was. max ≤ 0 means no bound.
func Truncate(s string, max int) string {
	if max <= 0 || len(s) <= max || utf8.RuneCountInString(s) <= max {
		return s
	}
	i, n := 0, 0
	for i < len(s) && n < max-1 {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		n++
	}
	return s[:i] + "…"
}
