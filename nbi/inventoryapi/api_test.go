package inventoryapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/o2ims-operator/o2ims-operator/inventory"
	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/provisioning"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
	"github.com/o2ims-operator/o2ims-operator/netbox"
	"github.com/o2ims-operator/o2ims-operator/subscriptions"
	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
)

const invV1 = Root + "/v1"

// invEnv is the northbound API with the inventory enabled, on a real listener, over a NetBox
// simulator (through the real NetBox client) and the shared real API server.
type invEnv struct {
	*nbitest.Env
	api       *API
	sim       *netboxsim.Server
	nb        *netbox.Client
	view      *inventory.View
	refresher *inventory.Refresher
	cfg       inventory.Config
	netboxURL string

	mu       sync.Mutex
	clusters map[string]*unstructured.Unstructured
}

const invToken = "0123456789abcdef0123456789abcdef01234567"

// newInvEnv starts a simulator with the standard fields and a cpu_cores capability, the view (one
// full refresh done) and the server. seed adds devices before the first refresh.
func newInvEnv(t *testing.T, seed func(*netboxsim.Server), tweak ...func(*nbi.Config)) *invEnv {
	t.Helper()
	return startInvEnv(t, seed, nil, tweak...)
}

// startInvEnv is newInvEnv serving the subscriptions subs makes (nil: none), after the view's first
// refresh and before the server starts.
func startInvEnv(t *testing.T, seed func(*netboxsim.Server), subs func(*invEnv) *subscriptions.SubscriptionStore, tweak ...func(*nbi.Config)) *invEnv {
	t.Helper()
	sim := netboxsim.New(netboxsim.Options{Tokens: []string{invToken}})
	for _, f := range netboxsim.StandardFields() {
		sim.AddCustomField(f)
	}
	sim.AddCustomField(netboxsim.CustomField{Name: "cpu_cores", Type: netboxsim.TypeInteger, FilterLogic: netboxsim.FilterExact})
	if seed != nil {
		seed(sim)
	}
	ts := sim.Start()
	t.Cleanup(sim.Close)
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(invToken), 0o600))
	nb, err := netbox.New(netbox.Config{URL: ts.URL, TokenFile: tokenFile, AllowHTTP: true, Timeout: 5 * time.Second}, nil, nil)
	require.NoError(t, err)

	ie := &invEnv{sim: sim, nb: nb, netboxURL: ts.URL, clusters: map[string]*unstructured.Unstructured{}}
	ie.cfg, err = inventory.ConfigFromEnv(func(string) string { return "" }, ts.URL)
	require.NoError(t, err)

	e := nbitest.Prepare(t)
	owner := func(uid string) string {
		objs, _ := e.Store.List()
		for _, o := range objs {
			if string(o.GetUID()) == uid {
				return o.GetName()
			}
		}
		return ""
	}
	ie.view = inventory.NewView(ie.cfg, owner)
	nb.Claims.ObserveWrites(ie.view.Written)
	ie.refresher, err = inventory.NewRefresher(ie.view, nb.Search, nil, nil)
	require.NoError(t, err)
	require.NoError(t, ie.refresher.Refresh(context.Background(), true))

	ie.Env = e
	var store *subscriptions.SubscriptionStore
	if subs != nil {
		store = subs(ie)
	}
	ie.api = New(ie.view, NewDeploymentManagers(ie.view.Config(), e.Store, ie.cluster), store, nil)
	prov, err := provisioning.New(e.Store, dynamic.NewForConfigOrDie(e.Kapi.AdminConfig()), ie.api.ResourceIDs)
	require.NoError(t, err)
	e.Serve(nil, zap.NewNop(), []nbi.API{prov, ie.api}, tweak...)
	return ie
}

// simCalls counts every request that reached the NetBox simulator.
func (ie *invEnv) simCalls() int {
	n := 0
	for _, route := range []string{netboxsim.RouteStatus, netboxsim.RouteCustomFields, netboxsim.RouteDevices,
		netboxsim.RouteDevice, netboxsim.RouteSites, netboxsim.RouteDeviceTypes} {
		n += ie.sim.Calls(http.MethodGet, route)
	}
	return n
}

