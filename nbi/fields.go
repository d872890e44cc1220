package nbi

import (
	"fmt"
	"strings"

	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

// selection is an ETSI GS NFV-SOL 013 clause 5.3 attribute selector (all_fields, fields, exclude_fields,
// exclude_default). SOL013 lets a selector leave out only complex attributes with a lower cardinality of
// 0; the reference requires every attribute it declares, so those are the members of the free-form
// templateParameters. Everything the reference requires stays in every answer, which keeps each answer
// valid against its schema. The default-excluded set is empty (the reference says "TBD"), so no selector,
// exclude_default and all_fields all answer the complete Info.
type selection struct {
	fields  *pathTree // nil: not given
	exclude *pathTree // nil: not given
}

// pathTree is a set of attribute paths (below templateParameters in the provisioning API, from the type
// itself in the inventory API), as a tree of names.
type pathTree struct {
	children map[string]*pathTree
	listed   bool // the path ending here was listed: its whole subtree is selected
}

func (t *pathTree) add(path []string) {
	n := t
	for _, seg := range path {
		if n.children == nil {
			n.children = map[string]*pathTree{}
		}
		c := n.children[seg]
		if c == nil {
			c = &pathTree{}
			n.children[seg] = c
		}
		n = c
	}
	n.listed = true
}

// parseSelection reads the selector parameters of a list (present maps a parameter to its value; the
// reference's "exclude-fields" has been folded into "exclude_fields"). Combinations follow SOL013 table
// 5.3.2-1: each alone, or exclude_default with fields.
func parseSelection(params map[string]string) (selection, error) {
	return parseSelectionWith(params, parseFieldList, false)
}

// parseSelectionWith is parseSelection with the reader of a fields / exclude_fields list of the answer
// type at hand (the inventory API's types have theirs); combine allows fields with exclude_fields, as
// the inventory reference does ("excluded even if they are explicitly included using the fields
// parameter"), where SOL 013 does not.
func parseSelectionWith(params map[string]string, parseFieldList func(param, list string, excluding bool) (*pathTree, error), combine bool) (selection, error) {
	var sel selection
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
		if sel.fields, err = parseFieldList("fields", fields, false); err != nil {
			return sel, err
		}
	}
	if hasExclude {
		if sel.exclude, err = parseFieldList("exclude_fields", exclude, true); err != nil {
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

// parseFieldList reads "a/b,c": complex attributes of ProvisioningRequestInfo. A mandatory complex
// attribute may be listed in fields (it is there anyway) but not excluded; a simple one may be neither.
func parseFieldList(param, list string, excluding bool) (*pathTree, error) {
	return parseAttrList(param, list, excluding, attrRules{
		resolve:  query.ResolveAttr,
		selected: query.InTemplateParameters, // a mandatory attribute outside it listed in fields changes nothing
		required: "ProvisioningRequestInfo and cannot be excluded; only attributes inside provisioningRequestData/templateParameters can",
	})
}

// attrRules are what one response type says about fields / exclude_fields paths.
type attrRules struct {
	resolve  func(path []string) (query.AttrKind, bool, error)
	selected func(path []string) ([]string, bool) // the path within the selectable part, or false
	required string                               // completes "exclude_fields: %q is required by …"
	// simple: simple attributes may be named too, and a required one excluded stays without an error
	// (the inventory reference's reading; SOL 013's, the provisioning API's, names complex ones only).
	simple bool
}

// parseAttrList is the one reader of fields / exclude_fields lists, for every response type.
func parseAttrList(param, list string, excluding bool, rules attrRules) (*pathTree, error) {
	if list == "" {
		return nil, fmt.Errorf("%s is empty: list attribute paths separated by ','", param)
	}
	tree := &pathTree{}
	for _, p := range strings.Split(list, ",") {
		path, err := query.SplitAttrPath(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", param, err)
		}
		kind, mandatory, err := rules.resolve(path)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%s: %v", param, err)
		case kind == query.SimpleAttr && !rules.simple:
			return nil, fmt.Errorf("%s: %q is a simple attribute; attribute selectors name complex ones (simple attributes are always included)", param, p)
		case excluding && mandatory && !rules.simple:
			return nil, fmt.Errorf("exclude_fields: %q is required by %s", p, rules.required)
		}
		if below, ok := rules.selected(path); ok {
			tree.add(below)
		} else if excluding {
			return nil, fmt.Errorf("exclude_fields: %q cannot be excluded", p)
		}
	}
	return tree, nil
}

// complete reports whether the selection answers the complete Info (no fields, no exclude_fields).
func (sel selection) complete() bool { return sel.fields == nil && sel.exclude == nil }

// apply answers the Info as the selection wants it; nothing shared with the Store is changed (the
// templateParameters that differ are new maps).
func (sel selection) apply(info ProvisioningRequestInfo) ProvisioningRequestInfo {
	params := info.ProvisioningRequestData.TemplateParameters
	switch {
	case sel.fields != nil:
		if !sel.fields.listed { // templateParameters itself listed: all of it
			info.ProvisioningRequestData.TemplateParameters = keepFields(params, sel.fields)
		}
	case sel.exclude != nil:
		info.ProvisioningRequestData.TemplateParameters = dropFields(params, sel.exclude)
	}
	return info
}

// keepFields keeps every simple attribute, and the complex ones listed (whole) or on the way to a listed
// one (selected in turn).
func keepFields(obj map[string]any, sel *pathTree) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		if !complexValue(v) {
			out[k] = v
			continue
		}
		child := sel.children[k]
		switch {
		case child == nil:
		case child.listed:
			out[k] = v
		default:
			out[k] = selectInside(v, child, keepFields)
		}
	}
	return out
}

// dropFields removes the listed complex attributes and keeps everything else.
func dropFields(obj map[string]any, sel *pathTree) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		child := sel.children[k]
		switch {
		case child == nil || !complexValue(v):
			out[k] = v
		case child.listed:
		default:
			out[k] = selectInside(v, child, dropFields)
		}
	}
	return out
}

// selectInside applies a selection to an object, or to each object of an array (arrays are traversed as
// filters traverse them).
func selectInside(v any, sel *pathTree, f func(map[string]any, *pathTree) map[string]any) any {
	switch t := v.(type) {
	case map[string]any:
		return f(t, sel)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = selectInside(e, sel, f)
		}
		return out
	}
	return v
}

func complexValue(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}
