package main

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
)

// The refresh's listings are told from the claim path's by query, as the operator's client sends them.
func TestCallKindTellsTheRefreshFromTheClaimPath(t *testing.T) {
	get := func(route, query string) netboxsim.CallRecord {
		q, err := url.ParseQuery(query)
		assert.NoError(t, err)
		return netboxsim.CallRecord{Method: http.MethodGet, Route: route, Query: q}
	}
	for _, c := range []struct {
		call    netboxsim.CallRecord
		kind    string
		refresh bool
	}{
		{get(netboxsim.RouteDevices, "ordering=id&limit=1000&offset=0&last_updated__gte=2026-01-01T00:00:00Z"), kindRefreshChanges, true},
		{get(netboxsim.RouteDevices, "ordering=id&limit=1000&offset=0&cf_o2ims_managed=true"), kindRefreshFull, true},
		{get(netboxsim.RouteDevices, "status=staged&cf_o2ims_managed=true&cf_o2ims_request_uid__empty=true&limit=50"), kindSearch, false},
		{get(netboxsim.RouteSites, "ordering=id&limit=1000"), kindRefreshSites, true},
		{get(netboxsim.RouteDeviceTypes, "last_updated__gte=2026-01-01T00:00:00Z"), kindRefreshTypes, true},
		{get(netboxsim.RouteDevice, ""), "GET device", false},
		{netboxsim.CallRecord{Method: http.MethodPatch, Route: netboxsim.RouteDevice}, "PATCH device", false},
	} {
		kind, refresh := callKind(c.call)
		assert.Equal(t, c.kind, kind, c.call.Query.Encode())
		assert.Equal(t, c.refresh, refresh, c.call.Query.Encode())
	}

	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	log := []netboxsim.CallRecord{get(netboxsim.RouteSites, ""), get(netboxsim.RouteDevice, ""), get(netboxsim.RouteDevice, ""), get(netboxsim.RouteSites, "")}
	for i := range log {
		log[i].At = t0.Add(time.Duration(i) * time.Second)
	}
	c := countCalls(log, t0, t0.Add(2*time.Second)) // (from, to]: the first is out
	assert.Equal(t, callCount{Kinds: map[string]int{"GET device": 2}, Other: 2}, c)
	assert.Equal(t, t0.Add(2*time.Second), lastOtherCall(log, t0))
	assert.True(t, lastOtherCall(log, t0.Add(2*time.Second)).IsZero())
}

func TestServedOrderCountsClaimsNotByTheOldestWaiting(t *testing.T) {
	claim := func(uid string) netboxsim.PatchRecord {
		return netboxsim.PatchRecord{Committed: true, Body: map[string]any{"status": "active", "custom_fields": map[string]any{ownerField: uid}}}
	}
	release := netboxsim.PatchRecord{Committed: true, Body: map[string]any{"status": "staged", "custom_fields": map[string]any{ownerField: nil}}}
	lost := claim("b")
	lost.Committed, lost.Status = false, http.StatusPreconditionFailed
	uids := map[string]string{"a": "w0", "b": "w1", "c": "w2"}
	served, out := servedOrder([]netboxsim.PatchRecord{claim("a"), release, lost, claim("c"), claim("b"), claim("other")}, []string{"w0", "w1", "w2"}, uids)
	assert.Equal(t, []string{"w0", "w2", "w1"}, served)
	assert.Equal(t, 1, out, "w2 before w1; w1 then is the oldest left")
	assert.True(t, isRelease(release))
	assert.False(t, isRelease(claim("a")))
}

// The section and its summary rows render without a formatting error, measured or not.
func TestNetBoxScaleReportRenders(t *testing.T) {
	for _, n := range []nbScaleResult{{}, {Hosts: 20, Stopped: "race: not within 2m0s"}, sampleScaleResult()} {
		var b strings.Builder
		p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
		r := &report{NetBoxScale: n}
		r.netboxScaleSummary(p)
		r.netboxScaleSection(p)
		assert.NotContains(t, b.String(), "%!", b.String())
	}
}

func sampleScaleResult() nbScaleResult {
	calls := callCount{Kinds: map[string]int{kindSearch: 10, "GET device": 10, "PATCH device": 10, kindRefreshSites: 1}, Other: 30, Refresh: 1}
	return nbScaleResult{
		Hosts: 20, RefreshInterval: 10 * time.Second, Took: time.Minute,
		Seq:     nbSeq{Requests: 5, Claimed: 15, Calls: calls, Took: time.Second},
		Race:    nbRace{Requests: 50, Winners: 20, Committed: 20, Fulfilled: 20, Waiting: 30, Calls: calls, Measured: true, Quiet: true},
		Idle:    nbIdle{For: time.Minute, Waiting: 30, Calls: calls, Refreshes: 6, Measured: true},
		Release: nbRelease{Waiters: 2, Samples: []releaseSample{{Freed: "a", Device: 1, Latency: time.Second, Claimer: "w0"}, {Freed: "b", Device: 2}}, Served: []string{"w0"}, Measured: true},
		Refresh: nbRefresh{Devices: 10000, Refreshes: 3, For: 30 * time.Second, Calls: calls, Measured: true},
		Scale:   nbScale{Devices: 10000, Requests: 1000, Fulfilled: 990, Failed: 10, Calls: calls, Committed: 990, Double: []string{"device 3: 2 committed claims"}, Message: "x: failed", Measured: true},
	}
}
