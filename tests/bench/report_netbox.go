package main

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Section 4b's targets (issue 27, item 4). "Calls" are the simulator's count of every call but the shared
// inventory refresh's, which is counted apart (netbox_calls.go).
const (
	targetNBUncontended = 3.0 // calls per claimed host, requests one after another
	targetNBRace        = 4.0 // calls per claimed host until the race settled
	targetNBScale       = 4.0 // calls per claimed host, 1 000 requests at once over 10 000 devices
	targetNBRefresh     = 3.0 // the refresh's calls per refresh, NetBox idle: one changes-only listing each
	nbClaimSlack        = 2 * time.Second
)

// releaseTarget is the release → claim p99 target: a host freed anywhere is in the view within one
// refresh interval, and claimed within a couple of passes after.
func (n nbScaleResult) releaseTarget() time.Duration { return n.RefreshInterval + nbClaimSlack }

func perHost(calls, hosts int) float64 { return float64(calls) / float64(max(hosts, 1)) }

func (r *report) netboxScaleSummary(p printer) {
	n := r.NetBoxScale
	row := func(measured bool, target, figure string, met bool) {
		if !measured {
			figure, met = "not measured"+stoppedNote(n.Stopped), false
		}
		p("| %s | %s | %s |\n", target, figure, yes(met))
	}
	s := n.Seq
	row(s.Requests > 0, fmt.Sprintf("4b NetBox calls per claimed host, uncontended ≤ %.0f (the shared refresh's apart)", targetNBUncontended),
		fmt.Sprintf("%.2f (%d calls for %d hosts; the refresh's %d)", perHost(s.Calls.Other, s.Claimed), s.Calls.Other, s.Claimed, s.Calls.Refresh),
		perHost(s.Calls.Other, s.Claimed) <= targetNBUncontended)
	rc := n.Race
	row(rc.Measured, fmt.Sprintf("4b race, %d × 1 host over %d: calls per claimed host until settled ≤ %.0f; 0 double claims", rc.Requests, n.Hosts, targetNBRace),
		fmt.Sprintf("%.2f (%d calls, settled after %s: %d fulfilled, %d waiting); %d double claims", perHost(rc.Calls.Other, rc.Committed),
			rc.Calls.Other, rc.SettledAfter.Round(time.Millisecond), rc.Fulfilled, rc.Waiting, len(rc.Double)),
		perHost(rc.Calls.Other, rc.Committed) <= targetNBRace && len(rc.Double) == 0 && rc.Committed == rc.Winners)
	id := n.Idle
	row(id.Measured, "4b waiting over an exhausted pool: NetBox calls per waiting request per minute beyond the shared refresh = 0",
		fmt.Sprintf("%.2f (%d calls by %d waiting in %s; the refresh's %d apart)", id.perRequestMinute(), id.Calls.Other, id.Waiting, id.For.Round(time.Second), id.Calls.Refresh),
		id.Calls.Other == 0)
	sc := n.Scale
	row(sc.Measured, fmt.Sprintf("4b scale, %d devices, %d requests × 1 host at once: calls per claimed host ≤ %.0f; 0 double claims", sc.Devices, sc.Requests, targetNBScale),
		fmt.Sprintf("%s; %.2f per claimed host (%d calls, the refresh's %d apart); %d double claims; operator RSS max %s, peak %s",
			sc.outcome(), sc.perHost(), sc.Calls.Other, sc.Calls.Refresh, len(sc.Double), mib(sc.RSSMax), mib(sc.Peak)),
		sc.Settled && sc.Failed == 0 && sc.perHost() <= targetNBScale && len(sc.Double) == 0)
	rl := n.Release
	p50, p99, _, timedOut := rl.latencies()
	row(rl.Measured, fmt.Sprintf("4b release → claim of a waiting request: p99 ≤ the refresh interval + %s (%s)", nbClaimSlack, ms(n.releaseTarget())),
		fmt.Sprintf("p50 %s, p99 %s over %d samples (%d without a claim in %s)", ms(p50), ms(p99), len(rl.Samples), timedOut, nbClaimMax),
		len(rl.Samples) > 0 && p99 <= n.releaseTarget())
	row(rl.Measured, "4b fairness: waiting requests served in the order they were created (0 out of order)",
		fmt.Sprintf("%d of %d claims out of order", rl.OutOfOrder, len(rl.Served)), len(rl.Served) > 0 && rl.OutOfOrder == 0)
	rf := n.Refresh
	row(rf.Measured, fmt.Sprintf("4b the refresh's NetBox calls per refresh interval at %d devices, NetBox idle ≤ %.0f", rf.Devices, targetNBRefresh),
		fmt.Sprintf("%.2f (%d calls in %.0f refreshes)", rf.perRefresh(), rf.Calls.Refresh, rf.Refreshes),
		rf.Refreshes > 0 && rf.perRefresh() <= targetNBRefresh)
}

