package inventory

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/o2ims-operator/o2ims-operator/netbox"
)

// Source is what the refresh reads: the NetBox client's inventory listings.
type Source interface {
	ListInventoryDevices(ctx context.Context, since time.Time, poolOnly bool) ([]netbox.InventoryDevice, error)
	ListInventorySites(ctx context.Context, since time.Time) ([]netbox.InventorySite, error)
	ListInventoryDeviceTypes(ctx context.Context, since time.Time) ([]netbox.InventoryDeviceType, error)
}

// Refresher keeps a View current from NetBox: one full listing at start and every ResyncInterval
// (the only way to notice a device deleted in NetBox), and in between, every RefreshInterval, only
// what changed — devices, sites and device types whose last_updated is at or after the newest one
// seen less a few seconds of overlap, and once that has settled, after it (see mark). An idle NetBox
// costs three calls per interval.
//
// Staleness: a change made in NetBox by someone else shows within RefreshInterval plus one listing's
// duration; a deletion within ResyncInterval plus one full listing. The operator's own writes show at
// once (View.Written). While NetBox does not answer, the view keeps answering what it last saw, and
// when NetBox last answered is exported (o2ims_inventory_view_last_refresh_timestamp_seconds, and the
// "inventory" probe's age).
type Refresher struct {
	view *View
	src  Source
	log  *zap.Logger
	kick chan struct{}

	runs *prometheus.CounterVec

	devices, sites, types mark

	mu           sync.Mutex
	failing      error     // the last refresh's error; nil once one succeeds
	failingSince time.Time // when the refreshes began to fail
}

// mark is the newest last_updated seen in a collection (NetBox's clock), when it moved (ours), and
// whether a listing that started at least overlap after that has completed: from then on no row
// stamped at or before the mark can still be committing, and listings ask only for rows after it
// (otherwise an idle NetBox would re-list the rows of its last busy seconds forever).
type mark struct {
	at      time.Time
	movedAt time.Time
	settled bool
}

func (m *mark) since(full bool) time.Time {
	switch {
	case full || m.at.IsZero():
		return time.Time{}
	case m.settled:
		return m.at.Add(time.Microsecond) // NetBox stamps to the microsecond
	}
	return m.at.Add(-overlap)
}

// advance records a listing that started at started and saw rows stamped up to newest.
func (m *mark) advance(newest, started, now time.Time) {
	if newest.After(m.at) {
		m.at, m.movedAt, m.settled = newest, now, false
		return
	}
	if !m.settled && !started.Before(m.movedAt.Add(overlap)) {
		m.settled = true
	}
}

// NewRefresher builds the refresher and registers its metrics on reg (nil: not registered).
func NewRefresher(view *View, src Source, log *zap.Logger, reg prometheus.Registerer) (*Refresher, error) {
	if log == nil {
		log = zap.NewNop()
	}
	r := &Refresher{
		view: view, src: src, log: log, kick: make(chan struct{}, 1),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "o2ims_inventory_refreshes_total",
			Help: "Refreshes of the inventory view from NetBox, by kind (full, changes) and result (success, error).",
		}, []string{"kind", "result"}),
	}
	// Deprecated for o2ims_inventory_view_last_refresh_timestamp_seconds (lastrefresh.go), which has no
	// sentinel; kept this release because the shipped dashboard read it (docs/operations.md).
	age := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "o2ims_inventory_view_age_seconds",
		Help: "DEPRECATED, removed in the next release: use time() - o2ims_inventory_view_last_refresh_timestamp_seconds. Seconds since NetBox last answered a refresh of the inventory view (-1 before the first).",
	}, func() float64 {
		_, last := view.Synced()
		if last.IsZero() {
			return -1
		}
		return view.clock.Since(last).Seconds()
	})
	objects := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "o2ims_inventory_resources",
		Help: "Resources (pool devices) in the inventory view.",
	}, func() float64 { n, _, _ := view.Counts(); return float64(n) })
	if reg != nil {
		for _, c := range []prometheus.Collector{r.runs, age, lastRefreshCollector{view}, objects} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return r, nil
}

// Kick asks for a changes-only refresh now (e.g. after a write whose answer could not be read).
func (r *Refresher) Kick() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// NeedLeaderElection: every replica keeps its view (each serves the inventory API).
func (r *Refresher) NeedLeaderElection() bool { return false }

