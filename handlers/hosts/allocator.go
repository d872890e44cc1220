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
// (inventory.View, inventory/freehosts.go), one per process, the one the inventory API serves. A device an
// administrator frees shows within its refresh interval; one the operator frees, at once.
type Pool interface {
	// IsSynced: a full listing has been applied (before it, hosts are found by listing NetBox).
	IsSynced() bool
	// ReadFree runs fn under the view's read lock with its free devices and a lookup of one (nil: not free).
	ReadFree(fn func(free iter.Seq[*netbox.InventoryDevice], lookup func(id int32) *netbox.InventoryDevice))
	// OnFreeChange tells fn, under the view's write lock, of every device that comes free, changes while
	// free (free again) or stops being free.
	OnFreeChange(fn func(dev *netbox.InventoryDevice, free bool))
	// FailedSince lists the pool's devices NetBox holds failed (quarantined) and last changed no earlier
	// than since: the burst guard's memory across restarts (bmcfault.go).
	FailedSince(since time.Time) []int32
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

	mu   sync.Mutex // taken after the view's lock, never before
	wake func(namespace, name string)
	// alive tells whether a request still exists and is not being deleted (nil: always): a request
	// deleted without a pass of ours (it had no finalizer yet) never says it stopped waiting.
	alive   func(uid string) bool
	seq     uint64
	gen     uint64    // moves whenever a host comes free or changes while free (a waiter's scan is then due)
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
	// scanned is gen at its last look at every free host, for selector: until either moves, every host
	// that came free since was offered to the longest waiter that can use it, so it need not look again.
	scanned  uint64
	selector string
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
	a := &Allocator{pool: pool, clock: clk, ttl: ttl, gen: 1, byKey: map[waiterKey]*waiter{}, held: map[int32]hold{}}
	pool.OnFreeChange(a.freeChanged)
	return a
}

// AliveWith sets how the allocator learns that a waiting request is gone (the operator's cache).
func (a *Allocator) AliveWith(fn func(uid string) bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.alive = fn
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
	Selector                   string         // the selector Match tests, as text (a change means a new look)
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
	a.pool.ReadFree(func(free iter.Seq[*netbox.InventoryDevice], lookup func(int32) *netbox.InventoryDevice) {
		a.mu.Lock()
		defer a.mu.Unlock()
		now := a.clock.Now()
		a.expireLocked(now, lookup)
		k := waiterKey{w.UID, w.Role}
		me := a.byKey[k]
		if me == nil && !w.Since.IsZero() {
			// It waited before (a restart, another leader): back in its place before it looks.
			me = a.waitLocked(w, w.N, now)
		}
		if me != nil {
			me.match = w.Match // its selector may have changed
		}
		ids = a.takeHeldLocked(w, me, lookup, now)
		scanned := false
		if len(ids) < w.N && (me == nil || me.scanned != a.gen || me.selector != w.Selector) {
			ids, scanned = a.scanLocked(w, me, free, ids, now), true
		}
		if len(ids) == w.N {
			a.removeLocked(k)
			return
		}
		me = a.waitLocked(w, w.N-len(ids), now)
		if scanned {
			me.scanned, me.selector = a.gen, w.Selector
		}
		since = me.since
	})
	return ids, since
}

// takeHeldLocked answers the hosts set aside for w that are still free and still match its selector;
// others it lets go.
func (a *Allocator) takeHeldLocked(w Want, me *waiter, lookup func(int32) *netbox.InventoryDevice, now time.Time) []int32 {
	k := waiterKey{w.UID, w.Role}
	var ids []int32
	for id, h := range a.held {
		if h.waiterKey != k {
			continue
		}
		cur := lookup(id)
		switch {
		case cur == nil:
			a.unholdLocked(id, h)
		case w.Skip[id]:
			// Recorded already: a candidate being claimed keeps its hold; an offer of a host it is
			// releasing goes to the next waiter.
			if h.offered {
				a.dropLocked(id, h, me, now)
			}
		case !w.Match(cur):
			a.dropLocked(id, h, me, now) // its selector or the host changed since it was set aside
		case len(ids) < w.N:
			ids = append(ids, id)
			a.takeLocked(id, h, me, now)
		}
	}
	return ids
}

