package netboxsim

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// AddCustomField defines a custom field and returns its id. It panics on an
// invalid definition (a test bug).
func (s *Server) AddCustomField(cf CustomField) int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, err := s.addFieldLocked(cf)
	if err != nil {
		panic(err)
	}
	return id
}

func (s *Server) addFieldLocked(cf CustomField) (int32, error) {
	if cf.Name == "" || strings.Trim(cf.Name, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
		return 0, fmt.Errorf("netboxsim: invalid custom field name %q", cf.Name)
	}
	if _, ok := typeLabels[cf.Type]; !ok {
		return 0, fmt.Errorf("netboxsim: custom field %s: unknown type %q", cf.Name, cf.Type)
	}
	if _, dup := s.fields[cf.Name]; dup {
		return 0, fmt.Errorf("netboxsim: custom field %s already exists", cf.Name)
	}
	if cf.FilterLogic == "" {
		cf.FilterLogic = FilterLoose // NetBox's model default
	}
	if _, ok := filterLogicLabels[cf.FilterLogic]; !ok {
		return 0, fmt.Errorf("netboxsim: custom field %s: unknown filter logic %q", cf.Name, cf.FilterLogic)
	}
	if len(cf.ObjectTypes) == 0 {
		cf.ObjectTypes = []string{"dcim.device"}
	}
	cf.ObjectTypes = append([]string(nil), cf.ObjectTypes...)
	cf.Choices = append([]string(nil), cf.Choices...)
	cf.ID = s.nextField
	s.nextField++
	s.fields[cf.Name] = &field{CustomField: cf, created: s.stampLocked()}
	return cf.ID, nil
}

// RemoveCustomField deletes a custom field definition (stored values stay, as
// NetBox keeps custom_field_data until cleaned up, but are no longer rendered).
func (s *Server) RemoveCustomField(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.fields[name]; !ok {
		return false
	}
	delete(s.fields, name)
	return true
}

// StandardFields are the four fixed o2ims fields with their default names.
func StandardFields() []CustomField {
	return []CustomField{
		{Name: "o2ims_managed", Type: TypeBoolean, Label: "O2IMS managed", FilterLogic: FilterExact},
		{Name: "o2ims_request_uid", Type: TypeText, Label: "O2IMS request UID", FilterLogic: FilterExact},
		{Name: "o2ims_bmc_address", Type: TypeText, Label: "O2IMS BMC address", FilterLogic: FilterExact},
		{Name: "o2ims_boot_mac", Type: TypeText, Label: "O2IMS boot MAC", FilterLogic: FilterExact},
	}
}

func (s *Server) sortedFieldsLocked() []*field {
	// NetBox orders custom fields by group_name, weight, name; all share group and weight here.
	return slices.SortedFunc(maps.Values(s.fields), func(a, b *field) int { return cmp.Compare(a.Name, b.Name) })
}

func (s *Server) handleCustomFields(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	base := baseURL(r)
	s.mu.Lock()
	var rows []any
	for _, f := range s.sortedFieldsLocked() {
		if ots, ok := q["object_type"]; ok && !anyMatch(ots, f.appliesTo) {
			continue
		}
		if names, ok := q["name"]; ok && !slices.Contains(names, f.Name) {
			continue
		}
		rows = append(rows, s.renderFieldLocked(f, base))
	}
	s.mu.Unlock()
	s.writePage(w, r, rows)
}

func anyMatch(values []string, pred func(string) bool) bool {
	for _, v := range values {
		if v != "" && pred(v) {
			return true
		}
	}
	return false
}

