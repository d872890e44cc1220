package inventory

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/o2ims-operator/o2ims-operator/netbox"
	"github.com/o2ims-operator/o2ims-operator/tests/promtest"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
)

const simToken = "0123456789abcdef0123456789abcdef01234567"

type fixture struct {
	sim  *netboxsim.Server
	nb   *netbox.Client
	view *View
	ref  *Refresher
	cfg  Config
	reg  *prometheus.Registry

	mu      sync.Mutex
	changes []Change
}

func newFixture(t *testing.T, devices int) *fixture {
	t.Helper()
	sim := netboxsim.New(netboxsim.Options{Tokens: []string{simToken}})
	for _, f := range netboxsim.StandardFields() {
		sim.AddCustomField(f)
	}
	sim.AddCustomField(netboxsim.CustomField{Name: "cpu_cores", Type: netboxsim.TypeInteger, FilterLogic: netboxsim.FilterExact})
	for i := 0; i < devices; i++ {
		site := "North"
		if i%2 == 1 {
			site = "South"
		}
		sim.AddDevice(netboxsim.Device{Site: site, Custom: map[string]any{"o2ims_managed": true, "cpu_cores": int64(16)}})
	}
	ts := sim.Start()
	t.Cleanup(sim.Close)
	tok := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tok, []byte(simToken), 0o600))
	// A generous attempt timeout: the tests count NetBox calls, and a 1000-device page rendered on a loaded
	// machine under -race can outlive a short one and be retried (one call more).
	nb, err := netbox.New(netbox.Config{URL: ts.URL, TokenFile: tok, AllowHTTP: true, Timeout: 30 * time.Second}, nil, nil)
	require.NoError(t, err)
	cfg, err := ConfigFromEnv(func(string) string { return "" }, ts.URL)
	require.NoError(t, err)
	f := &fixture{sim: sim, nb: nb, cfg: cfg, reg: prometheus.NewRegistry()}
	f.view = NewView(cfg, nil)
	f.view.OnChange(func(cs []Change) {
		f.mu.Lock()
		f.changes = append(f.changes, cs...)
		f.mu.Unlock()
	})
	nb.Claims.ObserveWrites(f.view.Written)
	f.ref, err = NewRefresher(f.view, nb.Search, nil, f.reg)
	require.NoError(t, err)
	return f
}

func (f *fixture) takeChanges() []Change {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.changes
	f.changes = nil
	return out
}

func (f *fixture) resource(t *testing.T, id int32) map[string]any {
	t.Helper()
	f.view.mu.RLock()
	defer f.view.mu.RUnlock()
	d, ok := f.view.devices[id]
	if !ok {
		return nil
	}
	return d.entry.Attrs
}

func kinds(cs []Change) []string {
	var out []string
	for _, c := range cs {
		op := "modify"
		switch {
		case c.Prior == nil:
			op = "create"
		case c.Post == nil:
			op = "delete"
		}
		out = append(out, string(c.Kind)+" "+op)
	}
	return out
}

func TestFirstFullRefreshCreatesPoolsTypesThenResources(t *testing.T) {
	f := newFixture(t, 3)
	require.NoError(t, f.ref.Refresh(context.Background(), true))
	synced, last := f.view.Synced()
	require.True(t, synced)
	require.False(t, last.IsZero())
	cs := f.takeChanges()
	require.Equal(t, []string{"resourcePool create", "resourceType create", "resource create", "resourcePool create", "resource create", "resource create"}, kinds(cs),
		"a pool and type exist before the resource that names them")
	n, p, ty := f.view.Counts()
	require.Equal(t, []int{3, 2, 1}, []int{n, p, ty})
	// Nothing changed: another full refresh reports nothing.
	require.NoError(t, f.ref.Refresh(context.Background(), true))
	require.Empty(t, f.takeChanges())
}

