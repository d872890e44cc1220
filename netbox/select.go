package netbox

import (
	"context"
	"net/url"

	"go.uber.org/zap"

	"github.com/o2ims-operator/o2ims-operator/netbox/selector"
)

// Search is the client's reading part: the free-host search and selector matching the host step uses,
// and the inventory listings the O-Cloud view refreshes from (inventory.go). A search checks its
// selector against the schema first, hence the schema it holds.
type Search struct {
	*conn
	schema *Schema
}

// FindFreeHost returns a free pool device matching sel, skipping the ids in
// skip (candidates the caller already lost). It checks the schema first, then
// lists staged, unowned pool devices filtered by the selector page by page and
// re-checks every row client-side, because NetBox silently ignores a filter it
// does not know. The device has no ETag: read it with GetDevice before Claim.
// ErrNoFreeHost (errors.Is) when nothing matches.
func (c *Search) FindFreeHost(ctx context.Context, sel Selector, skip map[int32]bool) (*Device, error) {
	found, err := c.FindFreeHosts(ctx, sel, skip, 1)
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		return nil, ErrNoFreeHost
	}
	return found[0], nil
}

// FindFreeHosts is FindFreeHost for up to n devices from one schema check and
// one listing: a role asking for n hosts costs two calls, not 2n. Fewer than n
// (possibly none) is not an error: the caller reports how many are missing.
func (c *Search) FindFreeHosts(ctx context.Context, sel Selector, skip map[int32]bool, n int) ([]*Device, error) {
	if n <= 0 {
		return nil, nil
	}
	if err := c.usable("find"); err != nil {
		return nil, err
	}
	norm, err := normalizeSelector(sel, c.cfg.Fields)
	if err != nil {
		return nil, err
	}
	if err := c.schema.checkSchema(ctx, norm); err != nil {
		return nil, err
	}
	filters := c.deviceFilters(norm)

	var found []*Device
	offset := int32(0)
	scanned, rejected, skipped := 0, 0, 0
	for page := 0; page < c.maxPages; page++ {
		p, err := c.listDevices(ctx, "find", filters, offset)
		if err != nil {
			return nil, err
		}
		for _, d := range p.devices {
			scanned++
			if skip[d.ID] {
				skipped++
				continue
			}
			if !c.candidate(d, norm) {
				rejected++
				continue
			}
			found = append(found, d)
			if len(found) == n {
				c.logSearch(scanned, rejected, skipped, d.ID)
				return found, nil
			}
		}
		if p.next == nil {
			c.logSearch(scanned, rejected, skipped, 0)
			return found, nil
		}
		if offset, err = nextOffset(*p.next, offset); err != nil {
			c.metrics.apiError("protocol")
			return nil, &Error{Kind: KindProtocol, Op: "find", Err: err}
		}
	}
	c.metrics.apiError("protocol")
	return nil, newError(KindProtocol, "find", "device list does not end")
}

// deviceFilters: pool flag true, owner empty, one exact filter per selector key
// (selector.Filters). status=staged is set through go-netbox's own builder.
func (c *Search) deviceFilters(sel map[string]selector.Value) url.Values {
	return selector.Filters(c.cfg.Fields.Managed, c.cfg.Fields.RequestUID, sel)
}

// candidate is the client-side re-check of a listed row.
func (c *Search) candidate(d *Device, sel map[string]selector.Value) bool {
	if !d.Free() {
		return false
	}
	for k, v := range sel {
		if !v.Matches(d.Custom[k]) {
			return false
		}
	}
	return true
}

func (c *Search) logSearch(scanned, rejected, skipped int, found int32) {
	fields := []zap.Field{zap.Int("scanned", scanned), zap.Int("skipped", skipped), zap.Int32("deviceID", found)}
	if rejected > 0 {
		// NetBox returned rows its filters should have excluded: a filter was ignored.
		c.log.Warn("NetBox returned devices that do not match the filters; skipped them",
			append(fields, zap.Int("rejected", rejected))...)
		return
	}
	c.log.Debug("NetBox host search", fields...)
}

// Matcher answers the test host selection applies to the inventory's in-memory view: a free device
// (InventoryDevice.Free) whose custom fields match sel, the same re-check FindFreeHosts applies to
// each listed row. With check, sel is first checked against NetBox's schema as FindFreeHosts does (one
// call), so a selector naming no field fails with the same error instead of matching nothing for
// ever (on a listing of the fields at most schemaReuse old, shared by all checks); without, it is only
// normalised (a selector already checked).
func (c *Search) Matcher(ctx context.Context, sel Selector, check bool) (func(*InventoryDevice) bool, error) {
	norm, err := normalizeSelector(sel, c.cfg.Fields)
	if err != nil {
		return nil, err
	}
	if check {
		if err := c.usable("find"); err != nil {
			return nil, err
		}
		if err := c.schema.checkSchemaRecent(ctx, norm); err != nil {
			return nil, err
		}
	}
	return func(d *InventoryDevice) bool {
		if !d.Free {
			return false
		}
		for k, v := range norm {
			if !v.Matches(d.Capabilities[k]) {
				return false
			}
		}
		return true
	}, nil
}
