package inventoryapi

import (
	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

// listRules: an inventory type's filter paths and attribute selectors, fields with exclude_fields
// allowed (exclude_fields wins).
func listRules(schema *query.Schema) nbi.ListRules {
	return nbi.ListRules{Filter: schema.ParseFilter, FieldList: fieldList(schema), Combine: true}
}

// fieldList reads a fields / exclude_fields list of an inventory type as its reference writes
// them (its example: fields=name,extensions/country): any attribute of the schema, simple or complex,
// at any depth, and anything inside its free-form objects (extensions, capabilities, capacity). A path
// the schema does not have is a 400; excluding an attribute the reference requires is not (it stays).
// The provisioning API keeps SOL 013's reading (parseFieldList).
func fieldList(schema *query.Schema) nbi.FieldListReader {
	rules := nbi.AttrRules{
		Resolve:  schema.Resolve,
		Selected: func(path []string) ([]string, bool) { return path, true },
		Simple:   true,
	}
	return func(param, list string, excluding bool) (*nbi.PathTree, error) {
		return nbi.ParseAttrList(param, list, excluding, rules)
	}
}

// applyMap answers an inventory object as the selection wants it: with fields, the listed attributes
// and those the reference requires (a required object not listed keeps only its own required members:
// a free-form one is {}); with exclude_fields, everything but the listed attributes the reference does
// not require; both together, exclude_fields wins. Every answer stays valid against the reference. obj
// is shared and never modified.
func applyMap(sel nbi.Selection, schema *query.Schema, obj map[string]any) map[string]any {
	if sel.Fields != nil {
		obj = keepListed(schema.Root(), obj, sel.Fields)
	}
	if sel.Exclude != nil {
		obj = dropListed(schema.Root(), obj, sel.Exclude)
	}
	return obj
}

func keepListed(node query.Node, obj map[string]any, tree *nbi.PathTree) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		member, t := node.Member(k), tree.Children[k]
		m, isMap := v.(map[string]any)
		switch {
		case t != nil && t.Listed:
			out[k] = v
		case (t != nil || member.Required()) && isMap:
			if t == nil {
				t = &nbi.PathTree{}
			}
			out[k] = keepListed(member, m, t)
		case member.Required():
			out[k] = v
		}
	}
	return out
}

func dropListed(node query.Node, obj map[string]any, tree *nbi.PathTree) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		member, t := node.Member(k), tree.Children[k]
		m, isMap := v.(map[string]any)
		switch {
		case t == nil:
			out[k] = v
		case t.Listed && !member.Required():
		case !t.Listed && isMap:
			out[k] = dropListed(member, m, t)
		default:
			out[k] = v
		}
	}
	return out
}
