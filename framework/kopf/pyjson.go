package kopf

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// kopf stores its records and the diff-base with Python's json.dumps(value, separators=(',', ':')):
// ensure_ascii (every non-ASCII character as a \uXXXX escape, lowercase hex, surrogate pairs above the
// BMP), no HTML escaping (`<`, `>` and `&` as they are), ints as digits and floats as Python's repr. Go's
// encoding/json writes the same JSON with other bytes (`\u003c` for `<`, raw UTF-8), so an annotation we
// rewrite would differ from kopf's even when its content did not. This writer produces kopf's bytes.

// writePyString writes s as Python's json.dumps(ensure_ascii=True) does. Invalid UTF-8 (which Python
// strings cannot hold) becomes U+FFFD, as Go's encoder would make it.
func writePyString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r >= 0x20 && r <= 0x7e:
				b.WriteRune(r)
			case r == utf8.RuneError:
				b.WriteString(`\ufffd`)
			case r < 0x10000:
				fmt.Fprintf(b, `\u%04x`, r)
			default:
				r -= 0x10000
				fmt.Fprintf(b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
			}
		}
	}
	b.WriteByte('"')
}

// pyFloat is Python's repr of a float: the shortest digits that read back, fixed notation for decimal
// exponents in [-4, 16) with at least one fractional digit ("1.0"), scientific otherwise ("1e+16",
// "1.5e-05").
func pyFloat(f float64) string {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return "null" // not JSON; cannot come from a decoded object
	}
	sci := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, expStr, _ := strings.Cut(sci, "e")
	exp, _ := strconv.Atoi(expStr)
	if exp < -4 || exp >= 16 {
		sign := "+"
		if exp < 0 {
			sign, exp = "-", -exp
		}
		return fmt.Sprintf("%se%s%02d", mant, sign, exp)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// writePyJSON writes a JSON-like tree (what unstructured objects and json.Unmarshal hold). Map keys are
// sorted, as the API server serves them; order, a function of the path, may put some keys first (kopf
// appends metadata to an essence after the body's own fields).
func writePyJSON(b *strings.Builder, v any, path []string, order func(path []string, keys []string) []string) {
	switch t := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(t))
	case string:
		writePyString(b, t)
	case json.Number:
		b.WriteString(t.String())
	case int:
		b.WriteString(strconv.FormatInt(int64(t), 10))
	case int32:
		b.WriteString(strconv.FormatInt(int64(t), 10))
	case int64:
		b.WriteString(strconv.FormatInt(t, 10))
	case float32:
		b.WriteString(pyFloat(float64(t)))
	case float64:
		b.WriteString(pyFloat(t))
	case []string:
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteByte(',')
			}
			writePyString(b, e)
		}
		b.WriteByte(']')
	case []any:
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteByte(',')
			}
			writePyJSON(b, e, path, order)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if order != nil {
			keys = order(path, keys)
		}
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writePyString(b, k)
			b.WriteByte(':')
			writePyJSON(b, t[k], append(path, k), order)
		}
		b.WriteByte('}')
	case map[string]string:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = e
		}
		writePyJSON(b, m, path, order)
	default:
		// Not a JSON tree (a caller's bug): fall back to Go's encoding rather than lose the value.
		enc, _ := json.Marshal(t)
		b.Write(enc)
	}
}
