package inventory

import (
	"iter"
	"time"

	"github.com/o2ims-operator/o2ims-operator/netbox"
)

// The free hosts: the view keeps an index of the devices a claim can start from (in the pool, staged,
// unowned: netbox.InventoryDevice.Free), so that the host step chooses candidates from memory
// (handlers/hosts/allocator.go) and is told when a device comes free, instead of listing NetBox on
// every pass of every request that waits. A device freed by the operator's own release shows at once
// (View.Written); one an administrator frees, within the refresh interval.

// ReadFree runs fn under the view's read lock with its free devices (in no particular order: a map's)
// and a lookup of one free device (nil: not free). fn must not keep the devices nor call back into the
// view.
func (v *View) ReadFree(fn func(free iter.Seq[*netbox.InventoryDevice], lookup func(id int32) *netbox.InventoryDevice)) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	fn(func(yield func(*netbox.InventoryDevice) bool) {
		for _, d := range v.free {
			if !yield(&d.rec) {
				return
			}
		}
	}, func(id int32) *netbox.InventoryDevice {
		if d, ok := v.free[id]; ok {
			return &d.rec
		}
		return nil
	})
}

// OnFreeChange adds fn, told of every device that enters the free index (free), leaves it, or changes
// while in it (free again: its fields may now match a selector they did not). It runs under the view's
// write lock, in the order of the changes; like a sink it must only record (and may wake a request),
// never block or call back into the view. The lock order is the view's, then fn's.
func (v *View) OnFreeChange(fn func(dev *netbox.InventoryDevice, free bool)) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.freeHooks = append(v.freeHooks, fn)
}

// trackFreeLocked keeps the free index for rec, now held as d (nil: gone from the view; changed: its
// inventory form changed), and tells the hooks.
func (x *index) trackFreeLocked(rec *netbox.InventoryDevice, d *device, changed bool) {
	_, was := x.free[rec.ID]
	is := d != nil && d.rec.Free
	if is {
		x.free[rec.ID] = d
	} else if was {
		delete(x.free, rec.ID)
	}
	if is == was && !(is && changed) {
		return
	}
	for _, fn := range x.freeHooks {
		fn(rec, is)
	}
}

// FailedSince lists the devices the view holds with NetBox status failed and last changed no earlier
// than since (the hosts step's BMC-fault burst guard reads it: quarantines survive a restart in NetBox).
func (v *View) FailedSince(since time.Time) []int32 {
	v.mu.RLock()
	defer v.mu.RUnlock()
	var out []int32
	for id, d := range v.devices {
		if d.rec.Status == netbox.StatusFailed && !d.rec.LastUpdated.Before(since) {
			out = append(out, id)
		}
	}
	return out
}
