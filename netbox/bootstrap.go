package netbox

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"

	nb "github.com/netbox-community/go-netbox/v4"
)

// Bootstrap (`o2ims-operator netbox bootstrap`) prepares a NetBox for the operator: it checks the
// version, finds out what the token may do, and creates the four fixed custom fields that are missing.
// It changes nothing else, and never an existing field: one with a definition the operator cannot use
// is reported, and then no field is created at all.

// FieldOutcome is what Bootstrap did about one fixed field.
type FieldOutcome struct {
	Name, Role string
	Definition string // what the operator needs, e.g. "boolean, filter logic exact, on dcim.device"
	Outcome    string // FieldCreated, FieldExisted, FieldWrong, FieldNotCreated
	Detail     string // why, for FieldWrong and FieldNotCreated
}

// Field outcomes.
const (
	FieldCreated    = "created"
	FieldExisted    = "existed"
	FieldWrong      = "wrong definition"
	FieldNotCreated = "not created"
)

// Permission is one thing the operator does in NetBox, and whether the token may do it.
type Permission struct {
	What       string // "read devices"
	Permission string // NetBox's permission: dcim.view_device
	Granted    bool
	Detail     string // how it was found out
}

// BootstrapReport is everything Bootstrap found and did, in order.
type BootstrapReport struct {
	Version     string // netbox-version as NetBox reports it
	Permissions []Permission
	Fields      []FieldOutcome
}

// MissingPermissions are the permissions the token lacks.
func (r *BootstrapReport) MissingPermissions() []Permission {
	var out []Permission
	for _, p := range r.Permissions {
		if !p.Granted {
			out = append(out, p)
		}
	}
	return out
}

// probeDeviceID is a device id no NetBox hands out (ids are a sequence from 1): the change-permission
// probe PATCHes it, with an If-Match no device can carry, so nothing is ever written.
const probeDeviceID = math.MaxInt32

// Bootstrap checks NetBox's version (refusing one older than the operator accepts before anything
// else), probes the token's permissions (see probePermissions), then creates the fixed fields that do
// not exist. The report is returned with the error, filled as far as Bootstrap got. The error is nil
// only if NetBox is ready for the operator with this token: every field usable, every permission
// granted.
func (c *Schema) Bootstrap(ctx context.Context) (*BootstrapReport, error) {
	rep := &BootstrapReport{}
	v, err := c.netboxVersion(ctx)
	if err != nil {
		return rep, err
	}
	rep.Version = v
	got, ok := parseVersion(v)
	if !ok {
		return rep, newError(KindProtocol, "bootstrap", "cannot read netbox-version %q", v)
	}
	if compareVersion(got, minVersion) < 0 {
		return rep, newError(KindUnsupported, "bootstrap",
			"NetBox %d.%d.%d is older than %d.%d.%d, the first release with ETag/If-Match (needed for safe claims); nothing was changed",
			got[0], got[1], got[2], minVersion[0], minVersion[1], minVersion[2])
	}

	if rep.Permissions, err = c.probePermissions(ctx); err != nil {
		return rep, err
	}
	if err := c.bootstrapFields(ctx, rep); err != nil {
		return rep, err
	}
	if missing := rep.MissingPermissions(); len(missing) > 0 {
		names := make([]string, len(missing))
		for i, p := range missing {
			names[i] = p.Permission
		}
		return rep, newError(KindForbidden, "bootstrap", "the token lacks what the operator needs: %s", strings.Join(names, ", "))
	}
	// The operator's own start-up check, as the last word.
	if err := c.checkSchema(ctx, nil); err != nil {
		return rep, err
	}
	return rep, nil
}

