package hosts

import (
	"iter"
	"slices"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/o2ims-operator/o2ims-operator/netbox"
)

// Pool is the in-memory picture of NetBox's pool that candidates are chosen from: the inventory's view
// (nbi/inventory.View, freehosts.go), one per process, the one the inventory API serves. A device an
// administrator frees shows within its refresh interval; one the operator frees, at once.
type Pool interface {
	// IsSynced: a full listing has been applied (before it, hosts are found by listing NetBox).
	IsSynced() bool
	// ReadFree runs fn under the view's read lock with its free devices.
	ReadFree(fn func(free iter.Seq[*netbox.InventoryDevice], isFree func(id int32) bool))
	// OnFreeChange tells fn, under the view's write lock, of every device that comes free or stops being.
	OnFreeChange(fn func(dev *netbox.InventoryDevice, free bool))
}

// Allocator hands the pool's free hosts to requests, from memory, first come first served: a host
// that comes free is set aside for the request that has waited longest and can use it (its selector
// matches), and that request is woken; a request never gets a host an earlier waiter can use, and one
// that cannot use a host never holds it up for one that can. Hosts handed out are held here until the
// view shows them claimed, so requests of this process do not race each other for them in NetBox.
//
// It is an optimisation and an order, not a lock: the claim in NetBox (GET with ETag, conditional
// PATCH) stays what makes a host one request's. After a restart, or when another replica led meanwhile,
// it starts empty; a waiter resumes its place from the time its request recorded (Want.Since).
type Allocator struct {
	pool  Pool
	clock clock.PassiveClock
	// ttl: a waiter that has not asked again for this long is gone (its request was deleted, failed or
	// is handled elsewhere), and a host held for one that has not taken it goes back.
	ttl time.Duration

	mu      sync.Mutex // taken after the view's lock, never before
	wake    func(namespace, name string)
	seq     uint64
	waiters []*waiter // in the order they started waiting
	byKey   map[waiterKey]*waiter
	held    map[int32]hold
}

type waiterKey struct{ uid, role string }

// waiter is one role of one request that lacks hosts.
type waiter struct {
	waiterKey
	namespace, name string
	match           func(*netbox.InventoryDevice) bool
	missing         int // hosts it still lacks
	offered         int // hosts set aside for it that it has not taken yet
	since           time.Time
	seq             uint64 // ties of since, in arrival order
	seen            time.Time
}

// hold is a free host set aside for one request: offered (it was woken to take it) or taken (it
// recorded it as a candidate and claims it next). dev is the host as the view had it then (a copy: it
// is matched against the next waiter's selector when the hold is let go).
type hold struct {
	waiterKey
	dev     netbox.InventoryDevice
	at      time.Time
	offered bool
}

// NewAllocator builds the allocator over pool and listens to its free hosts; ttl is how long a silent
// waiter or an untaken host is kept.
func NewAllocator(pool Pool, clk clock.PassiveClock, ttl time.Duration) *Allocator {
	a := &Allocator{pool: pool, clock: clk, ttl: ttl, byKey: map[waiterKey]*waiter{}, held: map[int32]hold{}}
	pool.OnFreeChange(a.freeChanged)
	return a
}

// WakeWith sets how a waiting request is woken (the chain's watch).
func (a *Allocator) WakeWith(fn func(namespace, name string)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.wake = fn
}

// Synced: the view can be chosen from.
func (a *Allocator) Synced() bool { return a.pool.IsSynced() }

// Want is what one role of one request lacks.
type Want struct {
	UID, Namespace, Name, Role string
	Match                      func(*netbox.InventoryDevice) bool
	N                          int            // empty positions
	Skip                       map[int32]bool // hosts the request already records
	Since                      time.Time      // when it started waiting, as its request recorded (zero: now)
}

// Waiting reports whether the role of the request is waiting (its selector was checked when it began).
func (a *Allocator) Waiting(uid, role string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.byKey[waiterKey{uid, role}]
	return ok
}

// Take answers up to w.N hosts for w — those set aside for it first, then free ones no earlier waiter
// can use — and, when that is fewer, since when it waits for the rest (zero when it does not wait).
func (a *Allocator) Take(w Want) (ids []int32, since time.Time) {
	a.pool.ReadFree(func(free iter.Seq[*netbox.InventoryDevice], isFree func(int32) bool) {
		a.mu.Lock()
		defer a.mu.Unlock()
		now := a.clock.Now()
		a.expireLocked(now, isFree)
		k := waiterKey{w.UID, w.Role}
		me := a.byKey[k]
		for id, h := range a.held {
			switch {
			case h.waiterKey != k:
			case w.Skip[id]: // it still records this host (one it is releasing): not one to take again
				a.unholdLocked(id, h)
			case len(ids) < w.N:
				ids = append(ids, id)
				a.takeLocked(id, h, me, now)
			}
		}
		for d := range free {
			if len(ids) >= w.N {
				break
			}
			if _, held := a.held[d.ID]; held || w.Skip[d.ID] || !w.Match(d) {
				continue
			}
			if e := a.firstWaiterLocked(d, me); e != nil {
				a.offerLocked(*d, e, now)
				continue
			}
			a.held[d.ID] = hold{waiterKey: k, dev: *d, at: now}
			ids = append(ids, d.ID)
		}
		if len(ids) == w.N {
			a.removeLocked(k)
			return
		}
		since = a.waitLocked(w, w.N-len(ids), now)
	})
	return ids, since
}

