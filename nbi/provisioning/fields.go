package provisioning

import (
	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

// The provisioning API's attribute selectors (SOL013 clause 5.3): SOL013 lets a selector leave out only
// complex attributes with a lower cardinality of 0; the reference requires every attribute it declares,
// so those are the members of the free-form templateParameters. Everything the reference requires stays
// in every answer, which keeps each answer valid against its schema. The default-excluded set is empty
// (the reference says "TBD"), so no selector, exclude_default and all_fields all answer the complete
// Info.

// listRules: the provisioning reference's filter paths and SOL 013's attribute selectors.
var listRules = nbi.ListRules{Filter: query.ParseFilter, FieldList: parseFieldList}

// parseSelection reads the selector parameters of a list (present maps a parameter to its value; the
// reference's "exclude-fields" has been folded into "exclude_fields"). Combinations follow SOL013 table
// 5.3.2-1: each alone, or exclude_default with fields.
func parseSelection(params map[string]string) (nbi.Selection, error) {
	return nbi.ParseSelection(params, parseFieldList, false)
}

// parseFieldList reads "a/b,c": complex attributes of ProvisioningRequestInfo. A mandatory complex
// attribute may be listed in fields (it is there anyway) but not excluded; a simple one may be neither.
func parseFieldList(param, list string, excluding bool) (*nbi.PathTree, error) {
	return nbi.ParseAttrList(param, list, excluding, nbi.AttrRules{
		Resolve:  query.ResolveAttr,
		Selected: query.InTemplateParameters, // a mandatory attribute outside it listed in fields changes nothing
		Required: "ProvisioningRequestInfo and cannot be excluded; only attributes inside provisioningRequestData/templateParameters can",
	})
}

// apply answers the Info as the selection wants it; nothing shared with the Store is changed (the
// templateParameters that differ are new maps).
func apply(sel nbi.Selection, info ProvisioningRequestInfo) ProvisioningRequestInfo {
	params := info.ProvisioningRequestData.TemplateParameters
	switch {
	case sel.Fields != nil:
		if !sel.Fields.Listed { // templateParameters itself listed: all of it
			info.ProvisioningRequestData.TemplateParameters = keepFields(params, sel.Fields)
		}
	case sel.Exclude != nil:
		info.ProvisioningRequestData.TemplateParameters = dropFields(params, sel.Exclude)
	}
	return info
}

// keepFields keeps every simple attribute, and the complex ones listed (whole) or on the way to a listed
// one (selected in turn).
func keepFields(obj map[string]any, sel *nbi.PathTree) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		if !complexValue(v) {
			out[k] = v
			continue
		}
		child := sel.Children[k]
		switch {
		case child == nil:
		case child.Listed:
			out[k] = v
		default:
			out[k] = selectInside(v, child, keepFields)
		}
	}
	return out
}

// dropFields removes the listed complex attributes and keeps everything else.
func dropFields(obj map[string]any, sel *nbi.PathTree) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		child := sel.Children[k]
		switch {
		case child == nil || !complexValue(v):
			out[k] = v
		case child.Listed:
		default:
			out[k] = selectInside(v, child, dropFields)
		}
	}
	return out
}

// selectInside applies a selection to an object, or to each object of an array (arrays are traversed as
// filters traverse them).
func selectInside(v any, sel *nbi.PathTree, f func(map[string]any, *nbi.PathTree) map[string]any) any {
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