func (s *Server) renderFieldLocked(f *field, base string) map[string]any {
	display := f.Label
	if display == "" {
		display = f.Name
	}
	var choiceSet any
	if f.Type == TypeSelect || f.Type == TypeMultiSelect {
		// NetBox serialises choices_count as an integer (IntegerField), although
		// the OpenAPI schema go-netbox 4.3 was generated from says string.
		choiceSet = map[string]any{
			"id": f.ID, "url": fmt.Sprintf("%s/api/extras/custom-field-choice-sets/%d/", base, f.ID),
			"display": f.Name + "_choices", "name": f.Name + "_choices", "description": "",
			"choices_count": len(f.Choices),
		}
	}
	return map[string]any{
		"id":                    f.ID,
		"url":                   fmt.Sprintf("%s/api/extras/custom-fields/%d/", base, f.ID),
		"display_url":           fmt.Sprintf("%s/extras/custom-fields/%d/", base, f.ID),
		"display":               display,
		"object_types":          f.ObjectTypes,
		"type":                  map[string]any{"value": f.Type, "label": typeLabels[f.Type]},
		"related_object_type":   nil,
		"data_type":             f.dataType(),
		"name":                  f.Name,
		"label":                 f.Label,
		"group_name":            "",
		"description":           f.Description,
		"required":              f.Required,
		"unique":                false,
		"search_weight":         1000,
		"filter_logic":          map[string]any{"value": f.FilterLogic, "label": filterLogicLabels[f.FilterLogic]},
		"ui_visible":            map[string]any{"value": "always", "label": "Always"},
		"ui_editable":           map[string]any{"value": "yes", "label": "Yes"},
		"is_cloneable":          false,
		"default":               nil,
		"related_object_filter": nil,
		"weight":                100,
		"validation_minimum":    nil,
		"validation_maximum":    nil,
		"validation_regex":      "",
		"validation_schema":     nil,
		"choice_set":            choiceSet,
		"owner":                 nil,
		"comments":              "",
		"created":               pyISO(f.created, "Z"),
		"last_updated":          pyISO(f.created, "Z"),
	}
}

// handleCustomFieldCreate is POST /api/extras/custom-fields/ as NetBox's CustomFieldSerializer takes
// it: name, type and object_types required; label, description, required, filter_logic (default
// loose) optional; other writable fields accepted and ignored here; unknown keys ignored, as DRF does.
// A field error is a 400 keyed by the field, a list of messages; success is a 201 with the field as
// GET renders it.
func (s *Server) handleCustomFieldCreate(w http.ResponseWriter, r *http.Request) {
	var body any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"detail": "JSON parse error - " + err.Error()}, "")
		return
	}
	obj, ok := body.(map[string]any)
	if !ok {
		writeJSON(w, http.StatusBadRequest, map[string]any{"non_field_errors": []string{
			fmt.Sprintf("Invalid data. Expected a dictionary, but got %s.", jsonTypeName(body))}}, "")
		return
	}
	cf, problems := customFieldFromRequest(obj)
	s.mu.Lock()
	if _, dup := s.fields[cf.Name]; dup && problems["name"] == nil {
		problems["name"] = []string{"custom field with this name already exists."}
	}
	if len(problems) > 0 {
		s.mu.Unlock()
		writeJSON(w, http.StatusBadRequest, problems, "")
		return
	}
	_, err := s.addFieldLocked(cf)
	var out map[string]any
	if err == nil {
		out = s.renderFieldLocked(s.fields[cf.Name], baseURL(r))
	}
	s.mu.Unlock()
	if err != nil { // customFieldFromRequest lets nothing through that addFieldLocked refuses
		writeJSON(w, http.StatusInternalServerError, map[string]any{"detail": err.Error()}, "")
		return
	}
	writeJSON(w, http.StatusCreated, out, "")
}

