package netbox_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/netbox"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
)

func TestFindFreeHostMatchesSelector(t *testing.T) {
	e := newEnv(t)
	e.addCapability("cpu_cores", "integer")
	e.addCapability("gpu_model", "select", "a100", "h100")
	e.addCapability("sriov", "boolean")
	e.addHost("small", map[string]any{"cpu_cores": 8, "gpu_model": "a100", "sriov": true})
	e.sim.AddDevice(netboxsim.Device{Name: "owned", Custom: map[string]any{
		"o2ims_managed": true, "o2ims_request_uid": "someone", "cpu_cores": 16, "gpu_model": "a100", "sriov": true}})
	e.sim.AddDevice(netboxsim.Device{Name: "notpool", Custom: map[string]any{"cpu_cores": 16, "gpu_model": "a100", "sriov": true}})
	e.sim.AddDevice(netboxsim.Device{Name: "failed", Status: "failed", Custom: map[string]any{
		"o2ims_managed": true, "cpu_cores": 16, "gpu_model": "a100", "sriov": true}})
	want := e.addHost("match", map[string]any{"cpu_cores": 16, "gpu_model": "a100", "sriov": true})

	// JSON-decoded template parameters give numbers as float64.
	d, err := e.client.Search.FindFreeHost(ctx(t), netbox.Selector{"cpu_cores": float64(16), "gpu_model": "a100", "sriov": true}, nil)
	require.NoError(t, err)
	assert.Equal(t, want, d.ID)
	assert.Equal(t, "match", d.Name)
	assert.True(t, d.Free())
	assert.Empty(t, d.ETag, "a listed row has no ETag; GetDevice before Claim")
	assert.Equal(t, "52:54:00:12:34:56", d.BootMAC)

	_, err = e.client.Search.FindFreeHost(ctx(t), netbox.Selector{"cpu_cores": 64}, nil)
	assert.ErrorIs(t, err, netbox.ErrNoFreeHost)
	assert.False(t, netbox.IsKind(err, netbox.KindSchema))

	// An empty selector takes any free pool host.
	d, err = e.client.Search.FindFreeHost(ctx(t), nil, nil)
	require.NoError(t, err)
	assert.True(t, d.Free())

	// skip excludes candidates the caller already lost.
	_, err = e.client.Search.FindFreeHost(ctx(t), netbox.Selector{"cpu_cores": 16}, map[int32]bool{want: true})
	assert.ErrorIs(t, err, netbox.ErrNoFreeHost)
}

// The query FindFreeHost sends, as NetBox receives it.
func TestFindFreeHostQueryAndEscaping(t *testing.T) {
	var mu sync.Mutex
	var queries []url.Values
	sim := netboxsim.New(netboxsim.Options{Tokens: []string{testToken}})
	for _, f := range netboxsim.StandardFields() {
		sim.AddCustomField(f)
	}
	sim.AddCustomField(netboxsim.CustomField{Name: "label", Type: "text", FilterLogic: "exact"})
	sim.AddCustomField(netboxsim.CustomField{Name: "zone", Type: "text", FilterLogic: "exact"})
	sim.AddCustomField(netboxsim.CustomField{Name: "cores", Type: "integer", FilterLogic: "exact"})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/dcim/devices/" {
			mu.Lock()
			queries = append(queries, r.URL.Query())
			mu.Unlock()
		}
		sim.ServeHTTP(w, r)
	}))
	defer ts.Close()
	label, zone := "a&b c=d+e#f?g", "zürich ∑ 東京/%20"
	for i, l := range []string{"a&b", label, label + " "} {
		sim.AddDevice(netboxsim.Device{Name: fmt.Sprint(i), Custom: map[string]any{
			"o2ims_managed": true, "label": l, "zone": zone, "cores": -3, "o2ims_bmc_address": "10.0.0.1"}})
	}
	c, err := netbox.New(netbox.Config{URL: ts.URL, TokenFile: writeFile(t, t.TempDir(), "t", testToken), AllowHTTP: true}, nil, nil)
	require.NoError(t, err)

	d, err := c.Search.FindFreeHost(ctx(t), netbox.Selector{"label": label, "zone": zone, "cores": int64(-3)}, nil)
	require.NoError(t, err)
	assert.Equal(t, "1", d.Name)
	require.Len(t, queries, 1)
	q := queries[0]
	assert.Equal(t, []string{label}, q["cf_label"])
	assert.Equal(t, []string{zone}, q["cf_zone"])
	assert.Equal(t, []string{"-3"}, q["cf_cores"])
	assert.Equal(t, []string{"true"}, q["cf_o2ims_managed"])
	assert.Equal(t, []string{"true"}, q["cf_o2ims_request_uid__empty"])
	assert.Equal(t, []string{"staged"}, q["status"])
	assert.Equal(t, []string{"100"}, q["limit"])
	assert.Equal(t, []string{"0"}, q["offset"])

	enc, err := c.Search.DeviceFiltersForTest(netbox.Selector{"label": label})
	require.NoError(t, err)
	assert.Contains(t, enc, "cf_label=a%26b+c%3Dd%2Be%23f%3Fg")
}

