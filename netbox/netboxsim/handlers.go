package netboxsim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
)

func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
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

func (s *Server) handleDeviceList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	base := baseURL(r)
	s.mu.Lock()
	preds, badParam, badMsg := s.devicePredicatesLocked(q)
	if badParam != "" {
		s.mu.Unlock()
		writeJSON(w, http.StatusBadRequest, map[string]any{badParam: []string{badMsg}}, "")
		return
	}
	var rows []any
	for _, d := range s.sortedDevicesLocked() {
		keep := true
		for _, p := range preds {
			if !p(d) {
				keep = false
				break
			}
		}
		if keep {
			rows = append(rows, s.renderDeviceLocked(d, base))
		}
	}
	s.mu.Unlock()
	s.writePage(w, r, rows)
}

type predicate func(*device) bool

// devicePredicatesLocked builds the AND of the filters NetBox would apply; a
// parameter with no matching filter is ignored, as NetBox's FilterSet does.
func (s *Server) devicePredicatesLocked(q url.Values) (preds []predicate, badParam, badMsg string) {
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		values := q[key]
		if s.ignored[key] {
			continue
		}
		switch {
		case key == "status":
			want := nonEmpty(values)
			if len(want) == 0 {
				continue
			}
			for _, v := range want {
				if !s.validStatusLocked(v) {
					return nil, "status", fmt.Sprintf("Select a valid choice. %s is not one of the available choices.", v)
				}
			}
			preds = append(preds, func(d *device) bool { return slices.Contains(want, d.status) })
		case strings.HasPrefix(key, "last_updated"):
			when, bad, msg := timeFilters(url.Values{key: values})
			if bad != "" {
				return nil, bad, msg
			}
			preds = append(preds, func(d *device) bool { return when(d.lastUpdated) })
		case key == "site_id" || key == "device_type_id":
			ids, ok := idFilter(values)
			if !ok {
				return nil, key, "Select a valid choice. That choice is not one of the available choices."
			}
			if ids == nil {
				continue
			}
			bySite := key == "site_id"
			preds = append(preds, func(d *device) bool {
				if bySite {
					return ids[int64(d.siteID)]
				}
				return ids[int64(d.typeID)]
			})
		case key == "id":
			var ids []int64
			for _, v := range nonEmpty(values) {
				n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				if err != nil {
					return nil, "id", "Enter a number."
				}
				ids = append(ids, n)
			}
			if len(ids) == 0 {
				continue
			}
			preds = append(preds, func(d *device) bool {
				for _, n := range ids {
					if int64(d.id) == n {
						return true
					}
				}
				return false
			})
		case strings.HasPrefix(key, "cf_"):
			p, bad := s.customFieldPredicateLocked(key, values)
			if bad != "" {
				return nil, key, bad
			}
			if p != nil {
				preds = append(preds, p)
			}
		}
	}
	return preds, "", ""
}

func (s *Server) customFieldPredicateLocked(key string, values []string) (predicate, string) {
	name, lookup := strings.TrimPrefix(key, "cf_"), ""
	f, ok := s.fields[name]
	if !ok {
		if i := strings.LastIndex(name, "__"); i > 0 {
			name, lookup = name[:i], name[i+2:]
			f, ok = s.fields[name]
		}
	}
	if !ok || !f.appliesTo("dcim.device") || f.FilterLogic == FilterDisabled {
		return nil, "" // no such filter: ignored
	}
	switch lookup {
	case "":
		return f.exactPredicate(values)
	case "empty":
		// BooleanFilter has no lookup map; a loose text filter (icontains) is not a
		// "standard lookup", so neither gets derived lookups such as __empty.
		if f.Type == TypeBoolean || (f.FilterLogic == FilterLoose && isTextual(f.Type)) {
			return nil, ""
		}
		want, ok := parseBool(values)
		if !ok {
			return nil, ""
		}
		return func(d *device) bool { return isEmptyValue(d.custom, f.Name) == want }, ""
	}
	return nil, "" // other lookups are not simulated
}