func stoppedNote(stopped string) string {
	if stopped == "" {
		return " (section not run)"
	}
	return " (4b stopped at " + stopped + ")"
}

// outcome: "1000 of 1000 fulfilled in 42.1s", or what was reached by nbScaleMax after the creates.
func (s nbScale) outcome() string {
	if !s.Settled {
		return fmt.Sprintf("not settled: %d of %d fulfilled, %d failed %s after the first create (followed for %s after the last)",
			s.Fulfilled, s.Requests, s.Failed, s.Took.Round(100*time.Millisecond), nbScaleMax)
	}
	out := fmt.Sprintf("%d of %d fulfilled in %s", s.Fulfilled, s.Requests, s.Took.Round(100*time.Millisecond))
	if s.Failed > 0 {
		out += fmt.Sprintf(", %d failed", s.Failed)
	}
	return out
}

func (r *report) netboxScaleSection(p printer) {
	n := r.NetBoxScale
	p("## 4b. NetBox: claims, waiting and the refresh\n\n")
	if n.Hosts == 0 {
		p("Not run (`--only`).\n\n")
		return
	}
	p("Stack N, a stack of its own: the NetBox 4.6 simulator with %d hosts (cpu_cores 32 for every third, else 16), "+
		"later grown to %d devices, and the operator as shipped: default `REQUEUE_INTERVAL`, `INVENTORY_REFRESH_INTERVAL` "+
		"(%s) and `INVENTORY_RESYNC_INTERVAL`. The simulator logs every call it receives with its query and arrival time, "+
		"and every PATCH with the time it was answered. A call is the shared inventory refresh's when it lists sites or "+
		"device types, or devices with `last_updated__gte` (changes only) or without a status filter (the full listing); "+
		"every other call — the host search (`status=staged`), device reads, PATCHes, schema and status checks — is "+
		"counted as the requests' (**calls** below), the refresh's apart. The section took %s; other processes used %s.\n\n",
		n.Hosts, n.Refresh.Devices, n.RefreshInterval, n.Took.Round(time.Second), foreign(n.CPU))
	if n.Stopped != "" {
		p("**Stopped** at %s; the phases after it were not measured.\n\n", n.Stopped)
	}
	r.netboxScaleKinds(p)
	r.netboxScaleClaims(p)
	r.netboxScaleWaiting(p)
	r.netboxScaleRelease(p)
	r.netboxScaleAtScale(p)
}

// netboxScaleKinds is the calls of every phase by kind.
func (r *report) netboxScaleKinds(p printer) {
	n := r.NetBoxScale
	cols := []struct {
		name  string
		calls callCount
	}{
		{"1. uncontended", n.Seq.Calls}, {"2. race, until settled", n.Race.Calls}, {fmt.Sprintf("3. waiting, %s", n.Idle.For.Round(time.Second)), n.Idle.Calls},
		{fmt.Sprintf("6. refresh at %d, %.0f refreshes", n.Refresh.Devices, n.Refresh.Refreshes), n.Refresh.Calls}, {"4. scale", n.Scale.Calls},
	}
	kinds := map[string]bool{}
	for _, c := range cols {
		for k := range c.calls.Kinds {
			kinds[k] = true
		}
	}
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	p("| call |")
	for _, c := range cols {
		p(" %s |", c.name)
	}
	p("\n|---|%s\n", strings.Repeat("--:|", len(cols)))
	for _, k := range names {
		p("| %s |", k)
		for _, c := range cols {
			p(" %d |", c.calls.Kinds[k])
		}
		p("\n")
	}
	p("| **calls** (all but the refresh's) |")
	for _, c := range cols {
		p(" **%d** |", c.calls.Other)
	}
	p("\n| the refresh's |")
	for _, c := range cols {
		p(" %d |", c.calls.Refresh)
	}
	p("\n\n")
}

