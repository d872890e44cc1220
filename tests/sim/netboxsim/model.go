//lint:file-ignore ST1005 the simulator answers with NetBox's own messages, capitals and full stops included

package netboxsim

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Custom field types NetBox knows (extras.choices.CustomFieldTypeChoices).
const (
	TypeText        = "text"
	TypeLongText    = "longtext"
	TypeInteger     = "integer"
	TypeDecimal     = "decimal"
	TypeBoolean     = "boolean"
	TypeDate        = "date"
	TypeDateTime    = "datetime"
	TypeURL         = "url"
	TypeJSON        = "json"
	TypeSelect      = "select"
	TypeMultiSelect = "multiselect"
)

// Filter logic values (extras.choices.CustomFieldFilterLogicChoices).
const (
	FilterExact    = "exact"
	FilterLoose    = "loose"
	FilterDisabled = "disabled"
)

// Device statuses NetBox ships (dcim.choices.DeviceStatusChoices). Options.ExtraStatuses
// adds more, as FIELD_CHOICES does on a real NetBox.
var standardStatuses = []string{"offline", "active", "planned", "staged", "failed", "inventory", "decommissioning"}

var statusLabels = map[string]string{
	"offline": "Offline", "active": "Active", "planned": "Planned", "staged": "Staged",
	"failed": "Failed", "inventory": "Inventory", "decommissioning": "Decommissioning",
}

var typeLabels = map[string]string{
	TypeText: "Text", TypeLongText: "Text (long)", TypeInteger: "Integer", TypeDecimal: "Decimal",
	TypeBoolean: "Boolean (true/false)", TypeDate: "Date", TypeDateTime: "Date & time", TypeURL: "URL",
	TypeJSON: "JSON", TypeSelect: "Selection", TypeMultiSelect: "Multiple selection",
	"object": "Object", "multiobject": "Multiple objects",
}

var filterLogicLabels = map[string]string{FilterExact: "Exact", FilterLoose: "Loose", FilterDisabled: "Disabled"}

// CustomField describes a NetBox custom field. Zero values take NetBox's defaults:
// filter logic loose (the model default), object type dcim.device.
type CustomField struct {
	ID          int32    `json:"id,omitempty"`
	Name        string   `json:"name"`
	Type        string   `json:"type"`
	Label       string   `json:"label,omitempty"`
	Description string   `json:"description,omitempty"`
	FilterLogic string   `json:"filter_logic,omitempty"`
	ObjectTypes []string `json:"object_types,omitempty"`
	// Choices are the allowed values of a select field (label = value).
	Choices  []string `json:"choices,omitempty"`
	Required bool     `json:"required,omitempty"`
}

// Device is a snapshot of a simulated device. Custom holds the stored custom field
// data (only keys that were set; NetBox renders every field, null when unset).
type Device struct {
	ID          int32          `json:"id,omitempty"`
	Name        string         `json:"name,omitempty"`
	Status      string         `json:"status,omitempty"`
	Site        string         `json:"site,omitempty"`
	Role        string         `json:"role,omitempty"`
	Model       string         `json:"model,omitempty"`
	Serial      string         `json:"serial,omitempty"`
	AssetTag    string         `json:"asset_tag,omitempty"`
	Description string         `json:"description,omitempty"`
	Tags        []string       `json:"tags,omitempty"`
	Custom      map[string]any `json:"custom_fields,omitempty"`
	Created     time.Time      `json:"-"`
	LastUpdated time.Time      `json:"-"`
	// Changelog lists the changelog_message of every PATCH that changed this device.
	Changelog []string `json:"-"`
}

// PatchRecord is one PATCH request that reached a device route.
type PatchRecord struct {
	DeviceID         int32
	IfMatch          string
	Body             map[string]any
	ChangelogMessage string
	// Status is the HTTP status answered (0 when the answer was dropped).
	Status    int
	Committed bool
	Dropped   bool
	// At is when the simulator answered it (Options.Clock): for a committed PATCH, when the change
	// became visible to every reader.
	At time.Time
}