func isTextual(t string) bool { return t == TypeText || t == TypeLongText || t == TypeURL }

func (f *field) exactPredicate(values []string) (predicate, string) {
	name := f.Name
	switch f.Type {
	case TypeBoolean:
		want, ok := parseBool(values)
		if !ok {
			return nil, "" // NullBooleanField cleans an unknown value to None: no filtering
		}
		return func(d *device) bool { v, ok := d.custom[name].(bool); return ok && v == want }, ""
	case TypeInteger, TypeDecimal:
		var nums []float64
		for _, v := range nonEmpty(values) {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return nil, "Enter a number."
			}
			nums = append(nums, n)
		}
		if len(nums) == 0 {
			return nil, ""
		}
		return func(d *device) bool {
			var got float64
			switch x := d.custom[name].(type) {
			case int64:
				got = float64(x)
			case float64:
				got = x
			default:
				return false
			}
			for _, n := range nums {
				if got == n {
					return true
				}
			}
			return false
		}, ""
	case TypeText, TypeLongText, TypeURL, TypeSelect:
		want := nonEmpty(values)
		if len(want) == 0 {
			return nil, ""
		}
		loose := f.FilterLogic == FilterLoose && isTextual(f.Type)
		return func(d *device) bool {
			got, ok := d.custom[name].(string)
			if !ok {
				return false
			}
			for _, w := range want {
				if (!loose && got == w) || (loose && strings.Contains(strings.ToLower(got), strings.ToLower(w))) {
					return true
				}
			}
			return false
		}, ""
	}
	return nil, ""
}

// parseBool mirrors Django's NullBooleanField: the last value counts.
func parseBool(values []string) (bool, bool) {
	if len(values) == 0 {
		return false, false
	}
	switch values[len(values)-1] {
	case "true", "True", "1":
		return true, true
	case "false", "False", "0":
		return false, true
	}
	return false, false
}

func isEmptyValue(custom map[string]any, name string) bool {
	v, ok := custom[name]
	return !ok || v == nil || v == ""
}