// probePermissions finds out, without changing anything, whether the token may do what the operator
// does. NetBox checks a model permission (TokenPermissions: view for GET, change for PATCH, and a
// write-enabled token for any write) before it looks at the objects, so:
//   - reads: a list of one object of each model: 200 granted, 403 not;
//   - change devices: a PATCH of a device id no NetBox hands out, with an If-Match no device carries:
//     403 means not granted; 404 (no such device, after the permission passed) or 412 means granted.
//
// Object-level constraints of a permission (only some sites, say) cannot be seen this way: a granted
// permission may still not cover every pool device.
func (c *Schema) probePermissions(ctx context.Context) ([]Permission, error) {
	read := func(what, perm, op string, call func(context.Context) (*http.Response, error)) (Permission, error) {
		p := Permission{What: what, Permission: perm}
		resp, err := call(withRequestOptions(ctx, requestOptions{op: op}))
		switch {
		case resp != nil && resp.StatusCode == http.StatusOK:
			p.Granted, p.Detail = true, "a list of one answered 200"
		case resp != nil && resp.StatusCode == http.StatusForbidden:
			p.Detail = "a list of one answered 403"
		default:
			return p, c.toError("bootstrap", resp, err, false)
		}
		return p, nil
	}
	api := c.api
	probes := []struct {
		what, perm, op string
		call           func(context.Context) (*http.Response, error)
	}{
		{"read devices", "dcim.view_device", "list_devices", func(ctx context.Context) (*http.Response, error) {
			_, resp, err := api.DcimAPI.DcimDevicesList(ctx).Limit(1).Execute()
			return resp, err
		}},
		{"read sites", "dcim.view_site", "list_sites", func(ctx context.Context) (*http.Response, error) {
			_, resp, err := api.DcimAPI.DcimSitesList(ctx).Limit(1).Execute()
			return resp, err
		}},
		{"read device types", "dcim.view_devicetype", "list_device_types", func(ctx context.Context) (*http.Response, error) {
			_, resp, err := api.DcimAPI.DcimDeviceTypesList(ctx).Limit(1).Execute()
			return resp, err
		}},
		{"read custom fields", "extras.view_customfield", "list_custom_fields", func(ctx context.Context) (*http.Response, error) {
			_, resp, err := api.ExtrasAPI.ExtrasCustomFieldsList(ctx).Limit(1).Execute()
			return resp, err
		}},
	}
	var out []Permission
	for _, pr := range probes {
		p, err := read(pr.what, pr.perm, pr.op, pr.call)
		if err != nil {
			return out, err
		}
		out = append(out, p)
	}

	p := Permission{What: "change devices", Permission: "dcim.change_device"}
	rctx := withRequestOptions(ctx, requestOptions{op: "patch_device", ifMatch: `"o2ims-bootstrap-probe"`})
	_, resp, err := api.DcimAPI.DcimDevicesPartialUpdate(rctx, probeDeviceID).
		PatchedWritableDeviceWithConfigContextRequest(nb.PatchedWritableDeviceWithConfigContextRequest{}).Execute()
	switch {
	case resp != nil && (resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusPreconditionFailed):
		p.Granted, p.Detail = true, fmt.Sprintf("a conditional PATCH of device %d (none has that id) passed the permission check and answered %d", probeDeviceID, resp.StatusCode)
	case resp != nil && resp.StatusCode == http.StatusForbidden:
		p.Detail = fmt.Sprintf("a conditional PATCH of device %d answered 403 (no change permission, or a token without write enabled)", probeDeviceID)
	case resp != nil && resp.StatusCode == http.StatusOK:
		// Only a device with that id and an ETag equal to the probe's could get here: nothing changed, as
		// the body was empty, but the probe's premise is gone.
		return out, newError(KindProtocol, "bootstrap", "the change-permission probe of device %d answered 200; nothing was changed", probeDeviceID)
	default:
		return out, c.toError("bootstrap", resp, err, false)
	}
	return append(out, p), nil
}

