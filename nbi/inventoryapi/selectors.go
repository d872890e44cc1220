package inventoryapi

import (
	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

// listRules: an inventory type's filter paths and attribute selectors (nbi.SchemaListRules, shared
// with the alarms API, whose reference reads them alike).
func listRules(schema *query.Schema) nbi.ListRules { return nbi.SchemaListRules(schema) }

// fieldList reads a fields / exclude_fields list of an inventory type (nbi.SchemaFieldList).
func fieldList(schema *query.Schema) nbi.FieldListReader { return nbi.SchemaFieldList(schema) }

// applyMap answers an inventory object as the selection wants it (nbi.ApplySchema).
func applyMap(sel nbi.Selection, schema *query.Schema, obj map[string]any) map[string]any {
	return nbi.ApplySchema(sel, schema, obj)
}
