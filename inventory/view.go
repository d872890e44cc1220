package inventory

import (
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/o2ims-operator/o2ims-operator/netbox"
)

// Kind names a type of inventory object, as notifications and metrics name it.
type Kind string

const (
	KindResource          Kind = "resource"
	KindResourcePool      Kind = "resourcePool"
	KindResourceType      Kind = "resourceType"
	KindDeploymentManager Kind = "deploymentManager"
)

// Change is one object created (Prior nil), modified or deleted (Post nil).
type Change struct {
	Kind        Kind
	ID          string
	Prior, Post *Entry
	At          time.Time // when the view saw it
}

// View is the in-memory inventory. Its zero value is not usable; see NewView.
type View struct {
	clock clock.WithTicker // stamps changes and refreshes, and paces the refresher
	// synced is closed once a full listing has been applied (the notifier waits for it).
	synced chan struct{}

	mu          sync.RWMutex
	index       // the objects, under mu (index.go)
	snap        *Snapshot
	lastRefresh time.Time // last successful refresh from NetBox
	sinks       []func([]Change)
}

// NewView makes an empty view; owner (may be nil) names the request of an owner uid in a resource's
// extensions.
func NewView(cfg Config, owner func(uid string) string) *View {
	v := &View{clock: clock.RealClock{}, synced: make(chan struct{}), index: newIndex(cfg, owner)}
	v.now = func() time.Time { return v.clock.Now() } // read at each change: a test may set the clock
	return v
}

// Config is the O-Cloud configuration the view was made with.
func (v *View) Config() Config { return v.cfg }

// OnChange adds a sink for changes. Sinks run under the view's lock, in the order changes happen, and
// must only record them (never block or call back into the view).
func (v *View) OnChange(fn func([]Change)) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.sinks = append(v.sinks, fn)
}

// Synced reports whether a full listing has been applied, and when NetBox last answered a refresh.
func (v *View) Synced() (synced bool, lastRefresh time.Time) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.isSynced(), v.lastRefresh
}

// IsSynced reports whether a full listing has been applied.
func (v *View) IsSynced() bool { return v.isSynced() }

func (v *View) isSynced() bool {
	select {
	case <-v.synced:
		return true
	default:
		return false
	}
}

// SyncedC is closed once the view has applied a full listing (the notifier waits for it).
func (v *View) SyncedC() <-chan struct{} { return v.synced }

// Resource answers one resource of a pool.
func (v *View) Resource(poolID, id string) (*Entry, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	dev, ok := v.byResource[id]
	if !ok {
		return nil, false
	}
	d := v.devices[dev]
	if v.cfg.ResourcePoolID(d.rec.Site.ID) != poolID {
		return nil, false
	}
	return d.entry, true
}

// Pool, Site and Type answer one object by id.
func (v *View) Pool(id string) (*Entry, bool) { return v.lookup(v.byPool, v.pools, id) }
func (v *View) Site(id string) (*Entry, bool) { return v.lookup(v.bySite, v.ocSites, id) }
func (v *View) Type(id string) (*Entry, bool) { return v.lookup(v.byType, v.rtypes, id) }

func (v *View) lookup(index map[string]int32, entries map[int32]*Entry, id string) (*Entry, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	k, ok := index[id]
	if !ok {
		return nil, false
	}
	e, ok := entries[k]
	return e, ok
}

// Snapshot is the whole view at one revision, each collection sorted by id. Shared and read-only.
type Snapshot struct {
	Rev       uint64
	Resources map[string][]*Entry // by pool id
	Pools     []*Entry
	Sites     []*Entry
	Types     []*Entry
}

