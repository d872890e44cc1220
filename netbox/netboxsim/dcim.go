package netboxsim

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Site is a NetBox site (dcim.site). Devices name theirs by Name; a name no site has yet creates one.
type Site struct {
	ID          int32     `json:"id,omitempty"`
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	Region      string    `json:"region,omitempty"`
	LastUpdated time.Time `json:"-"`
}

// DeviceType is a NetBox device type (dcim.devicetype) with its manufacturer. Devices name theirs by
// Model; a model no type has yet creates one of manufacturer "Dell".
type DeviceType struct {
	ID           int32     `json:"id,omitempty"`
	Model        string    `json:"model"`
	Manufacturer string    `json:"manufacturer,omitempty"`
	PartNumber   string    `json:"part_number,omitempty"`
	Description  string    `json:"description,omitempty"`
	LastUpdated  time.Time `json:"-"`
}

// Defaults a device gets when its seed names no site, model or role (what the simulator always rendered).
const (
	DefaultSite         = "Edge Site 1"
	DefaultModel        = "PowerEdge R760"
	DefaultManufacturer = "Dell"
	defaultRole         = "Server"
)

type site struct {
	Site
	created time.Time
}

type deviceType struct {
	DeviceType
	created time.Time
}

// AddSite stores a site and returns its id (the existing one when a site of that name exists).
func (s *Server) AddSite(st Site) int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.siteLocked(st).ID
}

// AddDeviceType stores a device type and returns its id (the existing one for a known model).
func (s *Server) AddDeviceType(dt DeviceType) int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deviceTypeLocked(dt).ID
}

func (s *Server) siteLocked(st Site) *site {
	if st.Name == "" {
		st.Name = DefaultSite
	}
	for _, x := range s.sites {
		if x.Name == st.Name {
			return x
		}
	}
	s.nextSite++
	now := s.opts.Clock().UTC().Truncate(time.Microsecond) // not a device stamp: device ETags stay as they were
	st.ID, st.LastUpdated = s.nextSite, now
	x := &site{Site: st, created: now}
	s.sites[st.ID] = x
	return x
}

func (s *Server) deviceTypeLocked(dt DeviceType) *deviceType {
	if dt.Model == "" {
		dt.Model = DefaultModel
	}
	for _, x := range s.types {
		if x.Model == dt.Model {
			return x
		}
	}
	if dt.Manufacturer == "" {
		dt.Manufacturer = DefaultManufacturer
	}
	s.nextType++
	now := s.opts.Clock().UTC().Truncate(time.Microsecond)
	dt.ID, dt.LastUpdated = s.nextType, now
	x := &deviceType{DeviceType: dt, created: now}
	s.types[dt.ID] = x
	return x
}

// SetSiteDescription is an administrator edit of a site (bumps its last_updated, not its devices').
func (s *Server) SetSiteDescription(id int32, description string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	x, ok := s.sites[id]
	if !ok {
		return fmt.Errorf("netboxsim: no site %d", id)
	}
	x.Description = description
	x.LastUpdated = s.opts.Clock().UTC().Truncate(time.Microsecond)
	return nil
}

// SetDescription is an administrator edit of a device's description (bumps last_updated).
func (s *Server) SetDescription(id int32, description string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.devices[id]
	if !ok {
		return fmt.Errorf("netboxsim: no device %d", id)
	}
	d.description = description
	d.lastUpdated = s.stampLocked()
	return nil
}