func (r *report) netboxScaleClaims(p printer) {
	n := r.NetBoxScale
	s, rc := n.Seq, n.Race
	if s.Requests > 0 {
		p("**1. Uncontended**: %d requests one after another (each fulfilled before the next), each for one control-plane "+
			"host (`cpu_cores: 32`) and two workers (`cpu_cores: 16`): %d hosts claimed in %s with **%d calls = %.2f per "+
			"claimed host** (target ≤ %.0f: %s); the refresh made %d meanwhile.\n\n", s.Requests, s.Claimed, s.Took.Round(time.Millisecond),
			s.Calls.Other, perHost(s.Calls.Other, s.Claimed), targetNBUncontended, yes(perHost(s.Calls.Other, s.Claimed) <= targetNBUncontended), s.Calls.Refresh)
	}
	if !rc.Measured {
		return
	}
	p("**2. The race**: the uncontended requests deleted (every host free again), then %d requests for one host each (any "+
		"of the %d) created at once. Settled = %d fulfilled and the other %d showing the waiting status (“%s”), then no "+
		"call but the refresh's for %s: the final state was first seen after %s; ", rc.Requests, n.Hosts, rc.Winners,
		rc.Requests-rc.Winners, rc.Message, nbQuiet, rc.StateAfter.Round(time.Millisecond))
	if rc.Quiet {
		p("the last call before the quiet came after %s. ", rc.SettledAfter.Round(time.Millisecond))
	} else {
		p("calls went on for the %s looked at after it (the waiting requests', item 3), so the race is counted up to the final state. ", nbQuietMax)
	}
	p("Until then: **%d calls = %.2f per claimed host** (target ≤ %.0f: %s), %d claims committed, %d × 412; the refresh made %d. ",
		rc.Calls.Other, perHost(rc.Calls.Other, rc.Committed), targetNBRace, yes(perHost(rc.Calls.Other, rc.Committed) <= targetNBRace),
		rc.Committed, rc.Lost412, rc.Calls.Refresh)
	doubles(p, rc.Double)
	p("\n\n")
}

func doubles(p printer, d []string) {
	if len(d) == 0 {
		p("**No host claimed twice**: no device received two committed claims, no request owns two devices in NetBox, " +
			"and no two requests record the same host as claimed.")
		return
	}
	p("**Hosts claimed twice**: %s.", strings.Join(d, "; "))
}

func (r *report) netboxScaleWaiting(p printer) {
	id := r.NetBoxScale.Idle
	if !id.Measured {
		return
	}
	p("**3. Waiting**: right after the race settled, the %d waiting requests over the exhausted pool for %s with nothing "+
		"changing: **%d calls = %.2f per waiting request per minute** (target 0 beyond the shared refresh: %s); the refresh "+
		"made %d calls in %.0f refreshes (%s per refresh); %d PATCHes, %.0f handler passes.\n\n",
		id.Waiting, id.For.Round(time.Second), id.Calls.Other, id.perRequestMinute(), yes(id.Calls.Other == 0),
		id.Calls.Refresh, id.Refreshes, fmt.Sprintf("%.1f", float64(id.Calls.Refresh)/max(id.Refreshes, 1)), id.Patches, id.HandlerRuns)
}

