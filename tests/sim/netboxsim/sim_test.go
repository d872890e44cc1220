package netboxsim_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	nb "github.com/netbox-community/go-netbox/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
)

const token = "0123456789abcdef0123456789abcdef01234567"

func start(t *testing.T, opts netboxsim.Options) (*netboxsim.Server, string) {
	t.Helper()
	if opts.Tokens == nil {
		opts.Tokens = []string{token}
	}
	s := netboxsim.New(opts)
	ts := s.Start()
	t.Cleanup(s.Close)
	return s, ts.URL
}

// apiClient is go-netbox configured the way its own NewAPIClientFor does.
func apiClient(base string) *nb.APIClient {
	return nb.NewAPIClientFor(base, token)
}

func seedStandard(s *netboxsim.Server) {
	for _, f := range netboxsim.StandardFields() {
		s.AddCustomField(f)
	}
}

func TestGoNetboxDecodesDevices(t *testing.T) {
	s, base := start(t, netboxsim.Options{})
	seedStandard(s)
	s.AddCustomField(netboxsim.CustomField{Name: "cpu_cores", Type: netboxsim.TypeInteger, FilterLogic: "exact"})
	for i := 0; i < 3; i++ {
		s.AddDevice(netboxsim.Device{Name: fmt.Sprintf("edge-%d", i), Custom: map[string]any{"o2ims_managed": true, "cpu_cores": 16}})
	}
	s.AddDevice(netboxsim.Device{Status: "active"}) // unnamed
	c := apiClient(base)
	ctx := context.Background()

	list, _, err := c.DcimAPI.DcimDevicesList(ctx).Status([]string{"staged"}).Limit(2).Execute()
	require.NoError(t, err)
	assert.EqualValues(t, 3, list.Count)
	require.Len(t, list.Results, 2)
	require.True(t, list.Next.IsSet())
	assert.Equal(t, base+"/api/dcim/devices/?limit=2&offset=2&status=staged", *list.Next.Get())
	assert.Nil(t, list.Previous.Get())
	d0 := list.Results[0]
	assert.Equal(t, "edge-0", *d0.Name.Get())
	assert.Equal(t, nb.DEVICESTATUSVALUE_STAGED, *d0.Status.Value)
	assert.Equal(t, true, d0.CustomFields["o2ims_managed"])
	assert.EqualValues(t, 16, d0.CustomFields["cpu_cores"])
	// NetBox renders every field of the object type, null when unset.
	v, present := d0.CustomFields["o2ims_request_uid"]
	assert.True(t, present)
	assert.Nil(t, v)
	require.True(t, d0.LastUpdated.IsSet())

	page2, _, err := c.DcimAPI.DcimDevicesList(ctx).Status([]string{"staged"}).Limit(2).Offset(2).Execute()
	require.NoError(t, err)
	require.Len(t, page2.Results, 1)
	assert.Nil(t, page2.Next.Get())
	assert.Equal(t, base+"/api/dcim/devices/?limit=2&status=staged", *page2.Previous.Get())

	got, resp, err := c.DcimAPI.DcimDevicesRetrieve(ctx, 4).Execute()
	require.NoError(t, err)
	assert.Nil(t, got.Name.Get())
	assert.Equal(t, "PowerEdge R760 (4)", got.Display)
	etag := resp.Header.Get("ETag")
	assert.Regexp(t, `^W/"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?\+00:00"$`, etag)

	st := nb.DEVICESTATUSVALUE_FAILED
	patched, resp, err := c.DcimAPI.DcimDevicesPartialUpdate(ctx, 1).PatchedWritableDeviceWithConfigContextRequest(
		nb.PatchedWritableDeviceWithConfigContextRequest{Status: &st, CustomFields: map[string]any{"o2ims_request_uid": "x"}},
	).Execute()
	require.NoError(t, err)
	assert.Equal(t, nb.DEVICESTATUSVALUE_FAILED, *patched.Status.Value)
	assert.Equal(t, "x", patched.CustomFields["o2ims_request_uid"])
	assert.NotEmpty(t, resp.Header.Get("ETag"))
}

