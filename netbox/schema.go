package netbox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/o2ims-operator/o2ims-operator/netbox/selector"
)

// The object type every field we use must be assigned to.
const deviceObjectType = "dcim.device"

// fieldInfo is what the client needs to know about a custom field.
type fieldInfo struct {
	name        string
	typ         string
	filterLogic string
	objectTypes []string
}

func (f fieldInfo) onDevice() bool {
	for _, t := range f.objectTypes {
		if strings.EqualFold(t, deviceObjectType) {
			return true
		}
	}
	return false
}

// fixedField is what the operator needs of one of its four fixed fields: checkSchema holds NetBox to
// it, and Bootstrap creates a missing field from it (types[0], with filterLogic, or exact when any
// is accepted).
type fixedField struct {
	role, name, label, description string
	types                          []string // accepted types; the first is the one created
	filterLogic                    string   // "exact": must be exact; "enabled": anything but disabled; "": any
}

func fixedFields(n FieldNames) []fixedField {
	return []fixedField{
		{"pool", n.Managed, "O2IMS managed", "o2ims-operator may claim this device (only true counts)", []string{"boolean"}, "enabled"},
		// A loose text filter has no __empty lookup in NetBox: the owner filter needs exact.
		{"owner", n.RequestUID, "O2IMS request UID", "uid of the ProvisioningRequest holding this device (empty: free)", []string{"text"}, "exact"},
		{"BMC address", n.BMCAddress, "O2IMS BMC address", "Metal3 BMC address of this device", []string{"text", "url"}, ""},
		{"boot MAC", n.BootMAC, "O2IMS boot MAC", "MAC address of the boot NIC", []string{"text"}, ""},
	}
}

// problem says what is wrong with f (ok: it exists) for the operator, "" when nothing is.
func (spec fixedField) problem(f fieldInfo, ok bool) string {
	switch {
	case !ok || !f.onDevice():
		return fmt.Sprintf("%s field %s does not exist on dcim.device", spec.role, spec.name)
	case !slices.Contains(spec.types, f.typ):
		return fmt.Sprintf("%s field %s has type %s, want %s", spec.role, spec.name, f.typ, strings.Join(spec.types, " or "))
	case spec.filterLogic == "exact" && f.filterLogic != "exact":
		return fmt.Sprintf("%s field %s has filter_logic %s, want exact", spec.role, spec.name, f.filterLogic)
	case spec.filterLogic == "enabled" && f.filterLogic == "disabled":
		return fmt.Sprintf("%s field %s has filter_logic disabled, so NetBox cannot filter on it", spec.role, spec.name)
	}
	return ""
}

// Selector keys may name capability fields of these types only.
var selectorTypes = map[string]selector.Kind{
	"text":    selector.KindString,
	"select":  selector.KindString,
	"integer": selector.KindInt,
	"boolean": selector.KindBool,
}

// Schema is the client's part for NetBox's custom fields: the startup check (version and the fixed
// fields, check.go), the selector checks the search asks for, and Bootstrap (bootstrap.go).
type Schema struct{ *conn }

// Fields returns the fixed custom field names in use.
func (c *Schema) Fields() FieldNames { return c.cfg.Fields }

// CheckSchema reads all custom fields on dcim.device and checks the fixed
// fields and every selector key: the field exists, is on dcim.device, has a
// supported type matching the value, and filter_logic exact. Any problem is a
// KindSchema error – a configuration error, never "no capacity".
func (c *Schema) CheckSchema(ctx context.Context, sel Selector) error {
	norm, err := normalizeSelector(sel, c.cfg.Fields)
	if err != nil {
		return err
	}
	return c.checkSchema(ctx, norm)
}

func (c *Schema) checkSchema(ctx context.Context, sel map[string]selector.Value) error {
	fields, err := c.listCustomFields(ctx)
	if err != nil {
		return err
	}
	return c.fieldProblems(fields, sel)
}

// schemaReuse is how long the custom fields one selector check read serve the next ones (Matcher): a
// burst of requests that begin to choose hosts costs one listing, not one each; a field an
// administrator changes is seen within it.
const schemaReuse = 30 * time.Second

// recentFields caches the custom field listing for selector checks. The lock is held across the
// listing, so that checks arriving together wait for one.
type recentFields struct {
	mu     sync.Mutex
	at     time.Time
	fields map[string]fieldInfo
	err    error     // the last listing's failure, shared for failedReuse: checks queued behind a hung
	errAt  time.Time // NetBox do not each wait out their own timeout
}

// failedReuse is how long a failed listing's error answers the checks that follow.
const failedReuse = 5 * time.Second

// checkSchemaRecent is checkSchema on a listing at most schemaReuse old.
func (c *Schema) checkSchemaRecent(ctx context.Context, sel map[string]selector.Value) error {
	r := &c.recent
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil && c.clock.Since(r.errAt) < failedReuse {
		return r.err
	}
	if r.fields == nil || c.clock.Since(r.at) >= schemaReuse {
		fields, err := c.listCustomFields(ctx)
		if err != nil {
			r.err, r.errAt = err, c.clock.Now()
			return err
		}
		r.fields, r.at, r.err = fields, c.clock.Now(), nil
	}
	return c.fieldProblems(r.fields, sel)
}

