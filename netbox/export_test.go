package netbox

import "time"

// Test hooks (compiled into the test binary only).

// SetRetryForTest shortens GET retry backoff so tests do not sleep.
func SetRetryForTest(nb *Client, attempts int, base time.Duration) {
	c := nb.Schema.conn // every part's
	c.retry.attempts = attempts
	c.retry.base = base
	c.retry.max = 4 * base
}

// SetPageSizeForTest changes the device list page size (limit).
func SetPageSizeForTest(c *Client, n int32) { c.Search.devicePage = n }

// DeviceFilters exposes the filters FindFreeHost sends.
func (c *Search) DeviceFiltersForTest(sel Selector) (string, error) {
	norm, err := normalizeSelector(sel, c.cfg.Fields)
	if err != nil {
		return "", err
	}
	return c.deviceFilters(norm).Encode(), nil
}

// NewDeviceForTest builds a Device as the client would from NetBox's custom fields.
func NewDeviceForTest(custom map[string]any) *Device {
	c := &conn{cfg: Config{Fields: DefaultFieldNames()}}
	return c.newDevice(1, "d1", StatusStaged, custom)
}

// SetDownProbeIntervalForTest changes how often a scrape probes a NetBox that was last seen down.
func SetDownProbeIntervalForTest(c *Client, d time.Duration) { c.Gate.metrics.up.interval = d }

// SetCheckIntervalsForTest changes how often the background check runs after an outage at start:
// every retry while NetBox does not answer, every recheck while it answers but fails the check.
func SetCheckIntervalsForTest(nb *Client, retry, recheck time.Duration) {
	c := nb.Gate
	c.metrics.avail.retry.Base, c.metrics.avail.retry.Max = retry, retry
	c.metrics.avail.recheck = recheck
}
