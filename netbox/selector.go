package netbox

import "github.com/o2ims-operator/o2ims-operator/netbox/selector"

// Selector maps a NetBox device custom field name to the scalar it must equal
// exactly: string (text/select fields), bool (boolean fields) or an integer
// (integer fields; a float is accepted only with an integral value, as JSON
// decoding produces). See package selector.
type Selector = selector.Selector

// ValidateSelector checks a selector without contacting NetBox: key syntax,
// reserved keys and scalar values. The error is a KindSchema *Error.
func (c *Search) ValidateSelector(sel Selector) error {
	_, err := normalizeSelector(sel, c.cfg.Fields)
	return err
}

// normalizeSelector validates sel, the configured fixed fields being reserved,
// and returns its typed values. A refusal is a KindSchema *Error wrapping the
// *selector.Error.
func normalizeSelector(sel Selector, fields FieldNames) (map[string]selector.Value, error) {
	norm, err := selector.Normalize(sel, fields.reserved())
	if err != nil {
		return nil, &Error{Kind: KindSchema, Op: "schema", Err: err}
	}
	return norm, nil
}
