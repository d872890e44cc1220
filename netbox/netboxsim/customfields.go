package netboxsim

import (
	"cmp"
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
		"description":           "",
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