func (ie *invEnv) cluster(name string) (*unstructured.Unstructured, bool, error) {
	ie.mu.Lock()
	defer ie.mu.Unlock()
	c, ok := ie.clusters[name]
	return c, ok, nil
}

// get sends a request to the inventory API and checks it against the inventory reference.
func (ie *invEnv) get(path string, headers ...string) *nbitest.Exchange {
	ie.T.Helper()
	return ie.send(http.MethodGet, path, nil, headers...)
}

func (ie *invEnv) send(method, path string, body []byte, headers ...string) *nbitest.Exchange {
	ie.T.Helper()
	t := ie.T
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, ie.Base+path, rd)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", query.MediaJSON)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := ie.Client.Do(req)
	require.NoError(t, err)
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	x := &nbitest.Exchange{Req: req, Resp: resp, Body: data}
	nbitest.CheckInventoryAgainstReference(t, x, body)
	return x
}

func idsOf(items []map[string]any, key string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it[key].(string)
	}
	return out
}

// seedSix: two sites, two device types, six pool devices, one device outside the pool.
func seedSix(s *netboxsim.Server) {
	s.AddSite(netboxsim.Site{Name: "North", Description: "north hall"})
	s.AddSite(netboxsim.Site{Name: "South"})
	s.AddDeviceType(netboxsim.DeviceType{Model: "R760", Manufacturer: "Dell", PartNumber: "PN-1", Description: "2U compute"})
	s.AddDeviceType(netboxsim.DeviceType{Model: "XE9680", Manufacturer: "Dell"})
	for i := 1; i <= 6; i++ {
		site, model := "North", "R760"
		if i > 4 {
			site, model = "South", "XE9680"
		}
		s.AddDevice(netboxsim.Device{Name: fmt.Sprintf("host-%d", i), Site: site, Model: model,
			Serial: fmt.Sprintf("SN%d", i), Tags: []string{"edge"},
			Custom: map[string]any{"o2ims_managed": true, "cpu_cores": int64(16 * (1 + i%2)),
				"o2ims_bmc_address": fmt.Sprintf("redfish://10.0.0.%d/redfish/v1/Systems/1", i), "o2ims_boot_mac": "aa:bb:cc:dd:ee:0" + fmt.Sprint(i)}})
	}
	s.AddDevice(netboxsim.Device{Name: "not-ours", Site: "North", Custom: map[string]any{"o2ims_managed": false}})
}

