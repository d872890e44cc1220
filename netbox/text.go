package netbox

// SanitizeMessage makes text from elsewhere safe to show: one printable line of at most max runes, with
// URLs (BMC addresses), user:password@ fragments and token-shaped fragments masked. The chain uses it
// for Metal3's error messages, so they reach a request's status the way NetBox's errors do.
func SanitizeMessage(s string, max int) string { return sanitizeMessage(s, max) }