// Snapshot answers the current view, sorting only after a change.
func (v *View) Snapshot() *Snapshot {
	v.mu.RLock()
	if s := v.snap; s != nil && s.Rev == v.rev {
		v.mu.RUnlock()
		return s
	}
	v.mu.RUnlock()
	v.mu.Lock()
	defer v.mu.Unlock()
	if s := v.snap; s != nil && s.Rev == v.rev {
		return s
	}
	s := &Snapshot{Rev: v.rev, Resources: map[string][]*Entry{}}
	for _, d := range v.devices {
		pool := v.cfg.ResourcePoolID(d.rec.Site.ID)
		s.Resources[pool] = append(s.Resources[pool], d.entry)
	}
	for _, list := range s.Resources {
		sortEntries(list)
	}
	s.Pools = sortedValues(v.pools)
	s.Sites = sortedValues(v.ocSites)
	s.Types = sortedValues(v.rtypes)
	v.snap = s
	return s
}

func sortEntries(list []*Entry) {
	slices.SortFunc(list, func(a, b *Entry) int { return strings.Compare(a.ID, b.ID) })
}

func sortedValues(m map[int32]*Entry) []*Entry {
	out := make([]*Entry, 0, len(m))
	for _, e := range m {
		out = append(out, e)
	}
	sortEntries(out)
	return out
}

// applyDevices applies a listing. full: it is every pool device, so a stored device it lacks left
// NetBox (or the pool). A row older than what the view holds (a listing that started before one of
// the operator's own writes) is ignored.
func (v *View) applyDevices(rows []netbox.InventoryDevice, full bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	var changes []Change
	seen := make(map[int32]bool, len(rows))
	for i := range rows {
		seen[rows[i].ID] = true
		changes = v.upsertLocked(&rows[i], changes)
	}
	if full {
		for id := range v.devices {
			if !seen[id] {
				changes = v.removeLocked(id, changes)
			}
		}
	}
	v.emitLocked(changes)
}

// Written applies the answer of one of the operator's own writes or reads by id at once (dev nil: the
// answer was not readable, the next refresh reads the device; dev.Deleted: NetBox has it no more).
func (v *View) Written(id int32, dev *netbox.InventoryDevice) {
	if dev == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if dev.Deleted {
		v.emitLocked(v.removeLocked(id, nil))
		return
	}
	v.emitLocked(v.upsertLocked(dev, nil))
}

// applySites records site details from the site listing; a pool whose site changed is rebuilt.
func (v *View) applySites(rows []netbox.InventorySite) {
	v.mu.Lock()
	defer v.mu.Unlock()
	var changes []Change
	now := v.clock.Now()
	for _, s := range rows {
		v.sites[s.ID] = siteDetail{site: s, listed: true}
		if v.poolRefs[s.ID] > 0 {
			changes = v.rebuildSiteLocked(s.ID, changes, now)
		}
	}
	v.emitLocked(changes)
}

// applyTypes records device type details from the device type listing.
func (v *View) applyTypes(rows []netbox.InventoryDeviceType) {
	v.mu.Lock()
	defer v.mu.Unlock()
	var changes []Change
	now := v.clock.Now()
	for _, t := range rows {
		v.types[t.ID] = typeDetail{t: t, listed: true}
		if v.typeRefs[t.ID] > 0 {
			changes = v.rebuildTypeLocked(t.ID, changes, now)
		}
	}
	v.emitLocked(changes)
}

func (v *View) emitLocked(changes []Change) {
	if len(changes) == 0 {
		return
	}
	for _, fn := range v.sinks {
		fn(changes)
	}
}

// refreshed records a successful refresh (full: the view now holds the whole pool).
func (v *View) refreshed(full bool, at time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if full && !v.isSynced() {
		close(v.synced)
	}
	v.lastRefresh = at
}

// Counts answers how many resources, pools and types the view holds.
func (v *View) Counts() (resources, pools, types int) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return len(v.devices), len(v.pools), len(v.rtypes)
}

// Attach hands init every object the view holds (by id, with its kind) and registers sink, both under
// the view's lock: a notifier then misses no change between what it was given and what follows. init
// runs where sinks run (same lock order).
func (v *View) Attach(init func(map[string]Change), sink func([]Change)) {
	v.mu.Lock()
	defer v.mu.Unlock()
	init(v.objectsLocked())
	v.sinks = append(v.sinks, sink)
}

// Objects is every object the view holds now, by id with its kind.
func (v *View) Objects() map[string]Change {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.objectsLocked()
}