// What an administrator changes in NetBox shows on the next changes-only refresh, which lists only
// what changed (three calls of one page each); a deletion shows on the next full one.
func TestChangesOnlyRefreshSeesAdministratorsEdits(t *testing.T) {
	f := newFixture(t, 4)
	ctx := context.Background()
	require.NoError(t, f.ref.Refresh(ctx, true))
	f.takeChanges()

	require.NoError(t, f.sim.SetStatus(1, "failed"))
	require.NoError(t, f.sim.SetCustom(2, "cpu_cores", int64(64)))
	require.NoError(t, f.sim.SetCustom(3, "o2ims_managed", false)) // leaves the pool
	newID := f.sim.AddDevice(netboxsim.Device{Site: "East", Custom: map[string]any{"o2ims_managed": true}})
	require.NoError(t, f.sim.SetSiteDescription(f.sim.Sites()[0].ID, "north hall"))
	require.True(t, f.sim.DeleteDevice(4))
	before := f.sim.Calls(http.MethodGet, netboxsim.RouteDevices)
	require.NoError(t, f.ref.Refresh(ctx, false))
	require.Equal(t, before+1, f.sim.Calls(http.MethodGet, netboxsim.RouteDevices), "one page of changed devices")

	require.Equal(t, "failed", f.resource(t, 1)["extensions"].(map[string]any)["status"])
	require.EqualValues(t, 64, f.resource(t, 2)["extensions"].(map[string]any)["capabilities"].(map[string]any)["cpu_cores"])
	require.Nil(t, f.resource(t, 3), "left the pool")
	require.NotNil(t, f.resource(t, newID))
	require.NotNil(t, f.resource(t, 4), "a deletion is not seen by a changes-only listing")
	pool, _ := f.view.Pool(f.cfg.ResourcePoolID(f.sim.Sites()[0].ID))
	require.Equal(t, "north hall", pool.Attrs["description"])
	got := kinds(f.takeChanges())
	sort.Strings(got)
	require.Equal(t, []string{"resource create", "resource delete", "resource modify", "resource modify", "resourcePool create", "resourcePool modify"}, got)

	require.NoError(t, f.ref.Refresh(ctx, true))
	require.Nil(t, f.resource(t, 4), "the full listing notices the deletion")
	require.Equal(t, []string{"resource delete"}, kinds(f.takeChanges()))
}

// NetBox down: refreshes fail, the view keeps answering what it last saw, and its age grows.
func TestNetBoxDownKeepsTheLastView(t *testing.T) {
	f := newFixture(t, 2)
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Now())
	f.view.clock = clk
	require.NoError(t, f.ref.Refresh(ctx, true))
	f.sim.InjectFault(netboxsim.Fault{Method: http.MethodGet, Route: netboxsim.RouteSites, Status: 503, Count: 100})
	clk.Step(time.Minute)
	require.Error(t, f.ref.Refresh(ctx, false))
	require.NotNil(t, f.resource(t, 1))
	_, last := f.view.Synced()
	require.Equal(t, time.Minute, clk.Since(last))
	got := promtest.Gather(t, f.reg)
	stamp, ok := got.Value("o2ims_inventory_view_last_refresh_timestamp_seconds", nil)
	require.True(t, ok, "no metric o2ims_inventory_view_last_refresh_timestamp_seconds")
	require.InDelta(t, float64(last.UnixNano())/1e9, stamp, 0.001, "when NetBox last answered, not when it was asked")
	age, ok := got.Value("o2ims_inventory_view_age_seconds", nil)
	require.True(t, ok, "the deprecated o2ims_inventory_view_age_seconds is kept this release")
	require.InDelta(t, 60, age, 0.001)
	probe, err := f.view.Probe(ctx)
	require.NoError(t, err, "NetBox down is no reason to fail liveness")
	require.InDelta(t, 60, probe.(map[string]any)["ageSeconds"], 0.001)
	require.EqualValues(t, 1, testutil.ToFloat64(f.ref.runs.WithLabelValues("changes", "error")))
}

// Before NetBox has ever answered there is no timestamp (no sentinel value standing for "never"); the
// first answer sets it.
func TestLastRefreshTimestampIsAbsentUntilNetBoxAnswers(t *testing.T) {
	f := newFixture(t, 1)
	_, ok := promtest.Gather(t, f.reg).Value("o2ims_inventory_view_last_refresh_timestamp_seconds", nil)
	require.False(t, ok, "a timestamp before any answer")
	require.NoError(t, f.ref.Refresh(context.Background(), true))
	_, last := f.view.Synced()
	stamp, ok := promtest.Gather(t, f.reg).Value("o2ims_inventory_view_last_refresh_timestamp_seconds", nil)
	require.True(t, ok)
	require.InDelta(t, float64(last.UnixNano())/1e9, stamp, 0.001)
}

