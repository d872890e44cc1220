package nbi

import "github.com/o2ims-operator/o2ims-operator/nbi/query"

// The O2IMS inventory and monitoring references (oran-o2ims) read filters and attribute selectors
// alike: SchemaListRules and ApplySchema are that reading, shared by the APIs that answer their types.

// SchemaListRules: a type's filter paths and attribute selectors, fields with exclude_fields allowed
// (exclude_fields wins).
func SchemaListRules(schema *query.Schema) ListRules {
	return ListRules{Filter: schema.ParseFilter, FieldList: SchemaFieldList(schema), Combine: true}
}

// SchemaFieldList reads a fields / exclude_fields list as those references write them (their example:
// fields=name,extensions/country): any attribute of the schema, simple or complex, at any depth, and
// anything inside its free-form objects. A path the schema does not have is a 400; excluding an
// attribute the reference requires is not (it stays). The provisioning API keeps SOL 013's reading.
func SchemaFieldList(schema *query.Schema) FieldListReader {
	rules := AttrRules{
		Resolve:  schema.Resolve,
		Selected: func(path []string) ([]string, bool) { return path, true },
		Simple:   true,
	}
	return func(param, list string, excluding bool) (*PathTree, error) {
		return ParseAttrList(param, list, excluding, rules)
	}
}

// ApplySchema answers an object as the selection wants it: with fields, the listed attributes and those
// the reference requires (a required object not listed keeps only its own required members: a
// free-form one is {}); with exclude_fields, everything but the listed attributes the reference does not
// require; both together, exclude_fields wins. Every answer stays valid against the reference. obj is
// shared and never modified.
func ApplySchema(sel Selection, schema *query.Schema, obj map[string]any) map[string]any {
	if sel.Fields != nil {
		obj = keepListed(schema.Root(), obj, sel.Fields)
	}
	if sel.Exclude != nil {
		obj = dropListed(schema.Root(), obj, sel.Exclude)
	}
	return obj
}

func keepListed(node query.Node, obj map[string]any, tree *PathTree) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		member, t := node.Member(k), tree.Children[k]
		m, isMap := v.(map[string]any)
		switch {
		case t != nil && t.Listed:
			out[k] = v
		case (t != nil || member.Required()) && isMap:
			if t == nil {
				t = &PathTree{}
			}
			out[k] = keepListed(member, m, t)
		case member.Required():
			out[k] = v
		}
	}
	return out
}

func dropListed(node query.Node, obj map[string]any, tree *PathTree) map[string]any {
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