func TestGoNetboxDecodesCustomFieldsAndStatus(t *testing.T) {
	s, base := start(t, netboxsim.Options{})
	seedStandard(s)
	s.AddCustomField(netboxsim.CustomField{Name: "site_code", Type: netboxsim.TypeText, ObjectTypes: []string{"dcim.site"}})
	c := apiClient(base)
	ctx := context.Background()

	list, _, err := c.ExtrasAPI.ExtrasCustomFieldsList(ctx).ObjectType("dcim.device").Limit(3).Execute()
	require.NoError(t, err)
	assert.EqualValues(t, 4, list.Count)
	require.Len(t, list.Results, 3)
	require.NotNil(t, list.Next.Get())
	f := list.Results[0]
	assert.Equal(t, "o2ims_bmc_address", f.Name)
	assert.Equal(t, nb.CUSTOMFIELDTYPEVALUE_TEXT, *f.Type.Value)
	assert.Equal(t, nb.CUSTOMFIELDFILTERLOGICVALUE_EXACT, *f.FilterLogic.Value)
	assert.Equal(t, []string{"dcim.device"}, f.ObjectTypes)

	status, _, err := c.StatusAPI.StatusRetrieve(ctx).Execute()
	require.NoError(t, err)
	assert.Equal(t, "4.6.8", status["netbox-version"])
	s.SetVersion("4.5.3")
	status, _, err = c.StatusAPI.StatusRetrieve(ctx).Execute()
	require.NoError(t, err)
	assert.Equal(t, "4.5.3", status["netbox-version"])
}

// NetBox serialises choice_set.choices_count as an integer; go-netbox 4.3's model
// says string. The simulator is faithful to NetBox, so go-netbox's strict decoding
// fails on a select field. This test pins that known go-netbox defect: if it
// starts passing, go-netbox was fixed and the client's tolerant path is moot.
func TestGoNetboxCannotDecodeSelectChoiceSet(t *testing.T) {
	s, base := start(t, netboxsim.Options{})
	s.AddCustomField(netboxsim.CustomField{Name: "gpu_model", Type: netboxsim.TypeSelect, Choices: []string{"a100"}})
	_, _, err := apiClient(base).ExtrasAPI.ExtrasCustomFieldsList(context.Background()).Execute()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "choices_count")
}

