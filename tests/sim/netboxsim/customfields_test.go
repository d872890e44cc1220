package netboxsim_test

import (
	"context"
	"net/http"
	"testing"

	nb "github.com/netbox-community/go-netbox/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
)

// The 201 of POST /api/extras/custom-fields/ decodes with go-netbox's CustomField model, and the field
// is then listed as NetBox lists it.
func TestGoNetboxCreatesACustomField(t *testing.T) {
	s, base := start(t, netboxsim.Options{})
	c := apiClient(base)
	ctx := context.Background()
	req := nb.NewWritableCustomFieldRequest([]string{"dcim.device"}, "o2ims_request_uid")
	req.SetType(nb.PATCHEDWRITABLECUSTOMFIELDREQUESTTYPE_TEXT)
	req.SetLabel("O2IMS request UID")
	req.SetFilterLogic(nb.PATCHEDWRITABLECUSTOMFIELDREQUESTFILTERLOGIC_EXACT)
	req.SetDescription("owner")
	req.SetRequired(false)
	created, resp, err := c.ExtrasAPI.ExtrasCustomFieldsCreate(ctx).WritableCustomFieldRequest(*req).Execute()
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, "o2ims_request_uid", created.Name)
	assert.Equal(t, nb.CUSTOMFIELDTYPEVALUE_TEXT, *created.Type.Value)
	assert.Equal(t, nb.CUSTOMFIELDFILTERLOGICVALUE_EXACT, *created.FilterLogic.Value)
	assert.Equal(t, []string{"dcim.device"}, created.ObjectTypes)
	assert.Equal(t, "O2IMS request UID", created.GetLabel())
	assert.Equal(t, "owner", created.GetDescription())
	assert.Positive(t, created.Id)
	assert.Equal(t, 1, s.Calls(http.MethodPost, netboxsim.RouteCustomFields))

	list, _, err := c.ExtrasAPI.ExtrasCustomFieldsList(ctx).ObjectType("dcim.device").Execute()
	require.NoError(t, err)
	require.Len(t, list.Results, 1)
	assert.Equal(t, created.Id, list.Results[0].Id)

	// Without filter_logic, NetBox's model default (loose).
	flag := nb.NewWritableCustomFieldRequest([]string{"dcim.device"}, "flag")
	flag.SetType(nb.PATCHEDWRITABLECUSTOMFIELDREQUESTTYPE_BOOLEAN)
	loose, _, err := c.ExtrasAPI.ExtrasCustomFieldsCreate(ctx).WritableCustomFieldRequest(*flag).Execute()
	require.NoError(t, err)
	assert.Equal(t, nb.CUSTOMFIELDFILTERLOGICVALUE_LOOSE, *loose.FilterLogic.Value)
}

func TestCustomFieldCreateValidation(t *testing.T) {
	s, base := start(t, netboxsim.Options{})
	s.AddCustomField(netboxsim.CustomField{Name: "taken", Type: netboxsim.TypeText})
	r := raw{t, base}
	cases := []struct {
		name, body, key, msg string
	}{
		{"duplicate", `{"name":"taken","type":"text","object_types":["dcim.device"]}`, "name", "custom field with this name already exists."},
		{"no name", `{"type":"text","object_types":["dcim.device"]}`, "name", "This field is required."},
		{"bad name", `{"name":"Bad-Name","type":"text","object_types":["dcim.device"]}`, "name", "Only alphanumeric characters and underscores are allowed."},
		{"double underscore", `{"name":"a__b","type":"text","object_types":["dcim.device"]}`, "name", "Double underscores are not permitted in custom field names."},
		{"bad type", `{"name":"x","type":"texty","object_types":["dcim.device"]}`, "type", `"texty" is not a valid choice.`},
		{"no object types", `{"name":"x","type":"text"}`, "object_types", "This field is required."},
		{"unknown object type", `{"name":"x","type":"text","object_types":["dcim.nothing"]}`, "object_types", "Invalid content type: dcim.nothing"},
		{"bad filter logic", `{"name":"x","type":"text","object_types":["dcim.device"],"filter_logic":"fuzzy"}`, "filter_logic", `"fuzzy" is not a valid choice.`},
		{"not an object", `[]`, "non_field_errors", "Invalid data. Expected a dictionary, but got list."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := r.do(http.MethodPost, "/api/extras/custom-fields/", nil, tc.body)
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
			assert.Equal(t, []any{tc.msg}, body[tc.key], "%v", body)
		})
	}
	_, body := r.do(http.MethodGet, "/api/extras/custom-fields/", nil, "")
	assert.EqualValues(t, 1, body["count"], "nothing was created")
}

// Permissions are checked as NetBox's TokenPermissions does, before the view: a read-only (write
// disabled) token or a token without the model permission gets 403 on a write; with it, a PATCH of a
// device that does not exist is the view's 404.
func TestTokenPermissions(t *testing.T) {
	reader, writer, readOnly := "reader0123456789", "writer0123456789", "readonly012345678"
	_, base := start(t, netboxsim.Options{
		Tokens:         []string{token, reader, writer, readOnly},
		Permissions:    map[string][]string{reader: {"dcim.view_device"}, writer: {"dcim.view_device", "dcim.change_device"}},
		ReadOnlyTokens: []string{readOnly},
	})
	r := raw{t, base}
	const denied = "You do not have permission to perform this action."
	cases := []struct {
		name, tok, method, path, body string
		status                        int
	}{
		{"reader lists devices", reader, http.MethodGet, "/api/dcim/devices/", "", 200},
		{"reader cannot list sites", reader, http.MethodGet, "/api/dcim/sites/", "", 403},
		{"reader cannot list custom fields", reader, http.MethodGet, "/api/extras/custom-fields/", "", 403},
		{"status needs no model permission", reader, http.MethodGet, "/api/status/", "", 200},
		{"reader cannot patch", reader, http.MethodPatch, "/api/dcim/devices/999/", "{}", 403},
		{"writer patches: no such device", writer, http.MethodPatch, "/api/dcim/devices/999/", "{}", 404},
		{"writer cannot add custom fields", writer, http.MethodPost, "/api/extras/custom-fields/", `{"name":"x","type":"text","object_types":["dcim.device"]}`, 403},
		{"read-only token reads anything", readOnly, http.MethodGet, "/api/dcim/sites/", "", 200},
		{"read-only token cannot patch", readOnly, http.MethodPatch, "/api/dcim/devices/999/", "{}", 403},
		{"read-only token cannot post", readOnly, http.MethodPost, "/api/extras/custom-fields/", `{"name":"x","type":"text","object_types":["dcim.device"]}`, 403},
		{"unrestricted token", token, http.MethodPatch, "/api/dcim/devices/999/", "{}", 404},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := r.do(tc.method, tc.path, map[string]string{"Authorization": "Token " + tc.tok}, tc.body)
			assert.Equal(t, tc.status, resp.StatusCode)
			if tc.status == 403 {
				assert.Equal(t, denied, body["detail"])
			}
		})
	}
}
