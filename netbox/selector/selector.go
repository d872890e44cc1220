// Package selector validates the capability selector of a NetBox host search
// and encodes it as the cf_ filters of NetBox's device list. It is pure and
// imports only the standard library, so that its fuzz target builds quickly
// (go test -fuzz instruments every package of the test binary); package
// netbox uses it and wraps its errors as KindSchema.
package selector

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/o2ims-operator/o2ims-operator/internal/quote"
)

// Selector maps a NetBox device custom field name to the scalar it must equal
// exactly: string (text/select fields), bool (boolean fields) or an integer
// (integer fields; a float is accepted only with an integral value, as JSON
// decoding produces).
type Selector map[string]any

// maxValue bounds a string value; capability values are short.
const maxValue = 256

// maxFieldName is the longest custom field name NetBox allows.
const maxFieldName = 50

// NetBox custom field names: ^[a-z0-9_]+$ (extras.models.CustomField.name).
var fieldNameRE = regexp.MustCompile(`^[a-z0-9_]+$`)

// IsFieldName reports whether name is a NetBox custom field name: lowercase
// letters, digits and underscores, at most 50 of them.
func IsFieldName(name string) bool {
	return fieldNameRE.MatchString(name) && len(name) <= maxFieldName
}

// Kind is the type of a selector value, which must match its field's type.
type Kind int

const (
	KindString Kind = iota + 1 // text and select fields
	KindBool                   // boolean fields
	KindInt                    // integer fields
)

func (k Kind) String() string {
	switch k {
	case KindString:
		return "a string"
	case KindBool:
		return "a boolean"
	case KindInt:
		return "an integer"
	}
	return "unknown"
}

// Value is a validated selector value.
type Value struct {
	kind Kind
	s    string
	b    bool
	i    int64
}

// Kind is the value's type.
func (v Value) Kind() Kind { return v.kind }

// Query renders the value as NetBox's filter expects it.
func (v Value) Query() string {
	switch v.kind {
	case KindBool:
		return strconv.FormatBool(v.b)
	case KindInt:
		return strconv.FormatInt(v.i, 10)
	}
	return v.s
}

// Matches is the client-side typed exact match on a custom field value as
// NetBox rendered it.
func (v Value) Matches(got any) bool {
	switch v.kind {
	case KindBool:
		b, ok := got.(bool)
		return ok && b == v.b
	case KindInt:
		n, ok := integerValue(got)
		return ok && n == v.i
	}
	s, ok := selectValue(got)
	return ok && s == v.s
}

// Error is why a selector is refused. Its text is one line.
type Error struct {
	Message string
}

func (e *Error) Error() string { return e.Message }

func errorf(format string, args ...any) *Error {
	return &Error{Message: fmt.Sprintf(format, args...)}
}

// Normalize validates sel – key syntax, keys reserved for the inventory
// itself, scalar values – and returns its typed values. A refusal is an
// *Error naming the first offending key in sorted order.
func Normalize(sel Selector, reserved map[string]bool) (map[string]Value, error) {
	out := make(map[string]Value, len(sel))
	for _, k := range slices.Sorted(maps.Keys(sel)) { // report problems in a stable order
		if !IsFieldName(k) {
			return nil, errorf("selector key %s is not a NetBox custom field name (lowercase letters, digits, underscores)", quoteKey(k))
		}
		if reserved[k] {
			return nil, errorf("selector key %s is reserved for the inventory itself", k)
		}
		v, err := scalar(sel[k])
		if err != nil {
			return nil, errorf("selector key %s: %v", k, err)
		}
		out[k] = v
	}
	return out, nil
}

// Filters is the query of NetBox's device list for free pool devices
// matching sel: the pool flag field true, the owner field empty, and one exact
// cf_ filter per selector key.
func Filters(pool, owner string, sel map[string]Value) url.Values {
	q := url.Values{}
	q.Set("cf_"+pool, "true")
	q.Set("cf_"+owner+"__empty", "true")
	for k, v := range sel {
		q.Set("cf_"+k, v.Query())
	}
	return q
}

func scalar(v any) (Value, error) {
	switch x := v.(type) {
	case string:
		if x == "" {
			return Value{}, fmt.Errorf("empty string (NetBox ignores an empty filter)")
		}
		if !utf8.ValidString(x) || len(x) > maxValue {
			return Value{}, fmt.Errorf("string value must be valid UTF-8 of at most %d bytes", maxValue)
		}
		for _, r := range x {
			if unicode.IsControl(r) {
				return Value{}, fmt.Errorf("string value holds control characters")
			}
		}
		return Value{kind: KindString, s: x}, nil
	case bool:
		return Value{kind: KindBool, b: x}, nil
	case int:
		return Value{kind: KindInt, i: int64(x)}, nil
	case int8:
		return Value{kind: KindInt, i: int64(x)}, nil
	case int16:
		return Value{kind: KindInt, i: int64(x)}, nil
	case int32:
		return Value{kind: KindInt, i: int64(x)}, nil
	case int64:
		return Value{kind: KindInt, i: x}, nil
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
			return Value{kind: KindInt, i: n}, nil
		}
		f, err := x.Float64()
		if err != nil {
			return Value{}, fmt.Errorf("not a number")
		}
		return floatValue(f)
	case nil:
		return Value{}, fmt.Errorf("null is not a scalar value")
	}
	return Value{}, fmt.Errorf("%T is not a scalar (string, boolean or integer)", v)
}

func uintValue(u uint64) (Value, error) {
	if u > math.MaxInt64 {
		return Value{}, fmt.Errorf("integer out of range")
	}
	return Value{kind: KindInt, i: int64(u)}, nil
}

// floatValue accepts integral floats: JSON-decoded template parameters give
// 16 as float64(16). 2^53 is the largest range where that is exact.
func floatValue(f float64) (Value, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) {
		return Value{}, fmt.Errorf("number must be an integer")
	}
	if math.Abs(f) > 1<<53 {
		return Value{}, fmt.Errorf("integer out of range")
	}
	return Value{kind: KindInt, i: int64(f)}, nil
}

// selectValue returns a select field's value whether NetBox rendered it as a
// plain string (4.6) or as {"value", "label"} (4.7).
func selectValue(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case map[string]any:
		s, ok := x["value"].(string)
		return s, ok
	}
	return "", false
}

// integerValue accepts the float64 encoding/json produces, or a json.Number.
func integerValue(v any) (int64, bool) {
	switch x := v.(type) {
	case float64:
		if x != math.Trunc(x) || math.IsInf(x, 0) || math.Abs(x) > 1<<53 {
			return 0, false
		}
		return int64(x), true
	case json.Number:
		n, err := x.Int64()
		return n, err == nil
	case int64:
		return x, true
	case int:
		return int64(x), true
	}
	return 0, false
}

// quoteKey shows a bad key safely (it may hold anything): quoted, at most 60
// runes.
func quoteKey(k string) string {
	return strconv.Quote(quote.Truncate(k, 60))
}