func TestInventoryRoutesAnswerTheNetBoxPoolAsTheReferenceDescribes(t *testing.T) {
	ie := newInvEnv(t, seedSix)
	cfg := ie.cfg
	calls := ie.simCalls()
	defer func() { require.Equal(t, calls, ie.simCalls(), "no NetBox call for any inventory GET") }()

	x := ie.get(invV1 + "/api_versions")
	require.Equal(t, http.StatusOK, x.Code())
	require.JSONEq(t, `{"uriPrefix":"/o2ims-infrastructureInventory/v1","apiVersions":[{"version":"1.0.0"},{"version":"1.1.0"},{"version":"1.2.0"}]}`, string(x.Body))
	for _, p := range []string{Root + "/api_versions", Root + "/v2/api_versions"} {
		x := ie.get(p)
		require.Equal(t, http.StatusOK, x.Code())
		require.JSONEq(t, `{"uriPrefix":"/o2ims-infrastructureInventory/v2","apiVersions":[{"version":"2.0.0"}]}`, string(x.Body))
	}
	x = ie.get(invV1)
	require.Equal(t, http.StatusOK, x.Code(), string(x.Body))
	info := x.Object(t)
	require.Equal(t, cfg.OCloudID.String(), info["oCloudId"])
	require.Equal(t, "00000000-0000-0000-0000-000000000000", info["globalCloudId"])
	require.Equal(t, inventory.DefaultName, info["name"])
	require.Equal(t, ie.Base, info["serviceUri"])

	// Two pools: the sites holding pool devices.
	x = ie.get(invV1 + "/resourcePools")
	require.Equal(t, http.StatusOK, x.Code())
	pools := x.Items(t)
	require.Len(t, pools, 2)
	byName := map[string]map[string]any{}
	for _, p := range pools {
		byName[p["name"].(string)] = p
	}
	north, south := byName["North"], byName["South"]
	require.Equal(t, "north hall", north["description"])
	ids := idsOf(pools, "resourcePoolId")
	require.True(t, sort.StringsAreSorted(ids), "sorted by id")

	// Two types with vendor = manufacturer.
	x = ie.get(invV1 + "/resourceTypes")
	types := x.Items(t)
	require.Len(t, types, 2)
	for _, ty := range types {
		require.Equal(t, "Dell", ty["vendor"])
		require.Equal(t, "PHYSICAL", ty["resourceKind"])
		require.Equal(t, "COMPUTE", ty["resourceClass"])
		require.Equal(t, ty["name"], ty["model"])
		x = ie.get(invV1 + "/resourceTypes/" + ty["resourceTypeId"].(string))
		require.Equal(t, http.StatusOK, x.Code())
		require.Equal(t, ty, x.Object(t))
		// Its alarm dictionary: the one its alarmDictionaryId names, with the alarms raised on a host.
		x = ie.get(invV1 + "/resourceTypes/" + ty["resourceTypeId"].(string) + "/alarmDictionary")
		require.Equal(t, http.StatusOK, x.Code(), string(x.Body))
		dict := x.Object(t)
		require.Equal(t, ty["alarmDictionaryId"], dict["alarmDictionaryId"])
		require.Equal(t, "Dell "+ty["model"].(string), dict["entityType"])
		defs := dict["alarmDefinition"].([]any)
		require.Len(t, defs, 2)
		require.Equal(t, "HostQuarantined", defs[0].(map[string]any)["alarmName"])
		require.Equal(t, "PrometheusAlertFiring", defs[1].(map[string]any)["alarmName"], "an alert may name a host")
		x = ie.get(invV1 + "/alarmDictionaries/" + ty["alarmDictionaryId"].(string))
		require.Equal(t, http.StatusOK, x.Code())
		require.Equal(t, dict, x.Object(t))
	}
	// Every dictionary: the two types', the deployment managers' and the O-Cloud infrastructure's.
	x = ie.get(invV1 + "/alarmDictionaries")
	require.Equal(t, http.StatusOK, x.Code())
	dicts := x.Items(t)
	require.Len(t, dicts, 4)
	require.True(t, sort.StringsAreSorted(idsOf(dicts, "alarmDictionaryId")), "sorted by id")
	x = ie.get(invV1 + "/alarmDictionaries?filter=" + url.QueryEscape("(eq,entityType,deploymentManager)"))
	require.Len(t, x.Items(t), 1)

	// Resources: four in North, two in South; never a BMC address or MAC.
	x = ie.get(invV1 + "/resourcePools/" + north["resourcePoolId"].(string) + "/resources")
	require.Equal(t, http.StatusOK, x.Code(), string(x.Body))
	res := x.Items(t)
	require.Len(t, res, 4)
	require.NotContains(t, string(x.Body), "redfish")
	require.NotContains(t, string(x.Body), "aa:bb")
	for _, r := range res {
		ext := r["extensions"].(map[string]any)
		id := ext["netboxId"].(string)
		require.Equal(t, cfg.ResourceID(int32(atoi(t, id))), r["resourceId"], "UUIDv5 of the O-Cloud and the device")
		require.Equal(t, "staged", ext["status"])
		require.Equal(t, "netbox-"+id, ext["hostIdentity"])
		require.Equal(t, "SN"+id, r["globalAssetId"], "the serial when there is no asset tag")
		require.Equal(t, []any{"edge"}, r["tags"])
		require.Contains(t, ext["capabilities"], "cpu_cores")
		require.NotContains(t, ext["capabilities"], "o2ims_managed")
		x = ie.get(invV1 + "/resourcePools/" + north["resourcePoolId"].(string) + "/resources/" + r["resourceId"].(string))
		require.Equal(t, http.StatusOK, x.Code())
		require.Equal(t, r, x.Object(t))
		// The wrong pool does not hold it.
		x = ie.get(invV1 + "/resourcePools/" + south["resourcePoolId"].(string) + "/resources/" + r["resourceId"].(string))
		require.Equal(t, http.StatusNotFound, x.Code())
	}

	// O-Cloud sites are the pools' sites; locations and alarm dictionaries are honestly empty.
	x = ie.get(invV1 + "/oCloudSites")
	sites := x.Items(t)
	require.Len(t, sites, 2)
	x = ie.get(invV1 + "/oCloudSites/" + north["oCloudSiteId"].(string))
	require.Equal(t, http.StatusOK, x.Code())
	require.Equal(t, []any{north["resourcePoolId"]}, x.Object(t)["resourcePools"])
	for _, p := range []string{"/locations", "/deploymentManagers"} {
		x = ie.get(invV1 + p)
		require.Equal(t, http.StatusOK, x.Code())
		require.JSONEq(t, `[]`, string(x.Body))
	}
	require.Equal(t, http.StatusNotFound, ie.get(invV1+"/locations/east").Code())
	require.Equal(t, http.StatusNotFound, ie.get(invV1+"/alarmDictionaries/"+cfg.ResourceID(1)).Code())

	// YAML on request.
	x = ie.get(invV1+"/resourcePools", "Accept", query.MediaYAML)
	require.Equal(t, query.MediaYAML, x.Resp.Header.Get("Content-Type"))
}