func nonEmpty(values []string) []string {
	var out []string
	for _, v := range values {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// writePage applies NetBox's LimitOffset paging and DRF's link building.
func (s *Server) writePage(w http.ResponseWriter, r *http.Request, rows []any) {
	q := r.URL.Query()
	limit := s.opts.PageSize
	if limit > s.opts.MaxPageSize {
		limit = s.opts.MaxPageSize
	}
	if v, err := strconv.Atoi(q.Get("limit")); err == nil && v >= 0 {
		if v == 0 || v > s.opts.MaxPageSize {
			limit = s.opts.MaxPageSize
		} else {
			limit = v
		}
	}
	offset := 0
	if v, err := strconv.Atoi(q.Get("offset")); err == nil && v > 0 {
		offset = v
	}
	count := len(rows)
	page := []any{}
	if offset < count {
		end := min(offset+limit, count)
		page = rows[offset:end]
	}
	self := baseURL(r) + r.URL.Path
	var next, prev any
	if offset+limit < count {
		next = pageLink(self, q, limit, offset+limit, true)
	}
	if offset > 0 {
		if offset-limit <= 0 {
			prev = pageLink(self, q, limit, 0, false) // DRF drops offset for the first page
		} else {
			prev = pageLink(self, q, limit, offset-limit, true)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": count, "next": next, "previous": prev, "results": page}, "")
}

// pageLink mimics DRF's replace_query_param/remove_query_param: keys sorted.
func pageLink(self string, q url.Values, limit, offset int, withOffset bool) string {
	c := url.Values{}
	for k, v := range q {
		c[k] = append([]string(nil), v...)
	}
	c.Set("limit", strconv.Itoa(limit))
	if withOffset {
		c.Set("offset", strconv.Itoa(offset))
	} else {
		c.Del("offset")
	}
	return self + "?" + c.Encode()
}

func (s *Server) handleDeviceGet(w http.ResponseWriter, r *http.Request, id int32) {
	s.mu.Lock()
	d, ok := s.devices[id]
	if !ok {
		s.mu.Unlock()
		writeJSON(w, http.StatusNotFound, map[string]any{"detail": "No Device matches the given query."}, "")
		return
	}
	body := s.renderDeviceLocked(d, baseURL(r))
	etag := ETag(d.lastUpdated)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, body, etag)
}

func (s *Server) recordAbandonedPatch(r *http.Request, id int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.patchLog = append(s.patchLog, PatchRecord{DeviceID: id, IfMatch: r.Header.Get("If-Match")})
}

func (s *Server) handleDevicePatch(w http.ResponseWriter, r *http.Request, id int32) {
	s.mu.Lock()
	hook := s.patchHook
	s.mu.Unlock()
	if hook != nil {
		hook(id)
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return
	}
	var body map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	decodeErr := dec.Decode(&body)

	s.mu.Lock()
	rec := PatchRecord{DeviceID: id, IfMatch: r.Header.Get("If-Match"), Body: deepCopyMap(normalizeMap(body))}
	if m, ok := body["changelog_message"].(string); ok {
		rec.ChangelogMessage = m
	}
	status, resp, etag, drop := s.applyPatchLocked(id, rec.IfMatch, body, decodeErr, baseURL(r))
	rec.Status = status
	rec.Committed = status == http.StatusOK
	if drop {
		rec.Status, rec.Dropped = 0, true
	}
	s.patchLog = append(s.patchLog, rec)
	s.mu.Unlock()

	if drop {
		// Committed, but the answer is lost: net/http closes the connection.
		panic(http.ErrAbortHandler)
	}
	writeJSON(w, status, resp, etag)
}

func normalizeMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out, _ := normalize(m).(map[string]any)
	return out
}

// applyPatchLocked mirrors NetBoxModelViewSet.update: object lookup, If-Match
// check (412 carrying the current ETag), serializer validation, save.
func (s *Server) applyPatchLocked(id int32, ifMatch string, body map[string]any, decodeErr error, base string) (int, any, string, bool) {
	d, ok := s.devices[id]
	if !ok {
		return http.StatusNotFound, map[string]any{"detail": "No Device matches the given query."}, "", false
	}
	current := ETag(d.lastUpdated)
	if ifMatch != "" && ifMatch != "*" {
		matched := false
		for _, e := range strings.Split(ifMatch, ",") {
			if strings.TrimSpace(e) == current {
				matched = true
			}
		}
		if !matched {
			return http.StatusPreconditionFailed, map[string]any{"detail": "Precondition failed."}, current, false
		}
	}
	if decodeErr != nil || body == nil {
		return http.StatusBadRequest, map[string]any{"non_field_errors": []string{"Invalid data. Expected a dictionary, but got str."}}, "", false
	}
	newStatus := d.status
	if v, present := body["status"]; present {
		st, ok := v.(string)
		if !ok || !s.validStatusLocked(st) {
			return http.StatusBadRequest, map[string]any{"status": []string{fmt.Sprintf("%q is not a valid choice.", fmt.Sprint(v))}}, "", false
		}
		newStatus = st
	}
	newCustom := deepCopyMap(d.custom)
	if v, present := body["custom_fields"]; present {
		cf, ok := v.(map[string]any)
		if !ok {
			return http.StatusBadRequest, map[string]any{"custom_fields": []string{"Invalid data format. Custom field data must be passed as a dictionary mapping field names to their values."}}, "", false
		}
		errs := map[string]string{}
		for name, val := range cf {
			f, known := s.fields[name]
			if !known || !f.appliesTo("dcim.device") {
				errs[name] = fmt.Sprintf("Custom field '%s' does not exist for this object type.", name)
				continue
			}
			val = normalize(val)
			if err := f.validate(val); err != nil {
				errs[name] = err.Error()
				continue
			}
			newCustom[name] = val
		}
		if len(errs) > 0 {
			return http.StatusBadRequest, map[string]any{"custom_fields": errs}, "", false
		}
	}
	d.status = newStatus
	d.custom = newCustom
	d.lastUpdated = s.stampLocked()
	if m, ok := body["changelog_message"].(string); ok && m != "" {
		d.changelog = append(d.changelog, m)
	}
	drop := false
	if s.dropPatch > 0 {
		s.dropPatch--
		drop = true
	}
	return http.StatusOK, s.renderDeviceLocked(d, base), ETag(d.lastUpdated), drop
}

func (s *Server) renderDeviceLocked(d *device, base string) map[string]any {
	role := d.role
	if role == "" {
		role = defaultRole
	}
	st, dt := s.sites[d.siteID], s.types[d.typeID]
	model := dt.Model
	var name any
	display := fmt.Sprintf("%s (%d)", model, d.id)
	if d.name != "" {
		name, display = d.name, d.name
	}
	label := statusLabels[d.status]
	if label == "" {
		label = strings.ToUpper(d.status[:1]) + d.status[1:]
	}
	custom := map[string]any{}
	for _, f := range s.sortedFieldsLocked() {
		if !f.appliesTo("dcim.device") {
			continue
		}
		v, ok := d.custom[f.Name]
		if !ok {
			v = nil
		}
		if s.opts.SelectAsObject && f.Type == TypeSelect && v != nil {
			v = map[string]any{"value": v, "label": v}
		}
		custom[f.Name] = v
	}
	var assetTag any
	if d.assetTag != "" {
		assetTag = d.assetTag
	}
	tags := make([]any, len(d.tags))
	for i, t := range d.tags {
		tags[i] = map[string]any{
			"id": manufacturerID(t), "url": fmt.Sprintf("%s/api/extras/tags/%d/", base, manufacturerID(t)),
			"display_url": fmt.Sprintf("%s/extras/tags/%d/", base, manufacturerID(t)),
			"display":     t, "name": t, "slug": slug(t), "color": "9e9e9e",
		}
	}
	ref := func(kind string, id int, disp string, extra map[string]any) map[string]any {
		m := map[string]any{
			"id": id, "url": fmt.Sprintf("%s/api/dcim/%s/%d/", base, kind, id), "display": disp, "description": "",
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	return map[string]any{
		"id":                        d.id,
		"url":                       fmt.Sprintf("%s/api/dcim/devices/%d/", base, d.id),
		"display_url":               fmt.Sprintf("%s/dcim/devices/%d/", base, d.id),
		"display":                   display,
		"name":                      name,
		"device_type":               briefDeviceType(dt, base),
		"role":                      ref("device-roles", 1, role, map[string]any{"name": role, "slug": slug(role), "_depth": 0}),
		"tenant":                    nil,
		"platform":                  nil,
		"serial":                    d.serial,
		"asset_tag":                 assetTag,
		"site":                      briefSite(st, base),
		"location":                  nil,
		"rack":                      nil,
		"position":                  nil,
		"face":                      nil,
		"latitude":                  nil,
		"longitude":                 nil,
		"parent_device":             nil,
		"status":                    map[string]any{"value": d.status, "label": label},
		"airflow":                   nil,
		"primary_ip":                nil,
		"primary_ip4":               nil,
		"primary_ip6":               nil,
		"oob_ip":                    nil,
		"cluster":                   nil,
		"virtual_chassis":           nil,
		"vc_position":               nil,
		"vc_priority":               nil,
		"description":               d.description,
		"owner":                     nil,
		"comments":                  "",
		"config_template":           nil,
		"config_context":            map[string]any{},
		"local_context_data":        nil,
		"tags":                      tags,
		"custom_fields":             custom,
		"created":                   pyISO(d.created, "Z"),
		"last_updated":              pyISO(d.lastUpdated, "Z"),
		"console_port_count":        0,
		"console_server_port_count": 0,
		"power_port_count":          0,
		"power_outlet_count":        0,
		"interface_count":           0,
		"front_port_count":          0,
		"rear_port_count":           0,
		"device_bay_count":          0,
		"module_bay_count":          0,
		"inventory_item_count":      0,
	}
}

func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		default:
			b.WriteRune('-')
		}
	}
	return b.String()
}