func TestFindFreeHostSchemaErrorsAreNotNoCapacity(t *testing.T) {
	e := newEnv(t)
	e.addCapability("cpu_cores", "integer")
	e.addCapability("gpu_model", "select", "a100")
	e.sim.AddCustomField(netboxsim.CustomField{Name: "rack_note", Type: "text"}) // loose
	e.sim.AddCustomField(netboxsim.CustomField{Name: "weight", Type: "decimal", FilterLogic: "exact"})
	e.sim.AddCustomField(netboxsim.CustomField{Name: "site_code", Type: "text", FilterLogic: "exact", ObjectTypes: []string{"dcim.site"}})
	e.addHost("h", map[string]any{"cpu_cores": 16})

	cases := []struct {
		sel  netbox.Selector
		want string
	}{
		{netbox.Selector{"nonexistent": "x"}, "selector key nonexistent: no such custom field on dcim.device"},
		{netbox.Selector{"site_code": "x"}, "selector key site_code: no such custom field on dcim.device"},
		{netbox.Selector{"cpu_cores": "16"}, "selector key cpu_cores: field is integer, value is a string"},
		{netbox.Selector{"gpu_model": true}, "selector key gpu_model: field is select, value is a boolean"},
		{netbox.Selector{"rack_note": "row a"}, "selector key rack_note: field has filter_logic loose, want exact"},
		{netbox.Selector{"weight": 2}, "selector key weight: field type decimal is not supported"},
		{netbox.Selector{"o2ims_request_uid": ""}, "selector key o2ims_request_uid is reserved"},
		{netbox.Selector{"o2ims_managed": true}, "selector key o2ims_managed is reserved"},
		{netbox.Selector{"cpu_cores": 16.5}, "selector key cpu_cores: number must be an integer"},
		{netbox.Selector{"cpu_cores": []any{16}}, "is not a scalar"},
		{netbox.Selector{"Bad-Key": 1}, `selector key "Bad-Key" is not a NetBox custom field name`},
	}
	for _, tc := range cases {
		d, err := e.client.Search.FindFreeHost(ctx(t), tc.sel, nil)
		require.Error(t, err, "%v", tc.sel)
		assert.Nil(t, d)
		assert.False(t, errors.Is(err, netbox.ErrNoFreeHost), "%v", tc.sel)
		assert.True(t, netbox.IsKind(err, netbox.KindSchema), "%v: %v", tc.sel, err)
		assert.Contains(t, err.Error(), tc.want)
	}
	// Several problems, one line.
	err := e.client.Schema.CheckSchema(ctx(t), netbox.Selector{"nonexistent": "x", "cpu_cores": "16"})
	assert.Contains(t, err.Error(), "selector key cpu_cores: field is integer, value is a string; selector key nonexistent")
	assert.Zero(t, e.sim.Calls("GET", netboxsim.RouteDevices), "no device search on a schema error")

	// Fixed field removed after startup: still a schema error, not "no capacity".
	e.sim.RemoveCustomField("o2ims_boot_mac")
	_, err = e.client.Search.FindFreeHost(ctx(t), nil, nil)
	assert.True(t, netbox.IsKind(err, netbox.KindSchema))
}

