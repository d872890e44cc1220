package netbox

import (
	"context"
	"net/url"
	"time"

	nb "github.com/netbox-community/go-netbox/v4"
)

// The inventory listings feed the northbound Infrastructure Inventory: what the pool holds, in which
// sites, of which types. They read, never write, and are paged at NetBox's maximum page size so that a
// full listing of 10 000 devices is ten calls.

// InventoryDevice is a device as the inventory shows it. It carries no BMC address, boot MAC or
// credentials: Capabilities are the custom fields other than the four fixed ones.
type InventoryDevice struct {
	ID         int32
	Name       string
	Status     string
	Managed    bool   // the pool flag is JSON true
	RequestUID string // owning request; "" unowned
	// Free: in the pool, staged and unowned (Device.Free), the only state a claim starts from.
	Free bool
	// Deleted: NetBox answered 404 for the device (only in what WriteObserver is told; nothing else set).
	Deleted      bool
	Capabilities map[string]any
	Site         InventorySite
	Type         InventoryDeviceType
	Serial       string
	AssetTag     string
	Description  string
	Tags         []string
	LastUpdated  time.Time
}

// InventorySite is a NetBox site.
type InventorySite struct {
	ID          int32
	Name        string
	Slug        string
	Description string
	Region      string
	LastUpdated time.Time // zero when only the device's nested site was read
}

// InventoryDeviceType is a NetBox device type with its manufacturer.
type InventoryDeviceType struct {
	ID           int32
	Model        string
	Manufacturer string
	PartNumber   string
	Description  string
	LastUpdated  time.Time // zero when only the device's nested type was read
}

// inventoryPage is NetBox's maximum page size (MAX_PAGE_SIZE default).
const inventoryPage = 1000

// ListInventoryDevices lists devices page by page in id order: with poolOnly, those whose pool flag is
// true (a full listing); otherwise every device changed at or after since (a device that left the pool
// must be seen too, to drop it). A zero since lists regardless of time.
func (c *Search) ListInventoryDevices(ctx context.Context, since time.Time, poolOnly bool) ([]InventoryDevice, error) {
	q := url.Values{"ordering": {"id"}}
	if poolOnly {
		q.Set("cf_"+c.cfg.Fields.Managed, "true")
	}
	return listPages(c.conn, "device", func(offset int32) ([]InventoryDevice, *string, error) {
		rctx := withRequestOptions(ctx, requestOptions{op: "list_inventory_devices", query: q})
		req := c.api.DcimAPI.DcimDevicesList(rctx).Limit(inventoryPage).Offset(offset)
		if !since.IsZero() {
			req = req.LastUpdatedGte([]time.Time{since})
		}
		res, resp, err := req.Execute()
		var out []InventoryDevice
		if err == nil {
			for i := range res.Results {
				out = append(out, c.inventoryDevice(&res.Results[i]))
			}
			return out, res.Next.Get(), nil
		}
		body, ok := undecodedBody(resp, err)
		var lp lenientPage[lenientInventoryDevice]
		if !ok || decodeLenient(body, &lp) != nil || lp.Results == nil {
			return nil, nil, c.toError("inventory", resp, err, false)
		}
		for i := range lp.Results {
			out = append(out, c.inventoryDeviceLenient(&lp.Results[i]))
		}
		return out, lp.Next, nil
	})
}

// ListInventorySites lists the sites changed at or after since (every site when since is zero).
func (c *Search) ListInventorySites(ctx context.Context, since time.Time) ([]InventorySite, error) {
	return listPages(c.conn, "site", func(offset int32) ([]InventorySite, *string, error) {
		rctx := withRequestOptions(ctx, requestOptions{op: "list_sites", query: url.Values{"ordering": {"id"}}})
		req := c.api.DcimAPI.DcimSitesList(rctx).Limit(inventoryPage).Offset(offset)
		if !since.IsZero() {
			req = req.LastUpdatedGte([]time.Time{since})
		}
		res, resp, err := req.Execute()
		if err != nil {
			return nil, nil, c.toError("inventory", resp, err, false)
		}
		var out []InventorySite
		for _, s := range res.Results {
			site := InventorySite{ID: s.Id, Name: s.Name, Slug: s.Slug, Description: s.GetDescription(), LastUpdated: nullTime(s.LastUpdated)}
			if r := s.Region.Get(); r != nil {
				site.Region = r.Name
			}
			out = append(out, site)
		}
		return out, res.Next.Get(), nil
	})
}

// ListInventoryDeviceTypes lists the device types changed at or after since (all when since is zero).
func (c *Search) ListInventoryDeviceTypes(ctx context.Context, since time.Time) ([]InventoryDeviceType, error) {
	return listPages(c.conn, "device type", func(offset int32) ([]InventoryDeviceType, *string, error) {
		rctx := withRequestOptions(ctx, requestOptions{op: "list_device_types", query: url.Values{"ordering": {"id"}}})
		req := c.api.DcimAPI.DcimDeviceTypesList(rctx).Limit(inventoryPage).Offset(offset)
		if !since.IsZero() {
			req = req.LastUpdatedGte([]time.Time{since})
		}
		res, resp, err := req.Execute()
		if err != nil {
			return nil, nil, c.toError("inventory", resp, err, false)
		}
		var out []InventoryDeviceType
		for _, t := range res.Results {
			out = append(out, InventoryDeviceType{
				ID: t.Id, Model: t.Model, Manufacturer: t.Manufacturer.Name, PartNumber: t.GetPartNumber(),
				Description: t.GetDescription(), LastUpdated: nullTime(t.LastUpdated),
			})
		}
		return out, res.Next.Get(), nil
	})
}

