package main

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
)

// The NetBox section's call accounting: every call the simulator logged, by kind. The inventory refresh
// (one shared listing of devices, sites and device types per INVENTORY_REFRESH_INTERVAL, and a full one
// at start and every INVENTORY_RESYNC_INTERVAL) is told apart from the claim path by route and query, so
// that what the requests cost can be counted without it.

// Kinds of calls. A device listing is the refresh's when it asks for what changed (last_updated__gte) or
// lists the whole pool (no status filter); the claim path's search asks for status=staged.
const (
	kindRefreshChanges = "GET devices ?last_updated__gte (refresh, changes only)"
	kindRefreshFull    = "GET devices, no status filter (refresh, full)"
	kindRefreshSites   = "GET sites (refresh)"
	kindRefreshTypes   = "GET device-types (refresh)"
	kindSearch         = "GET devices ?status= (host search)"
)

// callKind names a logged call's kind and says whether it is the refresh's.
func callKind(c netboxsim.CallRecord) (kind string, refresh bool) {
	if c.Method != http.MethodGet {
		return c.Method + " " + c.Route, false
	}
	switch c.Route {
	case netboxsim.RouteSites:
		return kindRefreshSites, true
	case netboxsim.RouteDeviceTypes:
		return kindRefreshTypes, true
	case netboxsim.RouteDevices:
		for k := range c.Query {
			if strings.HasPrefix(k, "last_updated") {
				return kindRefreshChanges, true
			}
		}
		if !c.Query.Has("status") {
			return kindRefreshFull, true
		}
		return kindSearch, false
	}
	return c.Method + " " + c.Route, false
}

// callCount is the calls of a window by kind, and the two totals.
type callCount struct {
	Kinds          map[string]int
	Refresh, Other int // the refresh's calls, and every other (the claim path's)
}

// countCalls counts the calls that arrived in (from, to].
func countCalls(log []netboxsim.CallRecord, from, to time.Time) callCount {
	out := callCount{Kinds: map[string]int{}}
	for _, c := range log {
		if !c.At.After(from) || c.At.After(to) {
			continue
		}
		k, refresh := callKind(c)
		out.Kinds[k]++
		if refresh {
			out.Refresh++
		} else {
			out.Other++
		}
	}
	return out
}

// lastOtherCall is when the last call that is not the refresh's arrived in (from, …) (zero: none).
func lastOtherCall(log []netboxsim.CallRecord, from time.Time) time.Time {
	for i := len(log) - 1; i >= 0 && log[i].At.After(from); i-- {
		if _, refresh := callKind(log[i]); !refresh {
			return log[i].At
		}
	}
	return time.Time{}
}

// describe lists the kinds, the most called first: "GET device 20, PATCH device 20".
func (c callCount) describe() string {
	keys := make([]string, 0, len(c.Kinds))
	for k := range c.Kinds {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if c.Kinds[keys[i]] != c.Kinds[keys[j]] {
			return c.Kinds[keys[i]] > c.Kinds[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, c.Kinds[k])
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// claimsIn are the committed claims (status set to active) among patches: device → their number, and
// the devices in commit order. Any device with more than one is a double claim.
func claimsIn(patches []netboxsim.PatchRecord) (perDevice map[int32]int, order []int32, lost412 int) {
	perDevice = map[int32]int{}
	for _, p := range patches {
		if p.Status == http.StatusPreconditionFailed {
			lost412++
		}
		if isClaim(p) {
			perDevice[p.DeviceID]++
			order = append(order, p.DeviceID)
		}
	}
	return perDevice, order, lost412
}

func isClaim(p netboxsim.PatchRecord) bool { return p.Committed && p.Body["status"] == "active" }

// isRelease: a committed PATCH that clears the owner field (netbox.Claims.Release).
func isRelease(p netboxsim.PatchRecord) bool {
	if !p.Committed {
		return false
	}
	cf, _ := p.Body["custom_fields"].(map[string]any)
	v, present := cf[ownerField]
	return present && v == nil
}

// claimOwner is the request uid a claim PATCH wrote.
func claimOwner(p netboxsim.PatchRecord) string {
	cf, _ := p.Body["custom_fields"].(map[string]any)
	s, _ := cf[ownerField].(string)
	return s
}

// ownerField is the device custom field that holds the owning request's uid (netboxsim.StandardFields).
const ownerField = "o2ims_request_uid"
