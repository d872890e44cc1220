package inventory

import (
	"bytes"
	"time"

	"github.com/o2ims-operator/o2ims-operator/netbox"
)

// index is what the view holds: the pool's devices as NetBox answered them, the objects derived from
// them (pools, O-Cloud sites, resource types, each counted by the devices that make it appear) and the
// free hosts (freehosts.go), with the lookups by id. Its methods (suffix Locked) run under the view's
// lock and return the changes they made; the view hands them to its sinks.
type index struct {
	cfg   Config
	owner func(uid string) string // a request's name by uid; nil: none known
	now   func() time.Time        // stamps changes (the view's clock)

	devices    map[int32]*device
	byResource map[string]int32
	sites      map[int32]siteDetail
	types      map[int32]typeDetail
	poolRefs   map[int32]int // devices per site
	typeRefs   map[int32]int // devices per device type
	pools      map[int32]*Entry
	ocSites    map[int32]*Entry
	rtypes     map[int32]*Entry
	byPool     map[string]int32 // pool id → site id
	bySite     map[string]int32 // O-Cloud site id → site id
	byType     map[string]int32
	rev        uint64
	free       map[int32]*device // the devices a claim can start from (InventoryDevice.Free): freehosts.go
	freeHooks  []func(dev *netbox.InventoryDevice, free bool)
}

func newIndex(cfg Config, owner func(uid string) string) index {
	return index{
		cfg: cfg, owner: owner,
		devices: map[int32]*device{}, byResource: map[string]int32{},
		sites: map[int32]siteDetail{}, types: map[int32]typeDetail{},
		poolRefs: map[int32]int{}, typeRefs: map[int32]int{},
		pools: map[int32]*Entry{}, ocSites: map[int32]*Entry{}, rtypes: map[int32]*Entry{},
		byPool: map[string]int32{}, bySite: map[string]int32{}, byType: map[string]int32{},
		free: map[int32]*device{},
	}
}

type device struct {
	rec   netbox.InventoryDevice
	entry *Entry
}

type siteDetail struct {
	site   netbox.InventorySite
	listed bool // from the site listing (complete), not a device's nested site
}

type typeDetail struct {
	t      netbox.InventoryDeviceType
	listed bool
}

func (x *index) upsertLocked(rec *netbox.InventoryDevice, changes []Change) []Change {
	old, had := x.devices[rec.ID]
	if had && rec.LastUpdated.Before(old.rec.LastUpdated) {
		return changes
	}
	if !rec.Managed {
		if had {
			changes = x.removeLocked(rec.ID, changes)
		}
		return changes
	}
	if !x.sites[rec.Site.ID].listed {
		x.sites[rec.Site.ID] = siteDetail{site: rec.Site}
	}
	if !x.types[rec.Type.ID].listed {
		x.types[rec.Type.ID] = typeDetail{t: rec.Type}
	}
	entry := x.cfg.resourceEntry(rec, x.owner)
	if had && bytes.Equal(old.entry.JSON, entry.JSON) {
		old.rec = *rec
		x.trackFreeLocked(&old.rec, old, false)
		return changes
	}
	now := x.now()
	var prior *Entry
	d := &device{rec: *rec, entry: entry}
	x.devices[rec.ID] = d
	x.trackFreeLocked(&d.rec, d, true)
	x.byResource[entry.ID] = rec.ID
	x.rev++
	// The new pool and type are counted before the old ones are released, so a device that stays
	// where it was neither deletes nor re-creates them; one that moves creates the new before
	// deleting the old.
	switch {
	case !had:
		changes = refLocked(x.poolRefs, rec.Site.ID, x.rebuildSiteLocked, changes, now)
		changes = refLocked(x.typeRefs, rec.Type.ID, x.rebuildTypeLocked, changes, now)
	default:
		prior = old.entry
		if old.rec.Site.ID != rec.Site.ID {
			changes = refLocked(x.poolRefs, rec.Site.ID, x.rebuildSiteLocked, changes, now)
			changes = derefLocked(x.poolRefs, old.rec.Site.ID, x.rebuildSiteLocked, changes, now)
		}
		if old.rec.Type.ID != rec.Type.ID {
			changes = refLocked(x.typeRefs, rec.Type.ID, x.rebuildTypeLocked, changes, now)
			changes = derefLocked(x.typeRefs, old.rec.Type.ID, x.rebuildTypeLocked, changes, now)
		}
	}
	return append(changes, Change{Kind: KindResource, ID: entry.ID, Prior: prior, Post: entry, At: now})
}