// A server that ignores filters (unknown to it, or buggy) must not hand out a
// wrong host: every row is re-checked.
func TestFindFreeHostRechecksIgnoredFilters(t *testing.T) {
	e := newEnv(t)
	e.addCapability("gpu_model", "select", "a100", "h100")
	e.sim.IgnoreFilter("cf_gpu_model")
	e.sim.IgnoreFilter("cf_o2ims_request_uid__empty")
	e.sim.IgnoreFilter("cf_o2ims_managed")
	e.sim.IgnoreFilter("status")
	e.addHost("h100", map[string]any{"gpu_model": "h100"})
	e.sim.AddDevice(netboxsim.Device{Name: "owned", Custom: map[string]any{"o2ims_managed": true, "o2ims_request_uid": "x", "gpu_model": "a100"}})
	e.sim.AddDevice(netboxsim.Device{Name: "string-true", Custom: map[string]any{"o2ims_managed": "true", "gpu_model": "a100"}})
	e.sim.AddDevice(netboxsim.Device{Name: "active", Status: "active", Custom: map[string]any{"o2ims_managed": true, "gpu_model": "a100"}})
	e.sim.AddDevice(netboxsim.Device{Name: "numeric-owner", Custom: map[string]any{"o2ims_managed": true, "o2ims_request_uid": 0, "gpu_model": "a100"}})
	want := e.addHost("a100", map[string]any{"gpu_model": "a100"})

	d, err := e.client.Search.FindFreeHost(ctx(t), netbox.Selector{"gpu_model": "a100"}, nil)
	require.NoError(t, err)
	assert.Equal(t, want, d.ID)
	warn := e.logs.FilterMessageSnippet("do not match the filters").All()
	require.Len(t, warn, 1)
	assert.EqualValues(t, 5, warn[0].ContextMap()["rejected"])
}

func TestFindFreeHostPaging(t *testing.T) {
	e := newEnv(t)
	e.addCapability("rack", "text")
	e.sim.IgnoreFilter("cf_rack") // the server returns the whole pool: 250 rows, 3 pages
	for i := 0; i < 249; i++ {
		e.addHost(fmt.Sprintf("h%03d", i), map[string]any{"rack": "r1"})
	}
	want := e.addHost("last", map[string]any{"rack": "r2"})
	d, err := e.client.Search.FindFreeHost(ctx(t), netbox.Selector{"rack": "r2"}, nil)
	require.NoError(t, err)
	assert.Equal(t, want, d.ID)
	assert.Equal(t, 3, e.sim.Calls("GET", netboxsim.RouteDevices))

	_, err = e.client.Search.FindFreeHost(ctx(t), netbox.Selector{"rack": "r3"}, nil)
	assert.ErrorIs(t, err, netbox.ErrNoFreeHost)
	assert.Equal(t, 6, e.sim.Calls("GET", netboxsim.RouteDevices))
}

func TestFindFreeHostNetBox47SelectObjects(t *testing.T) {
	e := newEnv(t, withSim(netboxsim.Options{SelectAsObject: true}))
	e.addCapability("gpu_model", "select", "a100")
	want := e.addHost("h", map[string]any{"gpu_model": "a100"})
	d, err := e.client.Search.FindFreeHost(ctx(t), netbox.Selector{"gpu_model": "a100"}, nil)
	require.NoError(t, err)
	assert.Equal(t, want, d.ID)
	assert.Equal(t, map[string]any{"value": "a100", "label": "a100"}, d.Custom["gpu_model"])
}

func TestFindFreeHostAPIErrors(t *testing.T) {
	e := newEnv(t)
	e.addHost("h", nil)
	e.sim.InjectFault(netboxsim.Fault{Method: "GET", Route: netboxsim.RouteDevices, Status: 500, Count: 10})
	_, err := e.client.Search.FindFreeHost(ctx(t), nil, nil)
	assert.True(t, netbox.IsKind(err, netbox.KindServer), "%v", err)
	assert.False(t, errors.Is(err, netbox.ErrNoFreeHost))
	e.sim.ClearFaults()
	e.sim.InjectFault(netboxsim.Fault{Method: "GET", Route: netboxsim.RouteCustomFields, Status: 403})
	_, err = e.client.Search.FindFreeHost(ctx(t), nil, nil)
	assert.True(t, netbox.IsKind(err, netbox.KindForbidden), "%v", err)
	assert.Contains(t, err.Error(), "NETBOX_TOKEN_FILE")
}