// A listing that started before one of the operator's own writes must not undo it in the view.
func TestAnOlderRowNeverOverwritesAnOwnWrite(t *testing.T) {
	f := newFixture(t, 1)
	ctx := context.Background()
	require.NoError(t, f.ref.Refresh(ctx, true))
	stale, err := f.nb.Search.ListInventoryDevices(ctx, time.Time{}, true)
	require.NoError(t, err)
	d, err := f.nb.Claims.GetDevice(ctx, 1)
	require.NoError(t, err)
	_, err = f.nb.Claims.Claim(ctx, d, "0b7a1f6e-0000-4000-8000-000000000001")
	require.NoError(t, err)
	require.Equal(t, "active", f.resource(t, 1)["extensions"].(map[string]any)["status"], "shown at once")
	f.view.applyDevices(stale, true)
	require.Equal(t, "active", f.resource(t, 1)["extensions"].(map[string]any)["status"])
}

// The staleness bound, measured: with RefreshInterval R, an administrator's change shows within R plus
// one changes-only listing. The test logs what it saw (it asserts only a generous bound: the machine
// is shared).
func TestStalenessOfAnAdministratorsChange(t *testing.T) {
	f := newFixture(t, 200)
	f.view.cfg.RefreshInterval = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = f.ref.Start(ctx) }()
	require.Eventually(t, func() bool { s, _ := f.view.Synced(); return s }, 30*time.Second, 10*time.Millisecond)
	var lags []time.Duration
	for i := 0; i < 10; i++ {
		id := int32(1 + i)
		start := time.Now()
		require.NoError(t, f.sim.SetStatus(id, "failed"))
		require.Eventually(t, func() bool {
			r := f.resource(t, id)
			return r != nil && r["extensions"].(map[string]any)["status"] == "failed"
		}, 30*time.Second, time.Millisecond)
		lags = append(lags, time.Since(start))
		time.Sleep(time.Duration(i*37%200) * time.Millisecond) // changes land at any point of the interval
	}
	slices.Sort(lags)
	t.Logf("staleness with RefreshInterval=200ms over 200 devices: p50 %v, max %v", lags[len(lags)/2], lags[len(lags)-1])
}

// What the background refresh costs: an idle changes-only refresh is exactly one call per collection
// (devices, sites, device types), so the default 10 s interval is 18 NetBox calls per minute; a full
// listing of N devices is ceil(N/1000) device pages plus one page each of sites and types.
func TestRefreshCallsPerMinute(t *testing.T) {
	f := newFixture(t, 1500)
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Now())
	f.view.clock = clk
	total := func() int {
		return f.sim.Calls(http.MethodGet, netboxsim.RouteDevices) + f.sim.Calls(http.MethodGet, netboxsim.RouteSites) +
			f.sim.Calls(http.MethodGet, netboxsim.RouteDeviceTypes)
	}
	require.NoError(t, f.ref.Refresh(ctx, true))
	require.Equal(t, 2+2, total(), "1500 devices: 2 pages, and one page each of sites and types")
	// The first changes-only refreshes re-read the last seconds before the newest stamp (a row stamped
	// then may still have been committing); once settled, only what is newer.
	for i := 0; i < 3; i++ {
		clk.Step(DefaultRefreshInterval)
		require.NoError(t, f.ref.Refresh(ctx, false))
	}
	before := total()
	for i := 0; i < 6; i++ {
		clk.Step(DefaultRefreshInterval)
		require.NoError(t, f.ref.Refresh(ctx, false))
	}
	perRefresh := (total() - before) / 6
	require.Equal(t, 3, perRefresh)
	t.Logf("idle changes-only refresh: %d calls; at the default %s interval %d calls per minute", perRefresh,
		DefaultRefreshInterval, perRefresh*int(time.Minute/DefaultRefreshInterval))

	// A change after settling is still seen.
	require.NoError(t, f.sim.SetStatus(7, "failed"))
	require.NoError(t, f.ref.Refresh(ctx, false))
	require.Equal(t, "failed", f.resource(t, 7)["extensions"].(map[string]any)["status"])
}
