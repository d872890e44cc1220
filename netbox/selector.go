package netbox

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// Selector maps a NetBox device custom field name to the scalar it must equal
// exactly: string (text/select fields), bool (boolean fields) or an integer
// (integer fields; a float is accepted only with an integral value, as JSON
// decoding produces).
type Selector map[string]any

// maxSelectorValue bounds a string value; capability values are short.
const maxSelectorValue = 256

type valueKind int

const (
	kindString valueKind = iota + 1
	kindBool
	kindInt
)

func (k valueKind) String() string {
	switch k {
	case kindString:
		return "a string"
	case kindBool:
		return "a boolean"
	case kindInt:
		return "an integer"
	}
	return "unknown"
}

// selValue is a validated selector value.
type selValue struct {
	kind valueKind
	s    string
	b    bool
	i    int64
}

// query renders the value as NetBox's filter expects it.
func (v selValue) query() string {
	switch v.kind {
	case kindBool:
		return strconv.FormatBool(v.b)
	case kindInt:
		return strconv.FormatInt(v.i, 10)
	}
	return v.s
}

// matches is the client-side typed exact match on a custom field value as
// NetBox rendered it.
func (v selValue) matches(got any) bool {
	switch v.kind {
	case kindBool:
		b, ok := got.(bool)
		return ok && b == v.b
	case kindInt:
		n, ok := integerValue(got)
		return ok && n == v.i
	}
	s, ok := selectValue(got)
	return ok && s == v.s
}

// ValidateSelector checks a selector without contacting NetBox: key syntax,
// reserved keys and scalar values. The error is a KindSchema *Error.
func (c *Client) ValidateSelector(sel Selector) error {
	_, err := normalizeSelector(sel, c.cfg.Fields)
	return err
}

// normalizeSelector validates sel and returns its typed values.
func normalizeSelector(sel Selector, fields FieldNames) (map[string]selValue, error) {
	reserved := fields.reserved()
	out := make(map[string]selValue, len(sel))
	keys := make([]string, 0, len(sel))
	for k := range sel {
		keys = append(keys, k)
	}
	sort.Strings(keys) // report problems in a stable order
	for _, k := range keys {
		if !fieldNameRE.MatchString(k) || len(k) > 50 {
			return nil, schemaErr("selector key %s is not a NetBox custom field name (lowercase letters, digits, underscores)", quoteKey(k))
		}
		if reserved[k] {
			return nil, schemaErr("selector key %s is reserved for the inventory itself", k)
		}
		v, err := scalar(sel[k])
		if err != nil {
			return nil, schemaErr("selector key %s: %v", k, err)
		}
		out[k] = v
	}
	return out, nil
}

func scalar(v any) (selValue, error) {
	switch x := v.(type) {
	case string:
		if x == "" {
			return selValue{}, fmt.Errorf("empty string (NetBox ignores an empty filter)")
		}
		if !utf8.ValidString(x) || len(x) > maxSelectorValue {
			return selValue{}, fmt.Errorf("string value must be valid UTF-8 of at most %d bytes", maxSelectorValue)
		}
		for _, r := range x {
			if unicode.IsControl(r) {
				return selValue{}, fmt.Errorf("string value holds control characters")
			}
		}
		return selValue{kind: kindString, s: x}, nil
	case bool:
		return selValue{kind: kindBool, b: x}, nil
	case int:
		return selValue{kind: kindInt, i: int64(x)}, nil
	case int8:
		return selValue{kind: kindInt, i: int64(x)}, nil
	case int16:
		return selValue{kind: kindInt, i: int64(x)}, nil
	case int32:
		return selValue{kind: kindInt, i: int64(x)}, nil
	case int64:
		return selValue{kind: kindInt, i: x}, nil
	case uint:
		return uintValue(uint64(x))
	case uint8:
		return uintValue(uint64(x))
	case uint16:
		return uintValue(uint64(x))
	case uint32:
		return uintValue(uint64(x))
	case uint64:
		return uintValue(x)
	case float32:
		return floatValue(float64(x))
	case float64:
		return floatValue(x)
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return selValue{kind: kindInt, i: n}, nil
		}
		f, err := x.Float64()
		if err != nil {
			return selValue{}, fmt.Errorf("not a number")
		}
		return floatValue(f)
	case nil:
		return selValue{}, fmt.Errorf("null is not a scalar value")
	}
	return selValue{}, fmt.Errorf("%T is not a scalar (string, boolean or integer)", v)
}

func uintValue(u uint64) (selValue, error) {
	if u > math.MaxInt64 {
		return selValue{}, fmt.Errorf("integer out of range")
	}
	return selValue{kind: kindInt, i: int64(u)}, nil
}

// floatValue accepts integral floats: JSON-decoded template parameters give
// 16 as float64(16). 2^53 is the largest range where that is exact.
func floatValue(f float64) (selValue, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) {
		return selValue{}, fmt.Errorf("number must be an integer")
	}
	if math.Abs(f) > 1<<53 {
		return selValue{}, fmt.Errorf("integer out of range")
	}
	return selValue{kind: kindInt, i: int64(f)}, nil
}

// quoteKey shows a bad key safely (it may hold anything).
func quoteKey(k string) string {
	return strconv.Quote(truncateRunes(k, 60))
}

func schemaErr(format string, args ...any) *Error {
	return &Error{Kind: KindSchema, Op: "schema", Err: fmt.Errorf(format, args...)}
}