// Keep forgets the waiting of the request's roles other than roles (no longer asked for, or no longer
// lacking hosts).
func (a *Allocator) Keep(uid string, roles map[string]bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, e := range slices.Clone(a.waiters) {
		if e.uid == uid && !roles[e.role] {
			a.removeLocked(e.waiterKey)
		}
	}
}

// Forget forgets a request that waits for nothing any more (deleted, failed): its place and the hosts
// set aside for it, which go to the next waiters.
func (a *Allocator) Forget(uid string) {
	a.Keep(uid, nil)
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.clock.Now()
	for id, h := range a.held {
		if h.uid == uid {
			a.dropLocked(id, h, now)
		}
	}
}

// freeChanged is the view's news of one device: one that comes free goes to the longest waiter that
// can use it; one that stops being free is no longer held.
func (a *Allocator) freeChanged(d *netbox.InventoryDevice, free bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	h, held := a.held[d.ID]
	if !free {
		if held {
			a.unholdLocked(d.ID, h)
		}
		return
	}
	if held {
		return
	}
	if e := a.firstWaiterLocked(d, nil); e != nil {
		a.offerLocked(*d, e, a.clock.Now())
	}
}

// firstWaiterLocked is the longest waiter before me (all of them when me is nil) that can use d and is
// not already offered as many as it lacks.
func (a *Allocator) firstWaiterLocked(d *netbox.InventoryDevice, me *waiter) *waiter {
	for _, e := range a.waiters {
		if e == me {
			return nil
		}
		if e.offered < e.missing && e.match(d) {
			return e
		}
	}
	return nil
}

func (a *Allocator) offerLocked(d netbox.InventoryDevice, e *waiter, now time.Time) {
	a.held[d.ID] = hold{waiterKey: e.waiterKey, dev: d, at: now, offered: true}
	e.offered++
	if a.wake != nil {
		a.wake(e.namespace, e.name)
	}
}

// takeLocked turns an offered host into a taken one.
func (a *Allocator) takeLocked(id int32, h hold, e *waiter, now time.Time) {
	if e != nil && h.offered {
		e.offered--
	}
	h.offered, h.at = false, now
	a.held[id] = h
}

// unholdLocked lets go of a hold.
func (a *Allocator) unholdLocked(id int32, h hold) {
	delete(a.held, id)
	if e := a.byKey[h.waiterKey]; e != nil && h.offered {
		e.offered--
	}
}

// dropLocked lets go of the hold of a host that may still be free: it goes to the longest waiter that
// can use it (if it is no longer free, that waiter's Take lets go of it and finds another).
func (a *Allocator) dropLocked(id int32, h hold, now time.Time) {
	a.unholdLocked(id, h)
	if e := a.firstWaiterLocked(&h.dev, nil); e != nil {
		a.offerLocked(h.dev, e, now)
	}
}

// waitLocked records (or refreshes) w's waiting for missing more hosts and answers since when.
func (a *Allocator) waitLocked(w Want, missing int, now time.Time) time.Time {
	k := waiterKey{w.UID, w.Role}
	e := a.byKey[k]
	if e == nil {
		a.seq++
		e = &waiter{waiterKey: k, since: now, seq: a.seq}
		a.byKey[k] = e
		a.waiters = append(a.waiters, e)
	}
	if !w.Since.IsZero() && w.Since.Before(e.since) {
		e.since = w.Since
	}
	e.namespace, e.name, e.match, e.missing, e.seen = w.Namespace, w.Name, w.Match, missing, now
	slices.SortStableFunc(a.waiters, func(x, y *waiter) int {
		if c := x.since.Compare(y.since); c != 0 {
			return c
		}
		return int(x.seq) - int(y.seq)
	})
	return e.since
}

func (a *Allocator) removeLocked(k waiterKey) {
	e := a.byKey[k]
	if e == nil {
		return
	}
	delete(a.byKey, k)
	a.waiters = slices.DeleteFunc(a.waiters, func(x *waiter) bool { return x == e })
	now := a.clock.Now()
	for id, h := range a.held {
		if h.waiterKey == k && h.offered {
			a.dropLocked(id, h, now)
		}
	}
}

// expireLocked lets go of what is stale: holds of hosts no longer free, hosts untaken for ttl, and
// waiters silent for ttl (with what was offered to them).
func (a *Allocator) expireLocked(now time.Time, isFree func(int32) bool) {
	for id, h := range a.held {
		switch {
		case !isFree(id):
			a.unholdLocked(id, h)
		case now.Sub(h.at) > a.ttl:
			a.dropLocked(id, h, now)
		}
	}
	for _, e := range slices.Clone(a.waiters) {
		if now.Sub(e.seen) > a.ttl {
			a.removeLocked(e.waiterKey)
		}
	}
}
