package query

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Filter is an ETSI GS NFV-SOL 013 clause 5.2 attribute-based filter: conditions that must all hold
// ("(op,attr,value)" expressions joined by ';').
type Filter []condition

// condition is one "(op,attr/path,value[,value…])" expression.
type condition struct {
	op     string
	path   []string
	values []string
}

// filterOps lists the operators and whether each takes a list of values (the others take exactly one).
var filterOps = map[string]bool{
	"eq": false, "neq": false, "gt": false, "lt": false, "gte": false, "lte": false,
	"in": true, "nin": true, "cont": true, "ncont": true,
}

const filterOpNames = "eq, neq, gt, lt, gte, lte, cont, ncont, in, nin"

// ParseFilter reads a filter expression. A value containing ',', ')' or '\” is enclosed in single
// quotes, a quote inside doubled (”); an unquoted value runs to the next ',' or ')'. Attribute paths are
// checked against the reference's ProvisioningRequestInfo; anything inside templateParameters is allowed.
// A refusal is a 400 *Error saying what is wrong and where.
func ParseFilter(s string) (Filter, error) {
	return ProvisioningRequestInfo.ParseFilter(s)
}

// ParseFilter reads a filter expression whose attribute paths are checked against the schema's type.
func (sc *Schema) ParseFilter(s string) (Filter, error) {
	f, err := parseFilter(sc, s)
	if err != nil {
		return nil, badRequest(err)
	}
	return f, nil
}

func parseFilter(sc *Schema, s string) (Filter, error) {
	if s == "" {
		return nil, fmt.Errorf("filter is empty")
	}
	p := &filterParser{s: s, schema: sc}
	var f Filter
	for {
		c, err := p.condition()
		if err != nil {
			return nil, fmt.Errorf("filter %s", err)
		}
		f = append(f, c)
		if p.pos == len(s) {
			return f, nil
		}
		if s[p.pos] != ';' {
			return nil, fmt.Errorf("filter: expected ';' between expressions at position %d", p.pos+1)
		}
		p.pos++
	}
}

type filterParser struct {
	s      string
	pos    int
	schema *Schema
}

func (p *filterParser) errorf(format string, args ...any) error {
	return fmt.Errorf("at position %d: %s", p.pos+1, fmt.Sprintf(format, args...))
}

func (p *filterParser) condition() (condition, error) {
	var c condition
	if p.pos >= len(p.s) || p.s[p.pos] != '(' {
		return c, p.errorf("expected '(' to open an expression")
	}
	p.pos++
	c.op = p.token()
	multi, ok := filterOps[c.op]
	if !ok {
		return c, p.errorf("unknown operator %q (one of %s)", c.op, filterOpNames)
	}
	if !p.consume(',') {
		return c, p.errorf("expected ',' after the operator %q", c.op)
	}
	start := p.pos
	attr := p.token()
	path, err := SplitAttrPath(attr)
	if err != nil {
		p.pos = start
		return c, p.errorf("%v", err)
	}
	for _, seg := range path {
		if strings.ContainsAny(seg, "()';") {
			p.pos = start
			return c, p.errorf("attribute name %q may not contain '(', ')', ';' or a quote", seg)
		}
	}
	kind, _, err := p.schema.Resolve(path)
	if err != nil {
		p.pos = start
		return c, p.errorf("%v", err)
	}
	if kind == ObjectAttr {
		p.pos = start
		return c, p.errorf("%q is an object; a filter compares simple attributes (or arrays of them)", attr)
	}
	c.path = path
	for {
		if !p.consume(',') {
			return c, p.errorf("expected ',' and a value after the attribute %q", attr)
		}
		v, err := p.value()
		if err != nil {
			return c, err
		}
		c.values = append(c.values, v)
		if p.consume(')') {
			break
		}
	}
	if !multi && len(c.values) != 1 {
		return c, fmt.Errorf("operator %q takes exactly one value, got %d", c.op, len(c.values))
	}
	return c, nil
}

// token reads up to the next ',' or ')' (operators and attribute paths).
func (p *filterParser) token() string {
	start := p.pos
	for p.pos < len(p.s) && p.s[p.pos] != ',' && p.s[p.pos] != ')' {
		p.pos++
	}
	return p.s[start:p.pos]
}

func (p *filterParser) consume(c byte) bool {
	if p.pos < len(p.s) && p.s[p.pos] == c {
		p.pos++
		return true
	}
	return false
}

func (p *filterParser) value() (string, error) {
	if p.pos < len(p.s) && p.s[p.pos] == '\'' {
		p.pos++
		var b strings.Builder
		for {
			if p.pos >= len(p.s) {
				return "", p.errorf("a quoted value is not closed")
			}
			ch := p.s[p.pos]
			p.pos++
			if ch != '\'' {
				b.WriteByte(ch)
				continue
			}
			if p.pos < len(p.s) && p.s[p.pos] == '\'' { // '' is a quote
				b.WriteByte('\'')
				p.pos++
				continue
			}
			if p.pos < len(p.s) && p.s[p.pos] != ',' && p.s[p.pos] != ')' {
				return "", p.errorf("expected ',' or ')' after a quoted value")
			}
			return b.String(), nil
		}
	}
	start := p.pos
	for p.pos < len(p.s) && p.s[p.pos] != ',' && p.s[p.pos] != ')' {
		if p.s[p.pos] == '\'' {
			return "", p.errorf("a value containing a quote must be quoted ('it''s')")
		}
		p.pos++
	}
	if p.pos >= len(p.s) {
		return "", p.errorf("the expression is not closed with ')'")
	}
	return p.s[start:p.pos], nil
}

