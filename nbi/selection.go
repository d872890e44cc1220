package nbi

import (
	"fmt"
	"strings"

	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

// Selection is an ETSI GS NFV-SOL 013 clause 5.3 attribute selector (all_fields, fields, exclude_fields,
// exclude_default) as read: the paths fields and exclude_fields list. Each API applies it to its own
// answer type and reads the paths its own way (a FieldListReader); the default-excluded set is empty in
// both references, so no selector, exclude_default and all_fields all answer the complete object.
type Selection struct {
	Fields  *PathTree // nil: not given
	Exclude *PathTree // nil: not given
}

// PathTree is a set of attribute paths (below templateParameters in the provisioning API, from the type
// itself in the inventory API), as a tree of names.
type PathTree struct {
	Children map[string]*PathTree
	Listed   bool // the path ending here was listed: its whole subtree is selected
}

func (t *PathTree) add(path []string) {
	n := t
	for _, seg := range path {
		if n.Children == nil {
			n.Children = map[string]*PathTree{}
		}
		c := n.Children[seg]
		if c == nil {
			c = &PathTree{}
			n.Children[seg] = c
		}
		n = c
	}
	n.Listed = true
}

// FieldListReader reads a fields (or, excluding, exclude_fields) list of one answer type.
type FieldListReader func(param, list string, excluding bool) (*PathTree, error)

// ParseSelection reads the selector parameters of a list (present maps a parameter to its value; the
// reference's "exclude-fields" has been folded into "exclude_fields"), with the reader of a fields /
// exclude_fields list of the answer type at hand. Combinations follow SOL013 table 5.3.2-1: each alone,
// or exclude_default with fields; combine allows fields with exclude_fields too, as the inventory
// reference does ("excluded even if they are explicitly included using the fields parameter").
func ParseSelection(params map[string]string, parseFieldList FieldListReader, combine bool) (Selection, error) {
	var sel Selection
	all, err := boolParam(params, "all_fields")
	if err != nil {
		return sel, err
	}
	excludeDefault, err := boolParam(params, "exclude_default")
	if err != nil {
		return sel, err
	}
	fields, hasFields := params["fields"]
	exclude, hasExclude := params["exclude_fields"]
	switch {
	case all && (hasFields || hasExclude || excludeDefault):
		return sel, fmt.Errorf("all_fields cannot be combined with fields, exclude_fields or exclude_default")
	case hasFields && hasExclude && !combine:
		return sel, fmt.Errorf("fields and exclude_fields cannot be combined")
	case hasExclude && excludeDefault:
		return sel, fmt.Errorf("exclude_fields and exclude_default cannot be combined")
	}
	if hasFields {
		if sel.Fields, err = parseFieldList("fields", fields, false); err != nil {
			return sel, err
		}
	}
	if hasExclude {
		if sel.Exclude, err = parseFieldList("exclude_fields", exclude, true); err != nil {
			return sel, err
		}
	}
	return sel, nil
}

// boolParam reads a boolean selector: present without a value or "true" sets it, "false" does not.
func boolParam(params map[string]string, name string) (bool, error) {
	v, ok := params[name]
	if !ok {
		return false, nil
	}
	switch strings.ToLower(v) {
	case "", "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%s=%q: want no value, true or false", name, v)
}

// AttrRules are what one response type says about fields / exclude_fields paths.
type AttrRules struct {
	Resolve  func(path []string) (query.AttrKind, bool, error)
	Selected func(path []string) ([]string, bool) // the path within the selectable part, or false
	Required string                               // completes "exclude_fields: %q is required by …"
	// Simple: simple attributes may be named too, and a required one excluded stays without an error
	// (the inventory reference's reading; SOL 013's, the provisioning API's, names complex ones only).
	Simple bool
}

// ParseAttrList is the one reader of fields / exclude_fields lists, for every response type.
func ParseAttrList(param, list string, excluding bool, rules AttrRules) (*PathTree, error) {
	if list == "" {
		return nil, fmt.Errorf("%s is empty: list attribute paths separated by ','", param)
	}
	tree := &PathTree{}
	for _, p := range strings.Split(list, ",") {
		path, err := query.SplitAttrPath(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", param, err)
		}
		kind, mandatory, err := rules.Resolve(path)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%s: %v", param, err)
		case kind == query.SimpleAttr && !rules.Simple:
			return nil, fmt.Errorf("%s: %q is a simple attribute; attribute selectors name complex ones (simple attributes are always included)", param, p)
		case excluding && mandatory && !rules.Simple:
			return nil, fmt.Errorf("exclude_fields: %q is required by %s", p, rules.Required)
		}
		if below, ok := rules.Selected(path); ok {
			tree.add(below)
		} else if excluding {
			return nil, fmt.Errorf("exclude_fields: %q cannot be excluded", p)
		}
	}
	return tree, nil
}

// Complete reports whether the selection answers the complete object (no fields, no exclude_fields).
func (sel Selection) Complete() bool { return sel.Fields == nil && sel.Exclude == nil }
