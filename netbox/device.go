package netbox

import (
	"encoding/json"
	"strconv"
	"strings"

	nb "github.com/netbox-community/go-netbox/v4"
)

// NetBox device statuses the client relies on.
const (
	StatusStaged = "staged" // free (in the pool, unowned)
	StatusActive = "active" // claimed
	StatusFailed = "failed" // quarantined
)

// Device is the part of a NetBox device the inventory uses.
type Device struct {
	ID         int32
	Name       string
	Status     string // status value (staged, active, failed, …)
	Managed    bool   // pool flag is JSON true
	RequestUID string // owning request uid; "" = unowned
	BMCAddress string
	BootMAC    string
	Custom     map[string]any // all custom fields as NetBox rendered them
	ETag       string         // set by GetDevice (and refreshed by a successful write); echoed verbatim in If-Match

	ownerInvalid bool // owner field holds a non-string: treat as owned by someone else
	bmcNotText   bool
	macNotText   bool
}

// Free: in the pool, staged and unowned – the only state a claim starts from.
func (d *Device) Free() bool {
	return d.Managed && d.Status == StatusStaged && d.unowned()
}

// OwnedBy reports whether the owner field holds exactly uid.
func (d *Device) OwnedBy(uid string) bool {
	return uid != "" && !d.ownerInvalid && d.RequestUID == uid
}

func (d *Device) unowned() bool { return !d.ownerInvalid && d.RequestUID == "" }

// Identity is the stable host identity of a NetBox device: "netbox-<id>".
// Names, sites and renames never change it.
func Identity(id int32) string { return "netbox-" + strconv.FormatInt(int64(id), 10) }

// ParseIdentity is the inverse of Identity; only the canonical form (positive
// decimal id, no sign, no leading zeros) is accepted so that one device has
// exactly one identity.
func ParseIdentity(s string) (int32, error) {
	num, ok := strings.CutPrefix(s, "netbox-")
	if !ok || num == "" || num[0] == '0' || len(num) > 10 {
		return 0, newError(KindInvalid, "identity", "not a NetBox host identity (want netbox-<positive id>)")
	}
	for _, r := range num {
		if r < '0' || r > '9' {
			return 0, newError(KindInvalid, "identity", "not a NetBox host identity (want netbox-<positive id>)")
		}
	}
	n, err := strconv.ParseInt(num, 10, 32)
	if err != nil || n <= 0 {
		return 0, newError(KindInvalid, "identity", "NetBox device id out of range")
	}
	return int32(n), nil
}

func (c *conn) newDevice(id int32, name, status string, custom map[string]any) *Device {
	if custom == nil {
		custom = map[string]any{}
	}
	f := c.cfg.Fields
	d := &Device{ID: id, Name: name, Status: status, Custom: custom}
	d.Managed, _ = custom[f.Managed].(bool)
	switch v := custom[f.RequestUID].(type) {
	case nil:
	case string:
		d.RequestUID = v
	default:
		d.ownerInvalid = true
	}
	d.BMCAddress, d.bmcNotText = textValue(custom[f.BMCAddress])
	d.BootMAC, d.macNotText = textValue(custom[f.BootMAC])
	return d
}

func textValue(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", false
	case string:
		return x, false
	}
	return "", true
}

func (c *conn) deviceFromModel(m *nb.DeviceWithConfigContext) *Device {
	status := ""
	if m.Status != nil && m.Status.Value != nil {
		status = string(*m.Status.Value)
	}
	name := ""
	if n := m.Name.Get(); n != nil {
		name = *n
	}
	return c.newDevice(m.Id, name, status, m.CustomFields)
}

// Tolerant shapes: go-netbox 4.3's models reject values NetBox legitimately
// sends (a FIELD_CHOICES device status, a select field's integer
// choices_count…). When its strict decoding fails on a 2xx answer, the client
// reads just the fields it needs from the same body.
type choiceValue struct {
	Value string `json:"value"`
}

type lenientDevice struct {
	ID           int32          `json:"id"`
	Name         *string        `json:"name"`
	Status       *choiceValue   `json:"status"`
	CustomFields map[string]any `json:"custom_fields"`
}

type lenientField struct {
	Name        string       `json:"name"`
	ObjectTypes []string     `json:"object_types"`
	Type        choiceValue  `json:"type"`
	FilterLogic *choiceValue `json:"filter_logic"`
}

type lenientPage[T any] struct {
	Count   *int64  `json:"count"`
	Next    *string `json:"next"`
	Results []T     `json:"results"`
}

func (c *conn) deviceFromLenient(l *lenientDevice) *Device {
	name, status := "", ""
	if l.Name != nil {
		name = *l.Name
	}
	if l.Status != nil {
		status = l.Status.Value
	}
	return c.newDevice(l.ID, name, status, l.CustomFields)
}

func decodeLenient(body []byte, v any) error { return json.Unmarshal(body, v) }
