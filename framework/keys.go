package framework

import (
	"encoding/base64"
	"strings"
	"sync"

	"golang.org/x/crypto/blake2b"
)

// Annotation keys are formed exactly as kopf forms them, so an object handled by a kopf operator with the
// same prefix resumes here (and back). kopf writes every record under two keys:
//   - V1 cuts the whole key (prefix included) to 63 characters;
//   - V2 cuts only the name part to 63 characters.
//
// Overflow is replaced by "-" + base64(blake2b-32bit) with altchars "-." and trailing "=-." stripped.
// kopf's V1 hashes the safe key and V2 the raw one; that asymmetry is kopf's and is kept.
const maxNameLength = 63

// keyNamer forms annotation keys under one prefix.
type keyNamer struct {
	prefix string
}

// keys returns the V2 key first, then the V1 key when it differs; reads try them in that order.
func (n keyNamer) keys(name string) []string {
	v2 := n.v2(name)
	v1 := n.v1(name)
	if v1 == v2 {
		return []string{v2}
	}
	return []string{v2, v1}
}

var safeReplacer = strings.NewReplacer("/", ".", "<", "_", ">", "_")

func safeKey(name string) string { return safeReplacer.Replace(name) }

// keyCache memoizes keys per name: a pass asks for the same few (handler ids, the diff-base) every time.
type keyCache struct {
	namer keyNamer
	m     sync.Map // name → []string
}

func (c *keyCache) keys(name string) []string {
	if v, ok := c.m.Load(name); ok {
		return v.([]string)
	}
	k := c.namer.keys(name)
	c.m.Store(name, k)
	return k
}

func (n keyNamer) v1(name string) string {
	safe := safeKey(name)
	prefix := n.prefix + "/"
	suffix := ""
	if len(safe) > maxNameLength-len(prefix) {
		suffix = hashSuffix(safe)
	}
	limit := maxNameLength - len(prefix) - len(suffix)
	if limit < 0 {
		limit = 0
	}
	return prefix + cut(safe, limit) + suffix
}

func (n keyNamer) v2(name string) string {
	prefix := n.prefix + "/"
	suffix := ""
	if len(name) > maxNameLength {
		suffix = hashSuffix(name)
	}
	limit := maxNameLength - len(suffix)
	if limit < 0 {
		limit = 0
	}
	return prefix + cut(safeKey(name), limit) + suffix
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

func hashSuffix(key string) string {
	h, _ := blake2b.New(4, nil) // digest size 4 cannot fail
	h.Write([]byte(key))
	enc := base64.StdEncoding.EncodeToString(h.Sum(nil))
	enc = strings.NewReplacer("+", "-", "/", ".").Replace(enc)
	return strings.TrimRight("-"+enc, "=-.")
}