// listPages follows NetBox's offset paging of one inventory listing: page(offset) returns a page's rows
// and its next link (nil on the last page). A next link that does not advance, or more than maxPages
// pages, is a protocol error: the listing would never end.
func listPages[T any](c *conn, what string, page func(offset int32) ([]T, *string, error)) ([]T, error) {
	if err := c.usable("inventory"); err != nil {
		return nil, err
	}
	var out []T
	offset := int32(0)
	for range c.maxPages {
		rows, next, err := page(offset)
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
		if next == nil {
			return out, nil
		}
		if offset, err = nextOffset(*next, offset); err != nil {
			c.metrics.apiError("protocol")
			return nil, &Error{Kind: KindProtocol, Op: "inventory", Err: err}
		}
	}
	c.metrics.apiError("protocol")
	return nil, newError(KindProtocol, "inventory", "%s list does not end", what)
}

func nullTime(t nb.NullableTime) time.Time {
	if v := t.Get(); v != nil {
		return v.UTC()
	}
	return time.Time{}
}

// capabilities drops the fixed fields (pool flag, owner, BMC address, boot MAC) from the custom fields.
func (c *conn) capabilities(custom map[string]any) map[string]any {
	f := c.cfg.Fields
	out := make(map[string]any, len(custom))
	for k, v := range custom {
		switch k {
		case f.Managed, f.RequestUID, f.BMCAddress, f.BootMAC:
			continue
		}
		if m, ok := v.(map[string]any); ok { // a NetBox 4.7 select value {value, label}
			if val, ok := m["value"]; ok {
				v = val
			}
		}
		out[k] = v
	}
	return out
}

func (c *conn) inventoryDevice(m *nb.DeviceWithConfigContext) InventoryDevice {
	base := c.deviceFromModel(m)
	d := InventoryDevice{
		ID: base.ID, Name: base.Name, Status: base.Status, Managed: base.Managed, Capabilities: c.capabilities(base.Custom),
		Site: InventorySite{ID: m.Site.Id, Name: m.Site.Name, Slug: m.Site.Slug, Description: deref(m.Site.Description)},
		Type: InventoryDeviceType{ID: m.DeviceType.Id, Model: m.DeviceType.Model, Manufacturer: m.DeviceType.Manufacturer.Name,
			Description: deref(m.DeviceType.Description)},
		Serial: deref(m.Serial), Description: deref(m.Description), LastUpdated: nullTime(m.LastUpdated),
	}
	if !base.ownerInvalid {
		d.RequestUID = base.RequestUID
	}
	d.Free = base.Free()
	if a := m.AssetTag.Get(); a != nil {
		d.AssetTag = *a
	}
	for _, t := range m.Tags {
		d.Tags = append(d.Tags, t.Name)
	}
	return d
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// lenientInventoryDevice reads what the inventory needs when go-netbox's strict models refuse an
// answer NetBox legitimately sends (see lenientDevice).
type lenientInventoryDevice struct {
	lenientDevice
	Site struct {
		ID          int32  `json:"id"`
		Name        string `json:"name"`
		Slug        string `json:"slug"`
		Description string `json:"description"`
	} `json:"site"`
	DeviceType struct {
		ID           int32  `json:"id"`
		Model        string `json:"model"`
		Description  string `json:"description"`
		Manufacturer struct {
			Name string `json:"name"`
		} `json:"manufacturer"`
	} `json:"device_type"`
	Serial      *string                 `json:"serial"`
	AssetTag    *string                 `json:"asset_tag"`
	Description *string                 `json:"description"`
	Tags        []struct{ Name string } `json:"tags"`
	LastUpdated *time.Time              `json:"last_updated"`
}

func (c *conn) inventoryDeviceLenient(l *lenientInventoryDevice) InventoryDevice {
	base := c.deviceFromLenient(&l.lenientDevice)
	d := InventoryDevice{
		ID: base.ID, Name: base.Name, Status: base.Status, Managed: base.Managed, Capabilities: c.capabilities(base.Custom),
		Site: InventorySite{ID: l.Site.ID, Name: l.Site.Name, Slug: l.Site.Slug, Description: l.Site.Description},
		Type: InventoryDeviceType{ID: l.DeviceType.ID, Model: l.DeviceType.Model, Manufacturer: l.DeviceType.Manufacturer.Name,
			Description: l.DeviceType.Description},
		Serial: deref(l.Serial), AssetTag: deref(l.AssetTag), Description: deref(l.Description),
	}
	if !base.ownerInvalid {
		d.RequestUID = base.RequestUID
	}
	d.Free = base.Free()
	if l.LastUpdated != nil {
		d.LastUpdated = l.LastUpdated.UTC()
	}
	for _, t := range l.Tags {
		d.Tags = append(d.Tags, t.Name)
	}
	return d
}