func atoi(t testing.TB, s string) int {
	t.Helper()
	var n int
	_, err := fmt.Sscan(s, &n)
	require.NoError(t, err)
	return n
}

func TestInventoryErrorsAreTheReferencesProblemDetails(t *testing.T) {
	ie := newInvEnv(t, seedSix)
	pool := ie.cfg.ResourcePoolID(1)
	for _, c := range []struct {
		path string
		code int
		says string
	}{
		{invV1 + "/resourcePools/not-a-uuid", 404, "ids are lowercase UUIDs"},
		{invV1 + "/resourcePools/" + strings.ToUpper(pool), 404, "lowercase"},
		{invV1 + "/resourcePools/" + ie.cfg.ResourcePoolID(99), 404, "not found"},
		{invV1 + "/resourcePools/" + ie.cfg.ResourcePoolID(99) + "/resources", 404, "resource pool"},
		{invV1 + "/resourcePools/" + pool + "/resources/" + ie.cfg.ResourceID(999), 404, "not found in resource pool"},
		{invV1 + "/resourceTypes/" + ie.cfg.ResourceTypeID(99), 404, "resource type"},
		{invV1 + "/deploymentManagers/" + ie.cfg.DeploymentManagerID("x"), 404, "deployment manager"},
		{invV1 + "/resourcePools?filter=(eq,nme,North)", 400, `"nme" is not an attribute of ResourcePool`},
		{invV1 + "/resourcePools?filter=(eq,name", 400, "filter"},
		{invV1 + "/resourcePools?fields=name/first", 400, `"name/first" is not an attribute of ResourcePool: name has no members`},
		{invV1 + "/resourceTypes?all_fields&exclude_fields=extensions/x", 400, "cannot be combined"},
		{invV1 + "/resourceTypes?limit=3", 400, "unknown query parameter"},
		{invV1 + "/resourceTypes?nextpage_opaque_marker=%25%25", 400, "not a marker"},
		{invV1 + "?filter=(eq,name,x)", 400, "one object"},
		{invV1 + "/nothing", 404, "not a resource of this API"},
	} {
		x := ie.get(c.path)
		require.Equal(t, c.code, x.Code(), "%s: %s", c.path, x.Body)
		require.Contains(t, x.Object(t)["detail"], c.says, c.path)
	}
	x := ie.send(http.MethodPost, invV1+"/resourcePools", []byte(`{}`))
	require.Equal(t, http.StatusMethodNotAllowed, x.Code())
	require.Equal(t, "GET, HEAD", x.Resp.Header.Get("Allow"))
	x = ie.get(invV1+"/resourcePools", "Accept", "text/html")
	require.Equal(t, http.StatusNotAcceptable, x.Code())
}

