// Package kopf is kopf's persisted state, byte-compatible: the annotation keys (V1 and V2 forms), the
// per-handler progress records and the diff-base ("last handled configuration"). An object handled by a
// kopf operator with the same prefix resumes here, and back. It is pure (no API access), so it is cheap to
// test and to fuzz: anyone with patch rights can write these annotations.
package kopf

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

// Namer forms annotation keys under one prefix.
type Namer struct {
	Prefix string
}

// Keys returns the V2 key first, then the V1 key when it differs; reads try them in that order.
func (n Namer) Keys(name string) []string {
	v2 := n.V2(name)
	v1 := n.V1(name)
	if v1 == v2 {
		return []string{v2}
	}
	return []string{v2, v1}
}

var safeReplacer = strings.NewReplacer("/", ".", "<", "_", ">", "_")

func safeKey(name string) string { return safeReplacer.Replace(name) }

// KeyCache memoizes keys per name: a pass asks for the same few (handler ids, the diff-base) every time.
type KeyCache struct {
	Namer Namer
	m     sync.Map // name → []string
}

// Keys is Namer.Keys, memoized.
func (c *KeyCache) Keys(name string) []string {
	if v, ok := c.m.Load(name); ok {
		return v.([]string)
	}
	k := c.Namer.Keys(name)
	c.m.Store(name, k)
	return k
}

// V1 cuts the whole key to 63 characters (kopf's first form).
func (n Namer) V1(name string) string {
	safe := safeKey(name)
	prefix := n.Prefix + "/"
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

// V2 cuts only the name part to 63 characters.
func (n Namer) V2(name string) string {
	prefix := n.Prefix + "/"
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
