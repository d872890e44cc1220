package netboxsim

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// Defaults a device gets when its seed names no site, model or role (what the simulator always rendered).
const (
	DefaultSite         = "Edge Site 1"
	DefaultModel        = "PowerEdge R760"
	DefaultManufacturer = "Dell"
	defaultRole         = "Server"
)

// AddDevice stores a device and returns its id (d.ID when set, else the next free
// id). Status defaults to "staged". It panics on an invalid device (a test bug).
func (s *Server) AddDevice(d Device) int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, err := s.addDeviceLocked(d)
	if err != nil {
		panic(err)
	}
	return id
}

func (s *Server) addDeviceLocked(d Device) (int32, error) {
	if d.ID == 0 {
		d.ID = s.nextDevice
	}
	if d.ID < 0 {
		return 0, fmt.Errorf("netboxsim: invalid device id %d", d.ID)
	}
	if _, dup := s.devices[d.ID]; dup {
		return 0, fmt.Errorf("netboxsim: device %d already exists", d.ID)
	}
	if d.ID >= s.nextDevice {
		s.nextDevice = d.ID + 1
	}
	if d.Status == "" {
		d.Status = "staged"
	}
	if !s.validStatusLocked(d.Status) {
		return 0, fmt.Errorf("netboxsim: device %d: invalid status %q", d.ID, d.Status)
	}
	custom := map[string]any{}
	for k, v := range d.Custom {
		custom[k] = normalize(v)
	}
	st := s.siteLocked(Site{Name: d.Site})
	dt := s.deviceTypeLocked(DeviceType{Model: d.Model})
	now := s.stampLocked()
	s.devices[d.ID] = &device{
		id: d.ID, name: d.Name, status: d.Status, role: d.Role, siteID: st.ID, typeID: dt.ID,
		serial: d.Serial, assetTag: d.AssetTag, description: d.Description, tags: append([]string(nil), d.Tags...),
		custom: custom, created: now, lastUpdated: now,
	}
	return d.ID, nil
}

// Device returns a snapshot of one device.
func (s *Server) Device(id int32) (Device, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.devices[id]
	if !ok {
		return Device{}, false
	}
	return s.snapshotLocked(d), true
}

// Devices returns snapshots of all devices ordered by id.
func (s *Server) Devices() []Device {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Device, 0, len(s.devices))
	for _, d := range s.sortedDevicesLocked() {
		out = append(out, s.snapshotLocked(d))
	}
	return out
}

// SetStatus is an administrator edit of a device status (bumps last_updated).
func (s *Server) SetStatus(id int32, status string) error {
	return s.editDevice(id, func(d *device) error {
		if !s.validStatusLocked(status) {
			return fmt.Errorf("netboxsim: invalid status %q", status)
		}
		d.status = status
		return nil
	})
}

// SetCustom is an administrator edit of one custom field value (nil clears it).
func (s *Server) SetCustom(id int32, name string, value any) error {
	return s.editDevice(id, func(d *device) error { d.custom[name] = normalize(value); return nil })
}

// SetDescription is an administrator edit of a device's description (bumps last_updated).
func (s *Server) SetDescription(id int32, description string) error {
	return s.editDevice(id, func(d *device) error { d.description = description; return nil })
}

// SetSite moves a device to the site named name (created when new); it bumps the device's
// last_updated.
func (s *Server) SetSite(id int32, name string) error {
	return s.editDevice(id, func(d *device) error { d.siteID = s.siteLocked(Site{Name: name}).ID; return nil })
}

// editDevice is an administrator edit of one device: change runs under the lock, and a change it
// accepts bumps last_updated (so the device's ETag moves, as on NetBox).
func (s *Server) editDevice(id int32, change func(*device) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.devices[id]
	if !ok {
		return fmt.Errorf("netboxsim: no device %d", id)
	}
	if err := change(d); err != nil {
		return err
	}
	d.lastUpdated = s.stampLocked()
	return nil
}

// DeleteDevice removes a device.
func (s *Server) DeleteDevice(id int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.devices[id]; !ok {
		return false
	}
	delete(s.devices, id)
	return true
}

func (s *Server) validStatusLocked(st string) bool {
	return slices.Contains(standardStatuses, st) || slices.Contains(s.opts.ExtraStatuses, st)
}

func (s *Server) sortedDevicesLocked() []*device {
	return slices.SortedFunc(maps.Values(s.devices), func(a, b *device) int { return cmp.Compare(a.id, b.id) })
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
	var kept []*device
	for _, d := range s.sortedDevicesLocked() {
		keep := true
		for _, p := range preds {
			if !p(d) {
				keep = false
				break
			}
		}
		if keep {
			kept = append(kept, d)
		}
	}
	// Only the page is rendered: a search of a large pool renders a page, not the pool.
	from, to := s.pageBounds(q, len(kept))
	page := make([]any, 0, to-from)
	for _, d := range kept[from:to] {
		page = append(page, s.renderDeviceLocked(d, base))
	}
	s.mu.Unlock()
	s.writePageOf(w, r, len(kept), page)
}

func (s *Server) handleDeviceGet(w http.ResponseWriter, r *http.Request) {
	id, _ := deviceID(r)
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
	var assetTag any
	if d.assetTag != "" {
		assetTag = d.assetTag
	}
	return map[string]any{
		"id":                        d.id,
		"url":                       fmt.Sprintf("%s/api/dcim/devices/%d/", base, d.id),
		"display_url":               fmt.Sprintf("%s/dcim/devices/%d/", base, d.id),
		"display":                   display,
		"name":                      name,
		"device_type":               briefDeviceType(dt, base),
		"role":                      briefRef(base, "device-roles", 1, role, map[string]any{"name": role, "slug": slug(role), "_depth": 0}),
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
		"tags":                      renderTags(d.tags, base),
		"custom_fields":             s.renderCustomFieldsLocked(d),
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

// renderCustomFieldsLocked is a device's custom_fields: every field that applies to devices, null when
// the device has no value.
func (s *Server) renderCustomFieldsLocked(d *device) map[string]any {
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
	return custom
}

// renderTags is a device's tags as NetBox's nested tag objects.
func renderTags(names []string, base string) []any {
	tags := make([]any, len(names))
	for i, t := range names {
		tags[i] = map[string]any{
			"id": manufacturerID(t), "url": fmt.Sprintf("%s/api/extras/tags/%d/", base, manufacturerID(t)),
			"display_url": fmt.Sprintf("%s/extras/tags/%d/", base, manufacturerID(t)),
			"display":     t, "name": t, "slug": slug(t), "color": "9e9e9e",
		}
	}
	return tags
}

// briefRef is NetBox's brief form of a related dcim object, with the kind's own members in extra.
func briefRef(base, kind string, id int, disp string, extra map[string]any) map[string]any {
	m := map[string]any{
		"id": id, "url": fmt.Sprintf("%s/api/dcim/%s/%d/", base, kind, id), "display": disp, "description": "",
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}
