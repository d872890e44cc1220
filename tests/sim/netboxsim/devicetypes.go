package netboxsim

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"
)

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

type deviceType struct {
	DeviceType
	created time.Time
}

// AddDeviceType stores a device type and returns its id (the existing one for a known model).
func (s *Server) AddDeviceType(dt DeviceType) int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deviceTypeLocked(dt).ID
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

// DeviceTypes returns every device type ordered by id.
func (s *Server) DeviceTypes() []DeviceType {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []DeviceType{}
	for _, x := range s.sortedTypesLocked() {
		out = append(out, x.DeviceType)
	}
	return out
}

func (s *Server) handleDeviceTypeList(w http.ResponseWriter, r *http.Request) {
	listDCIM(s, w, r, s.sortedTypesLocked, func(x *deviceType) (int32, time.Time) { return x.ID, x.LastUpdated }, s.renderDeviceTypeLocked)
}

func (s *Server) sortedTypesLocked() []*deviceType {
	return slices.SortedFunc(maps.Values(s.types), func(a, b *deviceType) int { return cmp.Compare(a.ID, b.ID) })
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