// String renders the filter so that ParseFilter reads it back to the same conditions.
func (f Filter) String() string {
	var b strings.Builder
	for i, c := range f {
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteByte('(')
		b.WriteString(c.op)
		b.WriteByte(',')
		b.WriteString(strings.Join(c.path, "/"))
		for _, v := range c.values {
			b.WriteByte(',')
			if strings.ContainsAny(v, ",)'") {
				b.WriteByte('\'')
				b.WriteString(strings.ReplaceAll(v, "'", "''"))
				b.WriteByte('\'')
			} else {
				b.WriteString(v)
			}
		}
		b.WriteByte(')')
	}
	return b.String()
}

// Tree is an object of the attribute tree that answers its own members, so that a caller can filter
// what it holds without building maps of it. Child answers a member as the tree's other values are: a
// string, number or bool, a []string or []any, a map[string]any or another Tree.
type Tree interface {
	Child(name string) (any, bool)
}

// Match reports whether a ProvisioningRequestInfo, as a generic tree (objects as map[string]any or Tree,
// arrays as []any or []string, numbers as int64 or float64), satisfies every condition.
func (f Filter) Match(attrs any) bool {
	for _, c := range f {
		if !c.match(attrs) {
			return false
		}
	}
	return true
}

// match evaluates one condition. An attribute that is an array (or reached through one) matches when any
// element does; the negated operators (neq, nin, ncont) are the negation of eq, in and cont, so they hold
// when no element matches — also when the attribute is absent, where eq, in and cont do not hold.
func (c condition) match(attrs any) bool {
	leaves := collect(attrs, c.path, nil)
	switch c.op {
	case "neq":
		return !anyLeaf(leaves, c.values, equals)
	case "nin":
		return !anyLeaf(leaves, c.values, equals)
	case "ncont":
		return !anyLeaf(leaves, c.values, contains)
	case "eq", "in":
		return anyLeaf(leaves, c.values, equals)
	case "cont":
		return anyLeaf(leaves, c.values, contains)
	case "gt":
		return anyLeaf(leaves, c.values, func(l any, v string) bool { r, ok := compare(l, v); return ok && r > 0 })
	case "gte":
		return anyLeaf(leaves, c.values, func(l any, v string) bool { r, ok := compare(l, v); return ok && r >= 0 })
	case "lt":
		return anyLeaf(leaves, c.values, func(l any, v string) bool { r, ok := compare(l, v); return ok && r < 0 })
	case "lte":
		return anyLeaf(leaves, c.values, func(l any, v string) bool { r, ok := compare(l, v); return ok && r <= 0 })
	}
	return false
}

func anyLeaf(leaves []any, values []string, pred func(any, string) bool) bool {
	for _, l := range leaves {
		for _, v := range values {
			if pred(l, v) {
				return true
			}
		}
	}
	return false
}

// collect gathers the values at path, stepping through arrays on the way and flattening an array at the
// end.
func collect(v any, path []string, out []any) []any {
	switch t := v.(type) {
	case []any:
		for _, e := range t {
			out = collect(e, path, out)
		}
		return out
	case []string:
		for _, e := range t {
			out = collect(e, path, out)
		}
		return out
	case map[string]any:
		if len(path) == 0 {
			return append(out, t)
		}
		child, ok := t[path[0]]
		if !ok {
			return out
		}
		return collect(child, path[1:], out)
	case Tree:
		if len(path) == 0 {
			return append(out, t)
		}
		child, ok := t.Child(path[0])
		if !ok {
			return out
		}
		return collect(child, path[1:], out)
	default:
		if len(path) == 0 {
			return append(out, v)
		}
		return out
	}
}

// number reads a JSON number as it sits in an unstructured object.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// text is a scalar's string form: strings as they are, numbers and booleans as JSON writes them.
func text(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		return t, true
	case bool:
		return strconv.FormatBool(t), true
	case json.Number:
		return t.String(), true
	case int64:
		return strconv.FormatInt(t, 10), true
	}
	if f, ok := number(v); ok {
		return strconv.FormatFloat(f, 'g', -1, 64), true
	}
	return "", false
}

// compare orders an attribute value against a filter value: numerically when the attribute is a number
// and the value reads as one, otherwise as strings (so RFC 3339 UTC times order by time). Objects and null
// do not compare.
func compare(leaf any, v string) (int, bool) {
	if n, ok := number(leaf); ok {
		if f, err := strconv.ParseFloat(v, 64); err == nil && !math.IsNaN(f) {
			if i, ok := leaf.(int64); ok { // exact for integers beyond 2^53
				if j, err := strconv.ParseInt(v, 10, 64); err == nil {
					return cmpOrdered(i, j), true
				}
			}
			return cmpOrdered(n, f), true
		}
	}
	s, ok := text(leaf)
	if !ok {
		return 0, false
	}
	return strings.Compare(s, v), true
}

func cmpOrdered[T int64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func equals(leaf any, v string) bool {
	r, ok := compare(leaf, v)
	return ok && r == 0
}

func contains(leaf any, v string) bool {
	s, ok := text(leaf)
	return ok && strings.Contains(s, v)
}