// scanLocked looks at every free host for w: one no earlier waiter can use is w's, one an earlier
// waiter can use is offered to it.
func (a *Allocator) scanLocked(w Want, me *waiter, free iter.Seq[*netbox.InventoryDevice], ids []int32, now time.Time) []int32 {
	k := waiterKey{w.UID, w.Role}
	for d := range free {
		if len(ids) >= w.N {
			break
		}
		if _, held := a.held[d.ID]; held || w.Skip[d.ID] || !w.Match(d) {
			continue
		}
		if e := a.firstWaiterLocked(d, me, nil); e != nil {
			a.offerLocked(*d, e, now)
			continue
		}
		a.held[d.ID] = hold{waiterKey: k, dev: *d, at: now}
		ids = append(ids, d.ID)
	}
	return ids
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
			a.dropLocked(id, h, nil, now)
		}
	}
}

// freeChanged is the view's news of one device: one that comes free (or changes while free) goes to
// the longest waiter that can use it; one that stops being free is no longer held.
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
	a.gen++
	if held {
		return
	}
	if e := a.firstWaiterLocked(d, nil, nil); e != nil {
		a.offerLocked(*d, e, a.clock.Now())
	}
}

// firstWaiterLocked is the longest waiter before `before` (all of them when nil), other than except,
// that can use d and is not already offered as many as it lacks.
func (a *Allocator) firstWaiterLocked(d *netbox.InventoryDevice, before, except *waiter) *waiter {
	for _, e := range a.waiters {
		if e == before {
			return nil
		}
		if e != except && e.offered < e.missing && e.match(d) && a.isAlive(e) {
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

// dropLocked lets go of the hold of a host that may still be free: it goes to the longest waiter other
// than except that can use it (if it is no longer free, that waiter's Take lets go of it).
func (a *Allocator) dropLocked(id int32, h hold, except *waiter, now time.Time) {
	a.unholdLocked(id, h)
	if e := a.firstWaiterLocked(&h.dev, nil, except); e != nil {
		a.offerLocked(h.dev, e, now)
	}
}

// waitLocked records (or refreshes) w's waiting for missing more hosts. Its place is its since (to the
// second, as the request records it), then its arrival.
func (a *Allocator) waitLocked(w Want, missing int, now time.Time) *waiter {
	k := waiterKey{w.UID, w.Role}
	e := a.byKey[k]
	if e == nil {
		a.seq++
		e = &waiter{waiterKey: k, since: now.Truncate(time.Second), seq: a.seq}
		a.byKey[k] = e
		a.waiters = append(a.waiters, e)
		a.sortLocked()
	}
	if !w.Since.IsZero() && w.Since.Before(e.since) {
		e.since = w.Since
		a.sortLocked()
	}
	e.namespace, e.name, e.match, e.missing, e.seen = w.Namespace, w.Name, w.Match, missing, now
	return e
}

func (a *Allocator) sortLocked() {
	slices.SortStableFunc(a.waiters, func(x, y *waiter) int {
		if c := x.since.Compare(y.since); c != 0 {
			return c
		}
		return int(x.seq) - int(y.seq)
	})
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
			a.dropLocked(id, h, nil, now)
		}
	}
}

// expireLocked lets go of what is stale: holds of hosts no longer free, hosts untaken for ttl, and
// waiters silent for ttl (with what was offered to them).
func (a *Allocator) expireLocked(now time.Time, lookup func(int32) *netbox.InventoryDevice) {
	for id, h := range a.held {
		switch {
		case lookup(id) == nil:
			a.unholdLocked(id, h)
		case now.Sub(h.at) > a.ttl:
			a.dropLocked(id, h, nil, now)
		}
	}
	for _, e := range slices.Clone(a.waiters) {
		if now.Sub(e.seen) > a.ttl || !a.isAlive(e) {
			a.removeLocked(e.waiterKey)
		}
	}
}

func (a *Allocator) isAlive(e *waiter) bool { return a.alive == nil || a.alive(e.uid) }