// Sites returns every site ordered by id.
func (s *Server) Sites() []Site {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Site, 0, len(s.sites))
	for _, x := range s.sites {
		out = append(out, x.Site)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// DeviceTypes returns every device type ordered by id.
func (s *Server) DeviceTypes() []DeviceType {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]DeviceType, 0, len(s.types))
	for _, x := range s.types {
		out = append(out, x.DeviceType)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// timeFilters reads NetBox's last_updated lookups (last_updated, __gte, __gt, __lte, __lt): a value
// that is not an ISO 8601 time is a 400 naming the parameter, as django-filter answers.
func timeFilters(q url.Values) (func(time.Time) bool, string, string) {
	type bound struct {
		op string
		t  time.Time
	}
	var bounds []bound
	for _, op := range []string{"", "__gte", "__gt", "__lte", "__lt"} {
		for _, v := range nonEmpty(q["last_updated"+op]) {
			t, err := parseNetBoxTime(v)
			if err != nil {
				return nil, "last_updated" + op, "Enter a valid date/time."
			}
			bounds = append(bounds, bound{op, t})
		}
	}
	return func(lu time.Time) bool {
		for _, b := range bounds {
			ok := false
			switch b.op {
			case "":
				ok = lu.Equal(b.t)
			case "__gte":
				ok = !lu.Before(b.t)
			case "__gt":
				ok = lu.After(b.t)
			case "__lte":
				ok = !lu.After(b.t)
			case "__lt":
				ok = lu.Before(b.t)
			}
			if !ok {
				return false
			}
		}
		return true
	}, "", ""
}

// parseNetBoxTime reads the ISO 8601 forms Django's DateTimeField accepts: RFC 3339 with or without
// fractions, and a naive time taken as UTC (NetBox's TIME_ZONE default).
func parseNetBoxTime(v string) (time.Time, error) {
	v = strings.TrimSpace(v)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("not a time: %q", v)
}

// idFilter reads an "id"-style parameter (repeated, ORed); ok is false on a non-number.
func idFilter(values []string) (ids map[int64]bool, ok bool) {
	for _, v := range nonEmpty(values) {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return nil, false
		}
		if ids == nil {
			ids = map[int64]bool{}
		}
		ids[n] = true
	}
	return ids, true
}

func (s *Server) handleSiteList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	when, badParam, badMsg := timeFilters(q)
	ids, ok := idFilter(q["id"])
	if !ok {
		badParam, badMsg = "id", "Enter a number."
	}
	if badParam != "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{badParam: []string{badMsg}}, "")
		return
	}
	base := baseURL(r)
	s.mu.Lock()
	var rows []any
	for _, x := range s.sortedSitesLocked() {
		if (ids == nil || ids[int64(x.ID)]) && when(x.LastUpdated) {
			rows = append(rows, s.renderSiteLocked(x, base))
		}
	}
	s.mu.Unlock()
	s.writePage(w, r, rows)
}

func (s *Server) handleDeviceTypeList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	when, badParam, badMsg := timeFilters(q)
	ids, ok := idFilter(q["id"])
	if !ok {
		badParam, badMsg = "id", "Enter a number."
	}
	if badParam != "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{badParam: []string{badMsg}}, "")
		return
	}
	base := baseURL(r)
	s.mu.Lock()
	var rows []any
	for _, x := range s.sortedTypesLocked() {
		if (ids == nil || ids[int64(x.ID)]) && when(x.LastUpdated) {
			rows = append(rows, s.renderDeviceTypeLocked(x, base))
		}
	}
	s.mu.Unlock()
	s.writePage(w, r, rows)
}

