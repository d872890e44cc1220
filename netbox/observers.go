package netbox

import (
	"net/http"
	"sync"

	nb "github.com/netbox-community/go-netbox/v4"
)

// WriteObserver hears about every device write the client made that NetBox confirmed (a claim, a
// release, a quarantine), and every device read by id (GetDevice: a claim's read that finds a host
// taken corrects the view at once): dev is the device as NetBox answered, or nil when that answer
// could not be read beyond its id. It runs on the caller's goroutine and must not block.
type WriteObserver func(id int32, dev *InventoryDevice)

type writeObservers struct {
	mu  sync.Mutex
	fns []WriteObserver
}

// ObserveWrites adds fn to the observers of confirmed device writes and reads by id, and of a device
// NetBox answered 404 for (dev.Deleted).
func (c *Claims) ObserveWrites(fn WriteObserver) {
	c.observers.mu.Lock()
	defer c.observers.mu.Unlock()
	c.observers.fns = append(c.observers.fns, fn)
}

// deleted tells the observers that NetBox no longer has device id (a read or write by id met 404): a
// view drops it now rather than at its next full listing, and nobody chooses it again meanwhile.
func (c *conn) deleted(id int32) {
	c.observers.mu.Lock()
	fns := c.observers.fns
	c.observers.mu.Unlock()
	for _, fn := range fns {
		fn(id, &InventoryDevice{ID: id, Deleted: true})
	}
}

// written tells the observers about a confirmed write (called by patchDevice).
func (c *conn) written(id int32, res *nb.DeviceWithConfigContext, resp *http.Response, err error) {
	c.observers.mu.Lock()
	fns := c.observers.fns
	c.observers.mu.Unlock()
	if len(fns) == 0 {
		return
	}
	var dev *InventoryDevice
	switch {
	case err == nil && res != nil:
		d := c.inventoryDevice(res)
		dev = &d
	default:
		if body, ok := undecodedBody(resp, err); ok {
			var l lenientInventoryDevice
			if decodeLenient(body, &l) == nil && l.ID == id {
				d := c.inventoryDeviceLenient(&l)
				dev = &d
			}
		}
	}
	for _, fn := range fns {
		fn(id, dev)
	}
}