func TestInventoryFiltersSelectorsAndPagingAsTheProvisioningList(t *testing.T) {
	ie := newInvEnv(t, seedSix, func(c *nbi.Config) { c.PageSize = 2 })
	pool := ie.cfg.ResourcePoolID(1)
	path := invV1 + "/resourcePools/" + pool + "/resources"

	// Paging: 4 resources in pages of 2, Link with the marker, in id order, nothing twice.
	var all []string
	next := path + "?filter=(neq,extensions/status,failed)"
	for pages := 0; next != ""; pages++ {
		require.Less(t, pages, 5)
		x := ie.get(next)
		require.Equal(t, http.StatusOK, x.Code(), string(x.Body))
		all = append(all, idsOf(x.Items(t), "resourceId")...)
		next = ""
		if l := x.Resp.Header.Get("Link"); l != "" {
			require.True(t, strings.HasPrefix(l, "<"+path+"?"), l)
			next = strings.TrimSuffix(strings.TrimPrefix(l, "<"), `>; rel="next"`)
			require.Contains(t, next, "filter=")
		}
	}
	require.Len(t, all, 4)
	require.True(t, sort.StringsAreSorted(all))

	// Filters on extensions (numbers compare numerically) and on arrays.
	x := ie.get(path + "?filter=(eq,extensions/capabilities/cpu_cores,32)")
	for _, r := range x.Items(t) {
		require.EqualValues(t, 32, r["extensions"].(map[string]any)["capabilities"].(map[string]any)["cpu_cores"])
	}
	require.Len(t, x.Items(t), 2)
	require.Empty(t, ie.get(path+"?filter=(cont,tags,core)").Items(t))
	require.Len(t, ie.get(path+"?filter=(in,tags,edge,core);(gte,extensions/capabilities/cpu_cores,16)").Items(t), 2, "page of 2")

	// Attribute selectors as the inventory reference reads them: what is listed, and what is required.
	x = ie.get(path + "?fields=extensions/capabilities")
	for _, r := range x.Items(t) {
		ext := r["extensions"].(map[string]any)
		require.Contains(t, ext, "capabilities")
		require.NotContains(t, ext, "status", "only what is listed inside extensions")
		require.Contains(t, r, "tags", "required attributes stay")
	}
	x = ie.get(path + "?exclude_fields=extensions/capabilities")
	for _, r := range x.Items(t) {
		require.NotContains(t, r["extensions"], "capabilities")
	}
	x = ie.get(invV1 + "/resourcePools?exclude_fields=extensions")
	for _, p := range x.Items(t) {
		require.NotContains(t, p, "extensions", "the pool's extensions are optional")
	}
	// Unlike the provisioning API, selectors name simple attributes too: a simple member goes, and a
	// required attribute excluded stays (200).
	x = ie.get(invV1 + "?exclude_fields=extensions/inventorySource")
	require.NotContains(t, x.Object(t)["extensions"], "inventorySource")
	x = ie.get(invV1 + "/resourceTypes?exclude_fields=extensions")
	require.Equal(t, http.StatusOK, x.Code())
	for _, rt := range x.Items(t) {
		require.Contains(t, rt, "extensions", "required by ResourceType: it stays")
	}
}

// Until the first full listing the view knows nothing: it refuses (503, Retry-After) rather than
// answer an empty inventory. api_versions and the O-Cloud answer at once.
func TestInventoryRefusesUntilTheFirstListing(t *testing.T) {
	ie := newInvEnv(t, seedSix)
	fresh := serveView(t, ie, inventory.NewView(ie.cfg, nil))
	for _, p := range []string{"/resourcePools", "/resourceTypes", "/oCloudSites", "/resourcePools/" + ie.cfg.ResourcePoolID(1)} {
		x := fresh.get(invV1 + p)
		require.Equal(t, http.StatusServiceUnavailable, x.Code(), p)
		require.Equal(t, "5", x.Resp.Header.Get("Retry-After"))
	}
	require.Equal(t, http.StatusOK, fresh.get(invV1).Code())
	require.Equal(t, http.StatusOK, fresh.get(Root+"/api_versions").Code())
	require.JSONEq(t, `[]`, string(fresh.get(invV1+"/deploymentManagers").Body), "no Cluster source: none")
}