func (s *Server) sortedSitesLocked() []*site {
	out := make([]*site, 0, len(s.sites))
	for _, x := range s.sites {
		out = append(out, x)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (s *Server) sortedTypesLocked() []*deviceType {
	out := make([]*deviceType, 0, len(s.types))
	for _, x := range s.types {
		out = append(out, x)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (s *Server) deviceCountLocked(match func(*device) bool) int64 {
	n := int64(0)
	for _, d := range s.devices {
		if match(d) {
			n++
		}
	}
	return n
}

// briefSite is the nested site NetBox renders inside a device.
func briefSite(x *site, base string) map[string]any {
	return map[string]any{
		"id": x.ID, "url": fmt.Sprintf("%s/api/dcim/sites/%d/", base, x.ID), "display": x.Name,
		"name": x.Name, "slug": slug(x.Name), "description": x.Description,
	}
}

func briefManufacturer(name string, base string) map[string]any {
	return map[string]any{
		"id": manufacturerID(name), "url": fmt.Sprintf("%s/api/dcim/manufacturers/%d/", base, manufacturerID(name)),
		"display": name, "name": name, "slug": slug(name), "description": "",
	}
}

// manufacturerID is a stable id per manufacturer name (the simulator keeps no manufacturer objects).
func manufacturerID(name string) int32 {
	h := int32(7)
	for _, r := range name {
		h = (h*31 + int32(r)) & 0x7fffff
	}
	return h + 1
}

func briefDeviceType(x *deviceType, base string) map[string]any {
	return map[string]any{
		"id": x.ID, "url": fmt.Sprintf("%s/api/dcim/device-types/%d/", base, x.ID), "display": x.Model,
		"manufacturer": briefManufacturer(x.Manufacturer, base),
		"model":        x.Model, "slug": slug(x.Model), "description": x.Description,
	}
}

func (s *Server) renderSiteLocked(x *site, base string) map[string]any {
	var region any
	if x.Region != "" {
		region = map[string]any{
			"id": 1, "url": base + "/api/dcim/regions/1/", "display": x.Region, "name": x.Region,
			"slug": slug(x.Region), "description": "", "site_count": 0, "_depth": 0,
		}
	}
	return map[string]any{
		"id": x.ID, "url": fmt.Sprintf("%s/api/dcim/sites/%d/", base, x.ID),
		"display_url": fmt.Sprintf("%s/dcim/sites/%d/", base, x.ID), "display": x.Name,
		"name": x.Name, "slug": slug(x.Name),
		"status": map[string]any{"value": "active", "label": "Active"},
		"region": region, "group": nil, "tenant": nil, "facility": "", "time_zone": nil,
		"description": x.Description, "physical_address": "", "shipping_address": "",
		"latitude": nil, "longitude": nil, "owner": nil, "comments": "", "asns": []any{}, "tags": []any{},
		"custom_fields": map[string]any{},
		"created":       pyISO(x.created, "Z"), "last_updated": pyISO(x.LastUpdated, "Z"),
		"circuit_count": 0, "device_count": s.deviceCountLocked(func(d *device) bool { return d.siteID == x.ID }),
		"prefix_count": 0, "rack_count": 0, "virtualmachine_count": 0, "vlan_count": 0,
	}
}

func (s *Server) renderDeviceTypeLocked(x *deviceType, base string) map[string]any {
	return map[string]any{
		"id": x.ID, "url": fmt.Sprintf("%s/api/dcim/device-types/%d/", base, x.ID),
		"display_url": fmt.Sprintf("%s/dcim/device-types/%d/", base, x.ID), "display": x.Model,
		"manufacturer":     briefManufacturer(x.Manufacturer, base),
		"default_platform": nil, "model": x.Model, "slug": slug(x.Model), "part_number": x.PartNumber,
		"u_height": 1.0, "exclude_from_utilization": false, "is_full_depth": true,
		"subdevice_role": nil, "airflow": nil, "weight": nil, "weight_unit": nil,
		"front_image": nil, "rear_image": nil, "description": x.Description, "owner": nil, "comments": "",
		"tags": []any{}, "custom_fields": map[string]any{},
		"created": pyISO(x.created, "Z"), "last_updated": pyISO(x.LastUpdated, "Z"),
		"device_count":                s.deviceCountLocked(func(d *device) bool { return d.typeID == x.ID }),
		"console_port_template_count": 0, "console_server_port_template_count": 0,
		"power_port_template_count": 0, "power_outlet_template_count": 0,
		"interface_template_count": 0, "front_port_template_count": 0,
		"rear_port_template_count": 0, "device_bay_template_count": 0,
		"module_bay_template_count": 0, "inventory_item_template_count": 0,
	}
}

// SetSite moves a device to the site named name (created when new); it bumps the device's
// last_updated.
func (s *Server) SetSite(id int32, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.devices[id]
	if !ok {
		return fmt.Errorf("netboxsim: no device %d", id)
	}
	d.siteID = s.siteLocked(Site{Name: name}).ID
	d.lastUpdated = s.stampLocked()
	return nil
}