// Start refreshes until ctx ends, then returns nil. A failed refresh is retried at the next interval;
// the view keeps what it has.
func (r *Refresher) Start(ctx context.Context) error {
	cfg := r.view.cfg
	nextFull := time.Time{}
	for {
		start := r.view.clock.Now()
		full := !start.Before(nextFull)
		if err := r.Refresh(ctx, full); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			r.log.Warn("refreshing the inventory from NetBox failed; answering the last view", zap.Bool("full", full), zap.Error(err))
		} else if full {
			nextFull = start.Add(cfg.ResyncInterval)
		}
		t := r.view.clock.NewTimer(cfg.RefreshInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-r.kick:
			t.Stop()
		case <-t.C():
		}
	}
}

// Refresh makes one refresh: full lists every site, device type and pool device; otherwise only what
// changed since the marks.
func (r *Refresher) Refresh(ctx context.Context, full bool) error {
	kind := "changes"
	if full {
		kind = "full"
	}
	err := r.refresh(ctx, full)
	result := "success"
	if err != nil {
		result = "error"
	}
	r.runs.WithLabelValues(kind, result).Inc()
	if ctx.Err() == nil {
		r.mu.Lock()
		if err != nil && r.failing == nil {
			r.failingSince = r.view.clock.Now()
		}
		r.failing = err
		r.mu.Unlock()
	}
	return err
}

// maxDegraded bounds the NetBox error quoted in the /readyz line.
const maxDegraded = 300

// Degraded says why the inventory cannot list NetBox ("" while its last refresh succeeded, or failed
// because NetBox is down: that is the NetBox client's line): the
// operator's /readyz line "degraded: inventory: …" (framework OnDegraded). A token without read access to
// sites or device types, for one, fails every refresh while claims still work; the inventory API then
// answers its last view, or 503 before the first, and the provisioning API still answers the resource
// ids (computed, never looked up), which resolve only once a refresh succeeds.
func (r *Refresher) Degraded() string {
	r.mu.Lock()
	err, since := r.failing, r.failingSince
	r.mu.Unlock()
	if err == nil || netbox.IsOutage(err) {
		// NetBox being down is NetBox's own line (netbox.Gate.Degraded): said once, not twice.
		return ""
	}
	answer := "the inventory API answers 503 until one succeeds (no view yet)"
	if synced, last := r.view.Synced(); synced {
		answer = "the inventory API answers its view of " + last.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("cannot list NetBox since %s: %s; %s", since.UTC().Format(time.RFC3339),
		netbox.SanitizeMessage(err.Error(), maxDegraded), answer)
}

func (r *Refresher) refresh(ctx context.Context, full bool) error {
	at := r.view.clock.Now()
	sites, err := r.src.ListInventorySites(ctx, r.sites.since(full))
	if err != nil {
		return fmt.Errorf("listing sites: %w", err)
	}
	types, err := r.src.ListInventoryDeviceTypes(ctx, r.types.since(full))
	if err != nil {
		return fmt.Errorf("listing device types: %w", err)
	}
	devs, err := r.src.ListInventoryDevices(ctx, r.devices.since(full), full)
	if err != nil {
		return fmt.Errorf("listing devices: %w", err)
	}
	// Details first, so that pools and types created by the devices carry them.
	r.view.applySites(sites)
	r.view.applyTypes(types)
	r.view.applyDevices(devs, full)
	now := r.view.clock.Now()
	var newest time.Time
	for _, s := range sites {
		newest = later(newest, s.LastUpdated)
	}
	r.sites.advance(newest, at, now)
	newest = time.Time{}
	for _, t := range types {
		newest = later(newest, t.LastUpdated)
	}
	r.types.advance(newest, at, now)
	newest = time.Time{}
	for _, d := range devs {
		newest = later(newest, d.LastUpdated)
	}
	r.devices.advance(newest, at, now)
	r.view.refreshed(full, at)
	if ce := r.log.Check(zap.DebugLevel, "inventory refreshed"); ce != nil {
		ce.Write(zap.Bool("full", full), zap.Int("devices", len(devs)), zap.Int("sites", len(sites)), zap.Int("types", len(types)))
	}
	return nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Probe reports the view's state for the liveness JSON; it never fails, since NetBox being down is
// no reason to restart the operator (the view keeps answering).
func (v *View) Probe(context.Context) (any, error) {
	synced, last := v.Synced()
	out := map[string]any{"synced": synced}
	if !last.IsZero() {
		out["lastRefresh"] = last.UTC().Format(time.RFC3339Nano)
		out["ageSeconds"] = v.clock.Since(last).Seconds()
	}
	n, p, t := v.Counts()
	out["resources"], out["resourcePools"], out["resourceTypes"] = n, p, t
	return out, nil
}