// Only the offset of NetBox's absolute `next` link is used: a proxy may put a
// wrong scheme/host there, and the token must not follow it.
func TestFindFreeHostNextLinkHostIgnored(t *testing.T) {
	sim := netboxsim.New(netboxsim.Options{Tokens: []string{testToken}})
	for _, f := range netboxsim.StandardFields() {
		sim.AddCustomField(f)
	}
	for i := 0; i < 150; i++ {
		sim.AddDevice(netboxsim.Device{Custom: map[string]any{"o2ims_managed": true, "o2ims_request_uid": "taken"}})
	}
	sim.IgnoreFilter("cf_o2ims_request_uid__empty")
	want := sim.AddDevice(netboxsim.Device{Custom: map[string]any{"o2ims_managed": true}})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host != "" && r.URL.Path == "/api/dcim/devices/" {
			rec := httptest.NewRecorder()
			sim.ServeHTTP(rec, r)
			body := strings.ReplaceAll(rec.Body.String(), "http://"+r.Host, "http://netbox.invalid")
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write([]byte(body))
			return
		}
		sim.ServeHTTP(w, r)
	}))
	defer ts.Close()
	c, err := netbox.New(netbox.Config{URL: ts.URL, TokenFile: writeFile(t, t.TempDir(), "t", testToken), AllowHTTP: true}, nil, nil)
	require.NoError(t, err)
	d, err := c.Search.FindFreeHost(ctx(t), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, want, d.ID)
	assert.Equal(t, 2, sim.Calls("GET", netboxsim.RouteDevices))
}

// go-netbox cannot decode a page holding a FIELD_CHOICES status; the page is
// read tolerantly and the odd row rejected by the re-check.
func TestFindFreeHostTolerantPage(t *testing.T) {
	e := newEnv(t, withSim(netboxsim.Options{ExtraStatuses: []string{"racked"}}))
	e.sim.IgnoreFilter("status")
	e.sim.AddDevice(netboxsim.Device{Status: "racked", Custom: map[string]any{"o2ims_managed": true}})
	want := e.addHost("h", nil)
	d, err := e.client.Search.FindFreeHost(ctx(t), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, want, d.ID)
}

func TestValidateSelector(t *testing.T) {
	e := newEnv(t)
	assert.NoError(t, e.client.Search.ValidateSelector(netbox.Selector{"cpu_cores": 16, "gpu": "a100"}))
	err := e.client.Search.ValidateSelector(netbox.Selector{"o2ims_boot_mac": "x"})
	assert.True(t, netbox.IsKind(err, netbox.KindSchema))
	assert.Zero(t, e.sim.Calls("GET", netboxsim.RouteCustomFields), "no NetBox call")
}

func TestFindFreeHostsTakesSeveralFromOneListing(t *testing.T) {
	env := newEnv(t)
	env.addCapability("cpu_cores", "integer")
	for i := 0; i < 5; i++ {
		env.addHost(fmt.Sprintf("h%d", i), map[string]any{"cpu_cores": 16})
	}
	lists := env.sim.Calls("GET", netboxsim.RouteDevices)
	found, err := env.client.Search.FindFreeHosts(ctx(t), netbox.Selector{"cpu_cores": 16}, nil, 3)
	require.NoError(t, err)
	require.Len(t, found, 3)
	assert.Equal(t, lists+1, env.sim.Calls("GET", netboxsim.RouteDevices), "one listing for three hosts")
	ids := map[int32]bool{}
	for _, d := range found {
		ids[d.ID] = true
	}
	assert.Len(t, ids, 3, "distinct devices")

	more, err := env.client.Search.FindFreeHosts(ctx(t), netbox.Selector{"cpu_cores": 16}, ids, 5)
	require.NoError(t, err)
	assert.Len(t, more, 2, "fewer than asked is not an error")
}
