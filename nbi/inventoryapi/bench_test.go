package inventoryapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/o2ims-operator/o2ims-operator/inventory"
	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/provisioning"
	"github.com/o2ims-operator/o2ims-operator/netbox"
	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
)

// benchInventory is a server whose inventory view holds 10 000 pool devices in 10 sites, read from
// the NetBox simulator through the real client (one full listing: 10 pages of 1000). The simulator
// counts calls, so the benchmarks also prove that a GET costs none.
func benchInventory(b *testing.B) (http.Handler, *netboxsim.Server, inventory.Config) {
	b.Helper()
	sim := netboxsim.New(netboxsim.Options{Tokens: []string{invToken}})
	for _, f := range netboxsim.StandardFields() {
		sim.AddCustomField(f)
	}
	sim.AddCustomField(netboxsim.CustomField{Name: "cpu_cores", Type: netboxsim.TypeInteger, FilterLogic: netboxsim.FilterExact})
	for i := 0; i < 10000; i++ {
		sim.AddDevice(netboxsim.Device{Name: fmt.Sprintf("host-%05d", i), Site: fmt.Sprintf("site-%d", i%10),
			Serial: fmt.Sprintf("SN%05d", i), Tags: []string{"edge"},
			Custom: map[string]any{"o2ims_managed": true, "cpu_cores": int64(16 << (i % 3))}})
	}
	ts := sim.Start()
	b.Cleanup(sim.Close)
	tok := filepath.Join(b.TempDir(), "token")
	if err := os.WriteFile(tok, []byte(invToken), 0o600); err != nil {
		b.Fatal(err)
	}
	nb, err := netbox.New(netbox.Config{URL: ts.URL, TokenFile: tok, AllowHTTP: true, Timeout: 30 * time.Second}, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := inventory.ConfigFromEnv(func(string) string { return "" }, ts.URL)
	if err != nil {
		b.Fatal(err)
	}
	view := inventory.NewView(cfg, nil)
	r, err := inventory.NewRefresher(view, nb.Search, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := r.Refresh(context.Background(), true); err != nil {
		b.Fatal(err)
	}
	if n, _, _ := view.Counts(); n != 10000 {
		b.Fatalf("view holds %d devices", n)
	}
	store := nbitest.NewMemStore()
	inv := New(view, NewDeploymentManagers(view.Config(), store, nil), nil, nil)
	prov, err := provisioning.New(store, nil, inv.ResourceIDs)
	if err != nil {
		b.Fatal(err)
	}
	srv, err := nbi.New(nbi.Config{}, nil, nil, nil, prov, inv)
	if err != nil {
		b.Fatal(err)
	}
	return srv.Handler(), sim, cfg
}

// timed runs one GET per iteration and reports its p99 and p50 (what the issue bounds) beside ns/op,
// and fails if any GET reached NetBox.
func timed(b *testing.B, h http.Handler, sim *netboxsim.Server, path func(i int) string) {
	calls := sim.Calls(http.MethodGet, netboxsim.RouteDevices) + sim.Calls(http.MethodGet, netboxsim.RouteDevice)
	var lat []time.Duration
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path(i), nil))
		lat = append(lat, time.Since(start))
		if rec.Code != http.StatusOK {
			b.Fatalf("%s: %d %s", path(i), rec.Code, rec.Body)
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	if got := sim.Calls(http.MethodGet, netboxsim.RouteDevices) + sim.Calls(http.MethodGet, netboxsim.RouteDevice); got != calls {
		b.Fatalf("%d NetBox calls during the GETs", got-calls)
	}
}

// BenchmarkInventoryGetResource: a named resource GET over 10 000 (the issue bounds p99 < 2 ms).
func BenchmarkInventoryGetResource(b *testing.B) {
	h, sim, cfg := benchInventory(b)
	timed(b, h, sim, func(i int) string {
		dev := int32(1 + (i*7919)%10000)
		site := int32(1 + (dev-1)%10)
		return fmt.Sprintf("%s/resourcePools/%s/resources/%s", invV1, cfg.ResourcePoolID(site), cfg.ResourceID(dev))
	})
}

// BenchmarkInventoryListResources: the first page (1000) of a pool's resources (p99 < 50 ms).
func BenchmarkInventoryListResources(b *testing.B) {
	h, sim, cfg := benchInventory(b)
	timed(b, h, sim, func(i int) string {
		return fmt.Sprintf("%s/resourcePools/%s/resources", invV1, cfg.ResourcePoolID(int32(1+i%10)))
	})
}

// BenchmarkInventoryListResourcesFiltered: a filtered first page, every resource of the pool decided.
func BenchmarkInventoryListResourcesFiltered(b *testing.B) {
	h, sim, cfg := benchInventory(b)
	timed(b, h, sim, func(i int) string {
		return fmt.Sprintf("%s/resourcePools/%s/resources?filter=(eq,extensions/capabilities/cpu_cores,64)", invV1, cfg.ResourcePoolID(int32(1+i%10)))
	})
}