// bootstrapFields reads the four fields by name (on any object type: names are unique in NetBox), and
// creates the missing ones only if none of the existing ones is wrong.
func (c *Schema) bootstrapFields(ctx context.Context, rep *BootstrapReport) error {
	specs := fixedFields(c.cfg.Fields)
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.name
	}
	existing, err := c.listCustomFields(ctx, names...)
	if err != nil {
		return err
	}
	var wrong []string
	for _, s := range specs {
		o := FieldOutcome{Name: s.name, Role: s.role, Definition: s.definition()}
		if f, ok := existing[s.name]; ok {
			o.Outcome = FieldExisted
			if p := s.problem(f, true); p != "" {
				if !f.onDevice() {
					p = fmt.Sprintf("%s field %s exists on %s, not on dcim.device", s.role, s.name, strings.Join(f.objectTypes, ", "))
				}
				o.Outcome, o.Detail = FieldWrong, p
				wrong = append(wrong, p)
			}
		}
		rep.Fields = append(rep.Fields, o)
	}
	if len(wrong) > 0 {
		for i := range rep.Fields {
			if rep.Fields[i].Outcome == "" {
				rep.Fields[i].Outcome, rep.Fields[i].Detail = FieldNotCreated, "an existing field has a wrong definition"
			}
		}
		return &Error{Kind: KindSchema, Op: "bootstrap", Err: fmt.Errorf(
			"%s; nothing was changed: fix the field in NetBox (or name other fields with NETBOX_FIELD_*) and run again",
			strings.Join(wrong, "; "))}
	}
	for i, s := range specs {
		if rep.Fields[i].Outcome != "" {
			continue
		}
		if err := c.createField(ctx, s); err != nil {
			rep.Fields[i].Outcome, rep.Fields[i].Detail = FieldNotCreated, err.Error()
			var ne *Error
			if errors.As(err, &ne) && ne.MayHaveLanded {
				// The answer was lost: NetBox may hold the field now; a second run finds it either way.
				rep.Fields[i].Detail = "may have been created (the answer was lost); run bootstrap again: " + err.Error()
			}
			for j := i + 1; j < len(specs); j++ {
				if rep.Fields[j].Outcome == "" {
					rep.Fields[j].Outcome, rep.Fields[j].Detail = FieldNotCreated, "not tried after the failure above"
				}
			}
			return err
		}
		rep.Fields[i].Outcome = FieldCreated
	}
	return nil
}

// definition is what the operator needs of the field, as the report prints it.
func (s fixedField) definition() string {
	d := strings.Join(s.types, " or ")
	switch s.filterLogic {
	case "exact":
		d += ", filter logic exact"
	case "enabled":
		d += ", filter logic not disabled"
	}
	return d + ", on " + deviceObjectType
}

// createField POSTs the field as the operator needs it: the first accepted type, filter logic exact
// (what the owner filter needs, and accepted by every check), not required, on dcim.device.
func (c *Schema) createField(ctx context.Context, s fixedField) error {
	req := nb.NewWritableCustomFieldRequest([]string{deviceObjectType}, s.name)
	req.SetType(nb.PatchedWritableCustomFieldRequestType(s.types[0]))
	req.SetFilterLogic(nb.PATCHEDWRITABLECUSTOMFIELDREQUESTFILTERLOGIC_EXACT)
	req.SetLabel(s.label)
	req.SetDescription(s.description)
	req.SetRequired(false)
	rctx := withRequestOptions(ctx, requestOptions{op: "create_custom_field"})
	res, resp, err := c.api.ExtrasAPI.ExtrasCustomFieldsCreate(rctx).WritableCustomFieldRequest(*req).Execute()
	if err != nil {
		e := c.toError("bootstrap", resp, err, true)
		if e.Kind == KindForbidden {
			e.Err = fmt.Errorf("creating custom field %s needs extras.add_customfield and a write-enabled token (run bootstrap once with an administrator's token in %s, or create the field by hand): %w",
				s.name, EnvTokenFile, e.Err)
		}
		return e
	}
	if res == nil || res.Name != s.name {
		return newError(KindProtocol, "bootstrap", "NetBox's answer to creating custom field %s names another field", s.name)
	}
	return nil
}