// NetBox down from the start of an operator: the client refuses the inventory's listings until NetBox
// passed its check (nothing reaches NetBox), so there is no view and the routes backed by it answer 503
// with Retry-After, never an empty inventory; once NetBox answers, the next refresh fills the view; when it
// goes down again, the last view keeps answering.
func TestInventoryDuringANetBoxOutageFromTheStart(t *testing.T) {
	ie := newInvEnv(t, seedSix)
	ie.sim.SetOutage(http.StatusServiceUnavailable)
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(invToken), 0o600))
	nb, err := netbox.New(netbox.Config{URL: ie.netboxURL, TokenFile: tokenFile, AllowHTTP: true, Timeout: 2 * time.Second}, nil, prometheus.NewRegistry())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	require.NoError(t, nb.Gate.Start(ctx), "an outage at start is no reason to stop")
	view := inventory.NewView(ie.cfg, nil)
	refresher, err := inventory.NewRefresher(view, nb.Search, nil, nil)
	require.NoError(t, err)

	listings := func() int {
		return ie.sim.Calls(http.MethodGet, netboxsim.RouteDevices) + ie.sim.Calls(http.MethodGet, netboxsim.RouteSites)
	}
	before := listings()
	err = refresher.Refresh(ctx, true)
	require.True(t, netbox.IsKind(err, netbox.KindUnavailable), "%v", err)
	require.Equal(t, before, listings(), "nothing but the check reaches a NetBox that has not passed it")

	fresh := serveView(t, ie, view)
	for _, p := range []string{"/resourcePools", "/resourceTypes", "/oCloudSites", "/resourcePools/" + ie.cfg.ResourcePoolID(1) + "/resources"} {
		x := fresh.get(invV1 + p)
		require.Equal(t, http.StatusServiceUnavailable, x.Code(), p)
		require.Equal(t, "5", x.Resp.Header.Get("Retry-After"), p)
		require.Equal(t, "application/problem+json", x.Resp.Header.Get("Content-Type"), p)
	}
	require.Equal(t, http.StatusOK, fresh.get(invV1).Code(), "the O-Cloud is configuration: it answers")

	ie.sim.SetOutage(0)
	require.Eventually(t, func() bool { return refresher.Refresh(ctx, true) == nil }, 30*time.Second, 200*time.Millisecond,
		"the inventory never read NetBox once it answered")
	pool := invV1 + "/resourcePools/" + ie.cfg.ResourcePoolID(1) + "/resources"
	want := len(ie.get(pool).Items(t)) // as a view filled while NetBox answered has it
	require.Positive(t, want)
	x := fresh.get(pool)
	require.Equal(t, http.StatusOK, x.Code())
	require.Len(t, x.Items(t), want)

	ie.sim.SetOutage(http.StatusServiceUnavailable)
	require.Error(t, refresher.Refresh(ctx, false))
	x = fresh.get(pool)
	require.Equal(t, http.StatusOK, x.Code(), "the last view answers while NetBox is down")
	require.Len(t, x.Items(t), want)
}

// serveView is a second server over ie's requests (no API-server client, no Clusters, page size 10)
// answering the inventory from view.
func serveView(t *testing.T, ie *invEnv, view *inventory.View) *invEnv {
	t.Helper()
	inv := New(view, NewDeploymentManagers(view.Config(), ie.Store, nil), nil, nil)
	prov, err := provisioning.New(ie.Store, nil, inv.ResourceIDs)
	require.NoError(t, err)
	srv, err := nbi.New(nbi.Config{Host: "127.0.0.1", Port: 0, PageSize: 10}, nil, zap.NewNop(), nil, prov, inv)
	require.NoError(t, err)
	require.NoError(t, srv.Start())
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	return &invEnv{Env: &nbitest.Env{T: t, Base: "http://" + srv.Addr(), Client: ie.Client}}
}