// customFieldFromRequest validates a create body field by field, with DRF's and NetBox's messages.
func customFieldFromRequest(obj map[string]any) (CustomField, map[string][]string) {
	problems := map[string][]string{}
	var cf CustomField
	str := stringMember(obj, problems)
	if name, ok := str("name", true); ok {
		if problem := customFieldNameProblem(name); problem != "" {
			problems["name"] = []string{problem}
		}
		cf.Name = name
	}
	if typ, ok := str("type", true); ok {
		if _, known := typeLabels[typ]; !known {
			problems["type"] = []string{fmt.Sprintf("%q is not a valid choice.", typ)}
		}
		if typ == TypeSelect || typ == TypeMultiSelect || typ == "object" || typ == "multiobject" {
			// Those need a choice set or a related object type, which the simulator does not model.
			problems["type"] = []string{"netboxsim: creating " + typ + " fields over the API is not simulated"}
		}
		cf.Type = typ
	}
	if fl, ok := str("filter_logic", false); ok {
		if _, known := filterLogicLabels[fl]; !known {
			problems["filter_logic"] = []string{fmt.Sprintf("%q is not a valid choice.", fl)}
		}
		cf.FilterLogic = fl
	}
	if label, ok := str("label", false); ok {
		if len(label) > 50 {
			problems["label"] = []string{"Ensure this field has no more than 50 characters."}
		}
		cf.Label = label
	}
	if desc, ok := str("description", false); ok {
		if len(desc) > 200 {
			problems["description"] = []string{"Ensure this field has no more than 200 characters."}
		}
		cf.Description = desc
	}
	if v, present := obj["required"]; present {
		b, ok := v.(bool)
		if !ok {
			problems["required"] = []string{"Must be a valid boolean."}
		}
		cf.Required = b
	}
	cf.ObjectTypes = objectTypesFromRequest(obj["object_types"], problems)
	return cf, problems
}

// stringMember reads obj's string members for customFieldFromRequest: ok when present and a string, the
// problem recorded in problems otherwise.
func stringMember(obj map[string]any, problems map[string][]string) func(key string, required bool) (string, bool) {
	return func(key string, required bool) (string, bool) {
		v, present := obj[key]
		switch {
		case !present && required:
			problems[key] = []string{"This field is required."}
		case !present:
		case v == nil:
			problems[key] = []string{"This field may not be null."}
		default:
			s, ok := v.(string)
			if !ok {
				problems[key] = []string{"Not a valid string."}
				return "", false
			}
			return s, true
		}
		return "", false
	}
}

// customFieldNameProblem is NetBox's refusal of a custom field's name, "" when it is fine.
func customFieldNameProblem(name string) string {
	switch {
	case name == "":
		return "This field may not be blank."
	case len(name) > 50:
		return "Ensure this field has no more than 50 characters."
	case strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789_") != "":
		return "Only alphanumeric characters and underscores are allowed."
	case strings.Contains(name, "__"):
		return "Double underscores are not permitted in custom field names."
	}
	return ""
}

// objectTypesFromRequest reads a create body's object_types: the content types up to the first refused
// one, whose problem is recorded in problems.
func objectTypesFromRequest(v any, problems map[string][]string) []string {
	var out []string
	switch ots := v.(type) {
	case nil:
		problems["object_types"] = []string{"This field is required."}
	case []any:
		if len(ots) == 0 {
			problems["object_types"] = []string{"This list may not be empty."}
		}
		for _, v := range ots {
			s, _ := v.(string)
			app, model, found := strings.Cut(s, ".")
			if !found || app == "" || model == "" || strings.Contains(model, ".") {
				problems["object_types"] = []string{"Invalid value. Specify a content type as '<app_label>.<model_name>'."}
				break
			}
			if !knownObjectTypes[s] {
				problems["object_types"] = []string{"Invalid content type: " + s}
				break
			}
			out = append(out, s)
		}
	default:
		problems["object_types"] = []string{fmt.Sprintf("Expected a list of items but got type %q.", jsonTypeName(ots))}
	}
	return out
}

// knownObjectTypes are the content types a custom field may be assigned to in the simulator (NetBox
// has many more; these are the ones tests use).
var knownObjectTypes = map[string]bool{
	"dcim.device": true, "dcim.site": true, "dcim.devicetype": true, "dcim.rack": true,
	"dcim.interface": true, "ipam.ipaddress": true, "virtualization.virtualmachine": true,
}

func jsonTypeName(v any) string {
	switch v.(type) {
	case []any:
		return "list"
	case map[string]any:
		return "dict"
	case string:
		return "str"
	case float64:
		return "int"
	case bool:
		return "bool"
	}
	return "NoneType"
}