func (x *index) removeLocked(id int32, changes []Change) []Change {
	old, ok := x.devices[id]
	if !ok {
		return changes
	}
	now := x.now()
	delete(x.devices, id)
	delete(x.byResource, old.entry.ID)
	x.trackFreeLocked(&old.rec, nil, true)
	x.rev++
	changes = append(changes, Change{Kind: KindResource, ID: old.entry.ID, Prior: old.entry, At: now})
	changes = derefLocked(x.poolRefs, old.rec.Site.ID, x.rebuildSiteLocked, changes, now)
	return derefLocked(x.typeRefs, old.rec.Type.ID, x.rebuildTypeLocked, changes, now)
}

// refLocked counts a device in its site (refs = poolRefs, rebuild = rebuildSiteLocked) or its type
// (typeRefs, rebuildTypeLocked): the first makes the pool (and O-Cloud site) or the type appear.
func refLocked(refs map[int32]int, id int32, rebuild rebuilder, changes []Change, now time.Time) []Change {
	refs[id]++
	if refs[id] == 1 {
		changes = rebuild(id, changes, now)
	}
	return changes
}

// derefLocked is refLocked's inverse: the last device leaving makes the pool or the type disappear.
func derefLocked(refs map[int32]int, id int32, rebuild rebuilder, changes []Change, now time.Time) []Change {
	refs[id]--
	if refs[id] <= 0 {
		delete(refs, id)
		changes = rebuild(id, changes, now)
	}
	return changes
}

// rebuilder brings one derived object (a pool, a resource type) in line with its NetBox source.
type rebuilder func(id int32, changes []Change, now time.Time) []Change

// rebuildSiteLocked brings the pool and O-Cloud site of a NetBox site in line with its details and
// whether any pool device is there, and records the pool's change (O-Cloud sites have no
// notifications in the reference).
func (x *index) rebuildSiteLocked(site int32, changes []Change, now time.Time) []Change {
	prior := x.pools[site]
	var post *Entry
	if x.poolRefs[site] > 0 {
		d := x.sites[site].site
		post = x.cfg.poolEntry(&d)
		x.pools[site] = post
		x.ocSites[site] = x.cfg.siteEntry(&d)
		x.byPool[post.ID] = site
		x.bySite[x.cfg.SiteID(site)] = site
	} else {
		delete(x.pools, site)
		delete(x.ocSites, site)
		delete(x.byPool, x.cfg.ResourcePoolID(site))
		delete(x.bySite, x.cfg.SiteID(site))
	}
	return x.appendChangeLocked(changes, Change{Kind: KindResourcePool, ID: x.cfg.ResourcePoolID(site), Prior: prior, Post: post, At: now})
}

func (x *index) rebuildTypeLocked(typ int32, changes []Change, now time.Time) []Change {
	prior := x.rtypes[typ]
	var post *Entry
	if x.typeRefs[typ] > 0 {
		d := x.types[typ].t
		post = x.cfg.typeEntry(&d)
		x.rtypes[typ] = post
		x.byType[post.ID] = typ
	} else {
		delete(x.rtypes, typ)
		delete(x.byType, x.cfg.ResourceTypeID(typ))
	}
	return x.appendChangeLocked(changes, Change{Kind: KindResourceType, ID: x.cfg.ResourceTypeID(typ), Prior: prior, Post: post, At: now})
}

// appendChangeLocked records c (and moves the revision) unless nothing changed: both states absent, or
// the same JSON.
func (x *index) appendChangeLocked(changes []Change, c Change) []Change {
	switch {
	case c.Prior == nil && c.Post == nil:
		return changes
	case c.Prior != nil && c.Post != nil && bytes.Equal(c.Prior.JSON, c.Post.JSON):
		return changes
	}
	x.rev++
	return append(changes, c)
}

func (x *index) objectsLocked() map[string]Change {
	out := make(map[string]Change, len(x.devices)+len(x.pools)+len(x.rtypes))
	for _, d := range x.devices {
		out[d.entry.ID] = Change{Kind: KindResource, ID: d.entry.ID, Post: d.entry}
	}
	for _, e := range x.pools {
		out[e.ID] = Change{Kind: KindResourcePool, ID: e.ID, Post: e}
	}
	for _, e := range x.rtypes {
		out[e.ID] = Change{Kind: KindResourceType, ID: e.ID, Post: e}
	}
	return out
}