// fieldProblems checks the fixed fields and the selector's keys against the custom fields.
func (c *Schema) fieldProblems(fields map[string]fieldInfo, sel map[string]selector.Value) error {
	var problems []string
	for _, spec := range fixedFields(c.cfg.Fields) {
		f, ok := fields[spec.name]
		if p := spec.problem(f, ok); p != "" {
			problems = append(problems, p)
		}
	}

	for _, k := range slices.Sorted(maps.Keys(sel)) {
		f, ok := fields[k]
		if !ok || !f.onDevice() {
			problems = append(problems, fmt.Sprintf("selector key %s: no such custom field on dcim.device", k))
			continue
		}
		want, supported := selectorTypes[f.typ]
		switch {
		case !supported:
			problems = append(problems, fmt.Sprintf("selector key %s: field type %s is not supported (text, select, integer, boolean)", k, f.typ))
		case f.filterLogic != "exact":
			problems = append(problems, fmt.Sprintf("selector key %s: field has filter_logic %s, want exact", k, f.filterLogic))
		case sel[k].Kind() != want:
			problems = append(problems, fmt.Sprintf("selector key %s: field is %s, value is %s", k, f.typ, sel[k].Kind()))
		}
	}
	if len(problems) > 0 {
		return &Error{Kind: KindSchema, Op: "schema", Err: errors.New(strings.Join(problems, "; "))}
	}
	return nil
}

// listCustomFields reads every page of the custom fields on dcim.device, or, given names, of the
// fields of those names on any object type.
func (c *Schema) listCustomFields(ctx context.Context, names ...string) (map[string]fieldInfo, error) {
	out := map[string]fieldInfo{}
	offset := int32(0)
	for page := 0; ; page++ {
		if page >= c.maxPages {
			c.metrics.apiError("protocol")
			return nil, newError(KindProtocol, "schema", "custom field list does not end")
		}
		rows, next, err := c.customFieldPage(ctx, offset, names)
		if err != nil {
			return nil, err
		}
		for _, f := range rows {
			out[f.name] = f
		}
		if next == nil {
			return out, nil
		}
		if offset, err = nextOffset(*next, offset); err != nil {
			c.metrics.apiError("protocol")
			return nil, &Error{Kind: KindProtocol, Op: "schema", Err: err}
		}
	}
}

func (c *Schema) customFieldPage(ctx context.Context, offset int32, names []string) ([]fieldInfo, *string, error) {
	rctx := withRequestOptions(ctx, requestOptions{op: "list_custom_fields"})
	req := c.api.ExtrasAPI.ExtrasCustomFieldsList(rctx).Limit(c.fieldPage).Offset(offset)
	if len(names) > 0 {
		req = req.Name(names)
	} else {
		req = req.ObjectType(deviceObjectType)
	}
	res, resp, err := req.Execute()
	if err == nil {
		rows := make([]fieldInfo, 0, len(res.Results))
		for _, f := range res.Results {
			fi := fieldInfo{name: f.Name, objectTypes: f.ObjectTypes}
			if f.Type.Value != nil {
				fi.typ = string(*f.Type.Value)
			}
			fi.filterLogic = "loose" // NetBox's default when unset
			if f.FilterLogic != nil && f.FilterLogic.Value != nil {
				fi.filterLogic = string(*f.FilterLogic.Value)
			}
			rows = append(rows, fi)
		}
		return rows, res.Next.Get(), nil
	}
	// go-netbox 4.3 cannot decode a select field's choice_set (NetBox sends
	// choices_count as an integer, its model wants a string): read the fields
	// we need from the same answer.
	if body, ok := undecodedBody(resp, err); ok {
		var lp lenientPage[lenientField]
		if derr := decodeLenient(body, &lp); derr == nil && lp.Results != nil {
			c.log.Debug("go-netbox could not decode the custom field list; read it tolerantly", zap.Int("rows", len(lp.Results)))
			rows := make([]fieldInfo, 0, len(lp.Results))
			for _, f := range lp.Results {
				fi := fieldInfo{name: f.Name, typ: f.Type.Value, objectTypes: f.ObjectTypes, filterLogic: "loose"}
				if f.FilterLogic != nil {
					fi.filterLogic = f.FilterLogic.Value
				}
				rows = append(rows, fi)
			}
			return rows, lp.Next, nil
		}
	}
	return nil, nil, c.toError("schema", resp, err, false)
}

// nextOffset reads the offset of NetBox's absolute `next` link. Only the
// offset is taken: the link's scheme and host may be wrong behind a proxy, and
// the token must never go anywhere but the configured origin.
func nextOffset(next string, current int32) (int32, error) {
	u, err := url.Parse(next)
	if err != nil {
		return 0, errors.New("unreadable next link")
	}
	n, err := strconv.ParseInt(u.Query().Get("offset"), 10, 32)
	if err != nil || int32(n) <= current {
		return 0, errors.New("next link does not advance the offset")
	}
	return int32(n), nil
}
