// Package netboxsim is an in-memory NetBox ≥ 4.6 REST API simulator.
//
// It answers the paths the o2ims NetBox inventory client uses, shaped like
// NetBox 4.6 so that go-netbox's own models decode its JSON:
//
//   - GET   /api/status/
//   - GET   /api/extras/custom-fields/        (object_type, name filters; offset paging)
//   - GET   /api/dcim/devices/                (status, id, cf_<name>, cf_<name>__empty; offset paging)
//   - GET   /api/dcim/devices/<id>/           (weak ETag W/"<last_updated>")
//   - PATCH /api/dcim/devices/<id>/           (If-Match, status, custom_fields, changelog_message)
//   - GET   /api/dcim/sites/, /api/dcim/device-types/   (id, last_updated lookups; offset paging)
//
// Routes are ServeMux method patterns (routes.go), one file per endpoint family (status.go,
// customfields.go, devices.go with devicefilters.go and devicepatch.go, sites.go, devicetypes.go);
// what tests steer is in control.go.
//
// NetBox behaviour it mirrors, checked against NetBox's source (v4.6.8):
// weak ETags from last_updated.isoformat() and 412 with the current ETag
// (netbox/netbox/api/viewsets/__init__.py), token parsing and 403 bodies
// (netbox/netbox/api/authentication.py), LimitOffset paging with absolute,
// key-sorted next/previous links, default 50 and maximum 1000
// (netbox/netbox/api/pagination.py, netbox/netbox/config/parameters.py),
// custom field filters (netbox/netbox/filtersets.py,
// netbox/extras/models/customfields.py): unknown filter parameters are
// ignored, "disabled" fields get no filter, "loose" text fields filter with
// icontains and get no __empty lookup, boolean fields get no __empty lookup,
// __empty matches "", null and a missing key.
//
// Tests drive it through Go methods (AddCustomField, AddDevice, SetStatus,
// SetCustom, InjectFault, SetLatency, DropPatchAnswers, Calls, PatchLog);
// a standalone program can serve Handler() and load a Seed file.
package netboxsim