// ETag renders the weak ETag NetBox 4.6 derives from last_updated
// (f'W/"{ts.isoformat()}"').
func ETag(t time.Time) string { return `W/"` + pyISO(t, "+00:00") + `"` }

// pyISO mimics Python's datetime.isoformat for an aware UTC time: microseconds
// only when non-zero. DRF renders the same value with "Z" for "+00:00".
func pyISO(t time.Time, utc string) string {
	t = t.UTC()
	s := t.Format("2006-01-02T15:04:05")
	if us := t.Nanosecond() / 1000; us != 0 {
		s += fmt.Sprintf(".%06d", us)
	}
	return s + utc
}

type field struct {
	CustomField
	created time.Time
}

func (f *field) appliesTo(objectType string) bool {
	for _, t := range f.ObjectTypes {
		if strings.EqualFold(t, objectType) {
			return true
		}
	}
	return false
}

func (f *field) dataType() string {
	switch f.Type {
	case TypeInteger:
		return "integer"
	case TypeDecimal:
		return "decimal"
	case TypeBoolean:
		return "boolean"
	case TypeJSON, "object":
		return "object"
	case TypeMultiSelect, "multiobject":
		return "array"
	}
	return "string"
}

// validate mirrors CustomField.validate for the types the simulator supports.
func (f *field) validate(v any) error {
	if v == nil || v == "" {
		if f.Required {
			return fmt.Errorf("Required field cannot be empty.")
		}
		return nil
	}
	switch f.Type {
	case TypeText, TypeLongText, TypeURL:
		if _, ok := v.(string); !ok {
			return fmt.Errorf("Value must be a string.")
		}
	case TypeSelect:
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("Invalid choice (%v) for choice set.", v)
		}
		if len(f.Choices) > 0 && !slices.Contains(f.Choices, s) {
			return fmt.Errorf("Invalid choice (%s) for choice set.", s)
		}
	case TypeInteger:
		if _, ok := v.(int64); !ok {
			return fmt.Errorf("Value must be an integer.")
		}
	case TypeDecimal:
		switch v.(type) {
		case int64, float64:
		default:
			return fmt.Errorf("Value must be a decimal.")
		}
	case TypeBoolean:
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("Value must be true or false.")
		}
	}
	return nil
}

type device struct {
	id          int32
	name        string
	status      string
	role        string
	siteID      int32
	typeID      int32
	serial      string
	assetTag    string
	description string
	tags        []string
	custom      map[string]any
	created     time.Time
	lastUpdated time.Time
	changelog   []string
}

func (s *Server) snapshotLocked(d *device) Device {
	return Device{
		ID: d.id, Name: d.name, Status: d.status, Site: s.sites[d.siteID].Name, Role: d.role,
		Model: s.types[d.typeID].Model, Serial: d.serial, AssetTag: d.assetTag, Description: d.description,
		Tags:   append([]string(nil), d.tags...),
		Custom: deepCopyMap(d.custom), Created: d.created, LastUpdated: d.lastUpdated,
		Changelog: append([]string(nil), d.changelog...),
	}
}

// normalize turns values a test passes in Go (AddDevice, SetCustom) into the simulator's storage
// types, those of JSON decoded with sigs.k8s.io/json's PreserveInts: integral numbers → int64, other
// numbers → float64.
func normalize(v any) any {
	switch x := v.(type) {
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x)
		}
		return x
	case float32:
		return normalize(float64(x))
	case int:
		return int64(x)
	case int32:
		return int64(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	}
	return v
}

func deepCopyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		switch x := v.(type) {
		case map[string]any:
			out[k] = deepCopyMap(x)
		case []any:
			out[k] = append([]any(nil), x...)
		default:
			out[k] = v
		}
	}
	return out
}