func (r *report) netboxScaleRelease(p printer) {
	n := r.NetBoxScale
	rl := n.Release
	if !rl.Measured {
		return
	}
	p50, p99, worst, timedOut := rl.latencies()
	p("**5. Release → claim**: the race's waiting requests deleted, then %d requests for one host created one after "+
		"another, each once the previous one showed the waiting status; then the race's fulfilled requests deleted one at "+
		"a time, each after the previous freed host was claimed (or %s passed). Latency: from the release PATCH of the "+
		"deleted request's device (answered by the simulator: the device is free in NetBox) to the next committed claim "+
		"PATCH of that device. **p50 %s, p99 %s**, max %s over %d samples, %d without a claim within %s (counted as %s). "+
		"Target p99 ≤ `INVENTORY_REFRESH_INTERVAL` + %s = %s: %s. Why: a host freed anywhere — by another replica, or by "+
		"hand in NetBox — is in the operator's view after the next changes-only listing, at most one refresh interval "+
		"later, and then a waiting request needs a pass or two (record the candidate, claim it) to claim it; a release made "+
		"by this operator itself, as here, is written into its view at once and should wake a waiter within about a second.\n\n",
		rl.Waiters, nbClaimMax, ms(p50), ms(p99), ms(worst), len(rl.Samples), timedOut, nbClaimMax, nbClaimMax, nbClaimSlack,
		ms(n.releaseTarget()), yes(len(rl.Samples) > 0 && p99 <= n.releaseTarget()))
	p("| # | deleted | device | deletion → release | release → claim | claimed by |\n|--:|---|--:|--:|--:|---|\n")
	for i, s := range rl.Samples {
		lat, by := ms(s.Latency), s.Claimer
		if by == "" {
			lat, by = "—", fmt.Sprintf("nobody within %s", nbClaimMax)
		}
		p("| %d | %s | %d | %s | %s | %s |\n", i+1, s.Freed, s.Device, ms(s.DeleteToRelease), lat, by)
	}
	p("\n**Fairness**: the waiting requests' claims in commit order: %s. **%d of %d** went to another request than the "+
		"oldest one still waiting (target 0: %s).\n\n", strings.Join(rl.Served, ", "), rl.OutOfOrder, len(rl.Served),
		yes(len(rl.Served) > 0 && rl.OutOfOrder == 0))
}

func (r *report) netboxScaleAtScale(p printer) {
	n := r.NetBoxScale
	rf, sc := n.Refresh, n.Scale
	if rf.Measured {
		p("**6. The refresh at %d devices**: every request deleted, the pool grown from %d to %d devices (with their BMC "+
			"credentials, a Secret per hundred), and, once the view held them all, refreshes let pass until one listed "+
			"the changed devices in one page (those right after the growth re-read its last seconds: their overlap). "+
			"Then, from right after it, %.0f refreshes in %s with "+
			"NetBox idle: **%d calls = %.2f per refresh** (target ≤ %.0f: %s): %s; other calls %d. Operator RSS %s.\n\n",
			rf.Devices, n.Hosts, rf.Devices, rf.Refreshes, rf.For.Round(time.Second), rf.Calls.Refresh, rf.perRefresh(),
			targetNBRefresh, yes(rf.Refreshes > 0 && rf.perRefresh() <= targetNBRefresh), rf.Calls.describe(), rf.Calls.Other, mib(rf.RSS))
	}
	if !sc.Measured {
		return
	}
	p("**4. Scale**: then %d requests for one host each (any of the %d free) created at once (8 concurrent creates), "+
		"followed until all are fulfilled or %s: **%s**; **%d calls = %.2f per claimed host** (target ≤ %.0f: %s), %d "+
		"claims committed, %d × 412; the refresh made %d calls meanwhile. ", sc.Requests, sc.Devices, nbScaleMax, sc.outcome(),
		sc.Calls.Other, sc.perHost(), targetNBScale, yes(sc.perHost() <= targetNBScale), sc.Committed, sc.Lost412, sc.Calls.Refresh)
	doubles(p, sc.Double)
	p(" Operator RSS: %s before, at most %s while sampled every second, %s after; peak (VmHWM) %s.", mib(sc.RSSIdle),
		mib(sc.RSSMax), mib(sc.RSSEnd), mib(sc.Peak))
	if sc.Message != "" {
		p(" A failed request: %s.", sc.Message)
	}
	p("\n\n")
}