func TestAuthentication(t *testing.T) {
	v2 := "nbt_AbCdEfGhIjKl.secretsecretsecret"
	_, base := start(t, netboxsim.Options{Tokens: []string{token, v2}})
	cases := []struct {
		name, header string
		status       int
		detail       string
	}{
		{"v1", "Token " + token, 200, ""},
		{"v2 bearer", "Bearer " + v2, 200, ""},
		{"v2 inferred from prefix", "Token " + v2, 200, ""},
		{"missing", "", 403, "Authentication credentials were not provided."},
		{"unknown keyword", "Basic abc", 403, "Authentication credentials were not provided."},
		{"bad v1", "Token nope", 403, "Invalid v1 token"},
		{"bad v2", "Bearer nbt_AbCdEfGhIjKl.wrong", 403, "Invalid v2 token"},
		{"v2 without key", "Bearer nbt_nokey", 403, "Invalid authorization header: Could not parse key from v2 token. Did you mean to use 'Token' instead of 'Bearer'?"},
		{"extra parts", "Token a b", 403, `Invalid authorization header: Must be in the form "Bearer <key>.<token>" or "Token <token>"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, base+"/api/status/", nil)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, tc.status, resp.StatusCode)
			if tc.detail != "" {
				var body map[string]string
				require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
				assert.Equal(t, tc.detail, body["detail"])
			}
		})
	}
}

type raw struct {
	t    *testing.T
	base string
}

func (r raw) do(method, path string, header map[string]string, body string) (*http.Response, map[string]any) {
	r.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, r.base+path, rd)
	require.NoError(r.t, err)
	req.Header.Set("Authorization", "Token "+token)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(r.t, err)
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp, out
}

func ids(t *testing.T, body map[string]any) []int {
	t.Helper()
	var out []int
	for _, r := range body["results"].([]any) {
		out = append(out, int(r.(map[string]any)["id"].(float64)))
	}
	return out
}

func TestDeviceFilters(t *testing.T) {
	s, base := start(t, netboxsim.Options{})
	seedStandard(s)
	s.AddCustomField(netboxsim.CustomField{Name: "cpu_cores", Type: netboxsim.TypeInteger, FilterLogic: "exact"})
	s.AddCustomField(netboxsim.CustomField{Name: "gpu", Type: netboxsim.TypeSelect, FilterLogic: "exact", Choices: []string{"a100", "h100"}})
	s.AddCustomField(netboxsim.CustomField{Name: "rack_note", Type: netboxsim.TypeText}) // loose (default)
	s.AddCustomField(netboxsim.CustomField{Name: "hidden", Type: netboxsim.TypeText, FilterLogic: "disabled"})
	s.AddCustomField(netboxsim.CustomField{Name: "label", Type: netboxsim.TypeText, FilterLogic: "exact"})
	s.AddDevice(netboxsim.Device{Custom: map[string]any{"o2ims_managed": true, "cpu_cores": 16, "gpu": "a100", "rack_note": "Row A", "label": "a&b c"}}) // 1
	s.AddDevice(netboxsim.Device{Custom: map[string]any{"o2ims_managed": false, "cpu_cores": 32, "gpu": "h100", "o2ims_request_uid": ""}})               // 2
	s.AddDevice(netboxsim.Device{Custom: map[string]any{"o2ims_managed": true, "cpu_cores": 16, "o2ims_request_uid": "u1", "label": "ünï"}})             // 3
	s.AddDevice(netboxsim.Device{Status: "active", Custom: map[string]any{"o2ims_managed": "true", "cpu_cores": 16, "o2ims_request_uid": nil}})          // 4
	r := raw{t, base}

	cases := map[string][]int{
		"":                                     {1, 2, 3, 4},
		"status=staged":                        {1, 2, 3},
		"status=staged&status=active":          {1, 2, 3, 4},
		"cf_o2ims_managed=true":                {1, 3}, // a JSON string "true" is not true
		"cf_o2ims_managed=false":               {2},
		"cf_o2ims_managed=maybe":               {1, 2, 3, 4}, // NullBooleanField: no filtering
		"cf_o2ims_managed__empty=true":         {1, 2, 3, 4}, // boolean fields have no __empty
		"cf_o2ims_request_uid__empty=true":     {1, 2, 4},    // absent, "" and null are empty
		"cf_o2ims_request_uid__empty=false":    {3},
		"cf_cpu_cores=16":                      {1, 3, 4},
		"cf_cpu_cores=16&cf_cpu_cores=32":      {1, 2, 3, 4}, // repeated values OR
		"cf_cpu_cores=16.0":                    {1, 3, 4},
		"cf_cpu_cores=16&status=staged":        {1, 3}, // parameters AND
		"cf_gpu=a100":                          {1},
		"cf_gpu__empty=true":                   {3, 4},
		"cf_rack_note=row":                     {1}, // loose: icontains
		"cf_rack_note__empty=true":             {1, 2, 3, 4},
		"cf_hidden=x":                          {1, 2, 3, 4}, // disabled: no filter
		"cf_nonexistent=1":                     {1, 2, 3, 4}, // unknown: ignored
		"cf_label=" + url.QueryEscape("a&b c"): {1},
		"cf_label=" + url.QueryEscape("ünï"):   {3},
		"cf_label=A%26B+C":                     nil, // exact is case-sensitive
		"id=2&id=3":                            {2, 3},
		"cf_cpu_cores__gte=20":                 {1, 2, 3, 4}, // lookup not simulated: ignored
	}
	for q, want := range cases {
		resp, body := r.do("GET", "/api/dcim/devices/?"+q, nil, "")
		require.Equal(t, 200, resp.StatusCode, q)
		assert.Equal(t, want, ids(t, body), q)
	}
	resp, body := r.do("GET", "/api/dcim/devices/?cf_cpu_cores=many", nil, "")
	assert.Equal(t, 400, resp.StatusCode)
	assert.Equal(t, []any{"Enter a number."}, body["cf_cpu_cores"])
	resp, _ = r.do("GET", "/api/dcim/devices/?status=bogus", nil, "")
	assert.Equal(t, 400, resp.StatusCode)

	s.IgnoreFilter("cf_gpu")
	_, body = r.do("GET", "/api/dcim/devices/?cf_gpu=a100", nil, "")
	assert.Equal(t, []int{1, 2, 3, 4}, ids(t, body))
}

func TestPaging(t *testing.T) {
	s, base := start(t, netboxsim.Options{})
	for i := 0; i < 1105; i++ {
		s.AddDevice(netboxsim.Device{})
	}
	r := raw{t, base}
	_, body := r.do("GET", "/api/dcim/devices/", nil, "")
	assert.Len(t, body["results"], 50) // PAGINATE_COUNT
	assert.EqualValues(t, 1105, body["count"])
	assert.Equal(t, base+"/api/dcim/devices/?limit=50&offset=50", body["next"])
	_, body = r.do("GET", "/api/dcim/devices/?limit=5000", nil, "")
	assert.Len(t, body["results"], 1000) // MAX_PAGE_SIZE
	_, body = r.do("GET", "/api/dcim/devices/?limit=0", nil, "")
	assert.Len(t, body["results"], 1000)
	_, body = r.do("GET", "/api/dcim/devices/?limit=100&offset=1100", nil, "")
	assert.Len(t, body["results"], 5)
	assert.Nil(t, body["next"])
	assert.Equal(t, base+"/api/dcim/devices/?limit=100&offset=1000", body["previous"])
	_, body = r.do("GET", "/api/dcim/devices/?offset=5000", nil, "")
	assert.Empty(t, body["results"])
}

func TestETagAndConditionalPatch(t *testing.T) {
	s, base := start(t, netboxsim.Options{})
	seedStandard(s)
	id := s.AddDevice(netboxsim.Device{Custom: map[string]any{"o2ims_managed": true}})
	r := raw{t, base}
	path := fmt.Sprintf("/api/dcim/devices/%d/", id)

	resp, _ := r.do("GET", path, nil, "")
	etag := resp.Header.Get("ETag")
	require.True(t, strings.HasPrefix(etag, `W/"`), etag)

	// Mismatch → 412 carrying the current ETag; nothing changes.
	resp, body := r.do("PATCH", path, map[string]string{"If-Match": `W/"2000-01-01T00:00:00+00:00"`}, `{"status":"active"}`)
	assert.Equal(t, 412, resp.StatusCode)
	assert.Equal(t, "Precondition failed.", body["detail"])
	assert.Equal(t, etag, resp.Header.Get("ETag"))
	d, _ := s.Device(id)
	assert.Equal(t, "staged", d.Status)

	// Match (in a list) → applied, new ETag, changelog recorded, null clears.
	resp, body = r.do("PATCH", path, map[string]string{"If-Match": `W/"x", ` + etag},
		`{"status":"active","custom_fields":{"o2ims_request_uid":"u1"},"changelog_message":"claim"}`)
	require.Equal(t, 200, resp.StatusCode, body)
	etag2 := resp.Header.Get("ETag")
	assert.NotEqual(t, etag, etag2)
	assert.Equal(t, "u1", body["custom_fields"].(map[string]any)["o2ims_request_uid"])
	resp, body = r.do("PATCH", path, map[string]string{"If-Match": etag2}, `{"custom_fields":{"o2ims_request_uid":null}}`)
	require.Equal(t, 200, resp.StatusCode, body)
	assert.Nil(t, body["custom_fields"].(map[string]any)["o2ims_request_uid"])
	d, _ = s.Device(id)
	assert.Equal(t, []string{"claim"}, d.Changelog)
	assert.Equal(t, "active", d.Status)

	// Without If-Match NetBox applies the write unconditionally.
	resp, _ = r.do("PATCH", path, nil, `{"status":"staged"}`)
	assert.Equal(t, 200, resp.StatusCode)

	// Validation.
	resp, body = r.do("PATCH", path, nil, `{"custom_fields":{"nope":1}}`)
	assert.Equal(t, 400, resp.StatusCode)
	assert.Contains(t, fmt.Sprint(body["custom_fields"]), "does not exist")
	resp, _ = r.do("PATCH", path, nil, `{"custom_fields":{"o2ims_managed":"yes"}}`)
	assert.Equal(t, 400, resp.StatusCode)
	resp, _ = r.do("PATCH", path, nil, `{"status":"gone"}`)
	assert.Equal(t, 400, resp.StatusCode)
	resp, body = r.do("GET", "/api/dcim/devices/999/", nil, "")
	assert.Equal(t, 404, resp.StatusCode)
	assert.Equal(t, "No Device matches the given query.", body["detail"])

	log := s.PatchLog()
	require.Len(t, log, 7)
	assert.False(t, log[0].Committed)
	assert.Equal(t, 412, log[0].Status)
	assert.True(t, log[1].Committed)
	assert.Equal(t, "claim", log[1].ChangelogMessage)
}

func TestQuickWritesGetDistinctETags(t *testing.T) {
	fixed := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s, base := start(t, netboxsim.Options{Clock: func() time.Time { return fixed }})
	id := s.AddDevice(netboxsim.Device{})
	r := raw{t, base}
	path := fmt.Sprintf("/api/dcim/devices/%d/", id)
	resp, body := r.do("GET", path, nil, "")
	// Python's isoformat leaves out zero microseconds; DRF renders UTC as Z.
	assert.Equal(t, `W/"2026-01-02T03:04:05+00:00"`, resp.Header.Get("ETag"))
	assert.Equal(t, "2026-01-02T03:04:05Z", body["last_updated"])
	seen := map[string]bool{resp.Header.Get("ETag"): true}
	for i := 0; i < 3; i++ {
		resp, _ = r.do("PATCH", path, nil, `{"status":"staged"}`)
		e := resp.Header.Get("ETag")
		assert.False(t, seen[e], e)
		seen[e] = true
	}
	assert.True(t, seen[`W/"2026-01-02T03:04:05.000001+00:00"`])
}

func TestFaultsLatencyAndDrop(t *testing.T) {
	s, base := start(t, netboxsim.Options{})
	id := s.AddDevice(netboxsim.Device{})
	r := raw{t, base}
	path := fmt.Sprintf("/api/dcim/devices/%d/", id)

	s.InjectFault(netboxsim.Fault{Method: "GET", Route: netboxsim.RouteDevice, Status: 503, Count: 2})
	s.InjectFault(netboxsim.Fault{Method: "GET", Route: netboxsim.RouteDevice, Status: 429, RetryAfter: 3})
	resp, _ := r.do("GET", path, nil, "")
	assert.Equal(t, 503, resp.StatusCode)
	resp, _ = r.do("GET", path, nil, "")
	assert.Equal(t, 503, resp.StatusCode)
	resp, _ = r.do("GET", path, nil, "")
	assert.Equal(t, 429, resp.StatusCode)
	assert.Equal(t, "3", resp.Header.Get("Retry-After"))
	resp, _ = r.do("GET", path, nil, "")
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, 4, s.Calls("GET", netboxsim.RouteDevice))

	// Latency: a client that gives up leaves the request unprocessed.
	s.SetLatency("PATCH", netboxsim.RouteDevice, time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "PATCH", base+path, strings.NewReader(`{"status":"failed"}`))
	req.Header.Set("Authorization", "Token "+token)
	_, err := http.DefaultClient.Do(req)
	require.Error(t, err)
	require.Eventually(t, func() bool { return len(s.PatchLog()) == 1 }, 5*time.Second, 5*time.Millisecond)
	assert.False(t, s.PatchLog()[0].Committed)
	d, _ := s.Device(id)
	assert.Equal(t, "staged", d.Status)
	s.SetLatency("PATCH", netboxsim.RouteDevice, 0)

	// Dropped answer: committed, connection closed without a response.
	s.DropPatchAnswers(1)
	req, _ = http.NewRequest("PATCH", base+path, strings.NewReader(`{"status":"failed"}`))
	req.Header.Set("Authorization", "Token "+token)
	_, err = http.DefaultClient.Do(req)
	require.Error(t, err)
	d, _ = s.Device(id)
	assert.Equal(t, "failed", d.Status)
	last := s.PatchLog()[1]
	assert.True(t, last.Committed)
	assert.True(t, last.Dropped)
}

func TestConcurrentPatchesOneWinner(t *testing.T) {
	s, base := start(t, netboxsim.Options{})
	seedStandard(s)
	id := s.AddDevice(netboxsim.Device{})
	r := raw{t, base}
	path := fmt.Sprintf("/api/dcim/devices/%d/", id)
	resp, _ := r.do("GET", path, nil, "")
	etag := resp.Header.Get("ETag")
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			resp, _ := r.do("PATCH", path, map[string]string{"If-Match": etag},
				fmt.Sprintf(`{"custom_fields":{"o2ims_request_uid":"u%d"}}`, i))
			mu.Lock()
			codes[resp.StatusCode]++
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	assert.Equal(t, map[int]int{200: 1, 412: 19}, codes)
}

func TestSeed(t *testing.T) {
	s, base := start(t, netboxsim.Options{})
	doc := `{
	  "version": "4.6.2",
	  "standard_fields": true,
	  "custom_fields": [{"name": "gpu_model", "type": "select", "filter_logic": "exact", "choices": ["a100", "h100"]}],
	  "devices": [
	    {"name": "edge-1", "custom_fields": {"o2ims_managed": true, "gpu_model": "a100"}},
	    {"id": 40, "name": "edge-2", "status": "active", "custom_fields": {"o2ims_request_uid": "abc"}}
	  ]
	}`
	require.NoError(t, s.Seed(strings.NewReader(doc)))
	devs := s.Devices()
	require.Len(t, devs, 2)
	assert.Equal(t, int32(40), devs[1].ID)
	assert.Equal(t, "staged", devs[0].Status)
	_, body := raw{t, base}.do("GET", "/api/status/", nil, "")
	assert.Equal(t, "4.6.2", body["netbox-version"])

	err := s.Seed(strings.NewReader(`{"devices":[{"status":"bogus"}]}`))
	require.Error(t, err)
	assert.Len(t, s.Devices(), 2, "a bad seed loads nothing")
	require.Error(t, s.Seed(strings.NewReader(`{"unknown": 1}`)))
}

func TestSelectAsObject(t *testing.T) {
	s, base := start(t, netboxsim.Options{SelectAsObject: true})
	s.AddCustomField(netboxsim.CustomField{Name: "gpu", Type: netboxsim.TypeSelect, Choices: []string{"a100"}})
	id := s.AddDevice(netboxsim.Device{Custom: map[string]any{"gpu": "a100"}})
	_, body := raw{t, base}.do("GET", fmt.Sprintf("/api/dcim/devices/%d/", id), nil, "")
	assert.Equal(t, map[string]any{"value": "a100", "label": "a100"}, body["custom_fields"].(map[string]any)["gpu"])
}

// A PATCH's numbers are stored as NetBox's Python sees them: 16 an integer, 16.0 a float (which an
// integer field refuses), and the PATCH log holds the same types.
func TestPatchKeepsIntegersAndFloatsApart(t *testing.T) {
	s, base := start(t, netboxsim.Options{})
	s.AddCustomField(netboxsim.CustomField{Name: "cpu_cores", Type: netboxsim.TypeInteger, FilterLogic: netboxsim.FilterExact})
	s.AddCustomField(netboxsim.CustomField{Name: "ratio", Type: netboxsim.TypeDecimal, FilterLogic: netboxsim.FilterExact})
	id := s.AddDevice(netboxsim.Device{})
	r := raw{t, base}
	path := fmt.Sprintf("/api/dcim/devices/%d/", id)

	resp, body := r.do("PATCH", path, nil, `{"custom_fields":{"cpu_cores":16,"ratio":1.5}}`)
	require.Equal(t, 200, resp.StatusCode, body)
	d, _ := s.Device(id)
	assert.Equal(t, int64(16), d.Custom["cpu_cores"])
	assert.Equal(t, 1.5, d.Custom["ratio"])
	assert.Equal(t, int64(16), s.PatchLog()[0].Body["custom_fields"].(map[string]any)["cpu_cores"])

	resp, body = r.do("PATCH", path, nil, `{"custom_fields":{"cpu_cores":16.0}}`)
	assert.Equal(t, 400, resp.StatusCode)
	assert.Contains(t, fmt.Sprint(body["custom_fields"]), "Value must be an integer.")
	resp, _ = r.do("PATCH", path, nil, `{"custom_fields":{"cpu_cores":1e400}}`)
	assert.Equal(t, 400, resp.StatusCode, "a number beyond float64 is no dictionary")
}

// An outage answers every route with its status, before queued faults (kept for after it) and before the
// token check; calls are still counted; SetOutage(0) ends it.
func TestOutageAnswersEveryRouteUntilCleared(t *testing.T) {
	s, base := start(t, netboxsim.Options{})
	id := s.AddDevice(netboxsim.Device{})
	r := raw{t, base}
	s.InjectFault(netboxsim.Fault{Method: "GET", Route: netboxsim.RouteDevice, Status: 429})
	s.SetOutage(503)
	for _, p := range []string{"/api/status/", "/api/dcim/devices/", fmt.Sprintf("/api/dcim/devices/%d/", id), "/api/extras/custom-fields/"} {
		resp, _ := r.do("GET", p, nil, "")
		assert.Equal(t, 503, resp.StatusCode, p)
	}
	assert.Equal(t, 1, s.Calls("GET", netboxsim.RouteDevice))
	s.SetOutage(0)
	resp, _ := r.do("GET", fmt.Sprintf("/api/dcim/devices/%d/", id), nil, "")
	assert.Equal(t, 429, resp.StatusCode, "the queued fault waited for the outage to end")
	resp, _ = r.do("GET", "/api/status/", nil, "")
	assert.Equal(t, 200, resp.StatusCode)
}

func TestCallLogTellsListingsApartAndPatchesAreTimed(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); now = now.Add(time.Second); return now }
	s, base := start(t, netboxsim.Options{Clock: clock})
	seedStandard(s)
	id := s.AddDevice(netboxsim.Device{Custom: map[string]any{"o2ims_managed": true}})
	r := raw{t, base}

	r.do("GET", "/api/dcim/devices/?status=staged", nil, "")
	assert.Empty(t, s.CallLog(), "off by default")
	s.LogCalls(true)
	r.do("GET", "/api/dcim/devices/?last_updated__gte=2026-01-01T00:00:00Z&limit=1000", nil, "")
	r.do("GET", "/api/dcim/devices/?status=staged&cf_o2ims_managed=true", nil, "")
	resp, _ := r.do("PATCH", fmt.Sprintf("/api/dcim/devices/%d/", id), nil, `{"status":"active"}`)
	require.Equal(t, 200, resp.StatusCode)
	s.LogCalls(false)
	r.do("GET", "/api/dcim/sites/", nil, "")

	log := s.CallLog()
	require.Len(t, log, 3, "only while on")
	assert.Equal(t, []string{"GET", netboxsim.RouteDevices}, []string{log[0].Method, log[0].Route})
	assert.Equal(t, "2026-01-01T00:00:00Z", log[0].Query.Get("last_updated__gte"))
	assert.Equal(t, "staged", log[1].Query.Get("status"))
	assert.False(t, log[1].Query.Has("last_updated__gte"))
	assert.Equal(t, []string{"PATCH", netboxsim.RouteDevice}, []string{log[2].Method, log[2].Route})
	assert.True(t, log[0].At.Before(log[1].At) && log[1].At.Before(log[2].At), "arrival times from the clock")
	assert.Equal(t, 3, s.Calls("GET", netboxsim.RouteDevices), "the counters are unchanged")

	log[0].Query.Set("last_updated__gte", "changed")
	assert.Equal(t, "2026-01-01T00:00:00Z", s.CallLog()[0].Query.Get("last_updated__gte"), "a copy")

	patches := s.PatchLog()
	require.Len(t, patches, 1)
	assert.True(t, patches[0].At.After(log[2].At), "answered after it arrived")
}
