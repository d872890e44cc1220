package main

import (
	"fmt"
	"strings"
	"time"
)

// Targets of the side-by-side section (issue 27, item 6).
const (
	targetRequestWrites = 4.0  // request writes (object and status PATCHes) per fulfilled request, QPS 100
	targetSideRate      = 25.0 // fulfilled/s at QPS 100 with the world moving every 0.3 s
	targetPeerRatio     = 1.2  // ours ÷ the peer's, fulfilled/s and deleted/s (issue 39)
	// targetLatencyRatio: our p99 latencies ÷ the peer's at the same burst; the tenth above 1 keeps a
	// one-request run (tens of milliseconds) from flipping on scheduling noise.
	targetLatencyRatio = 1.1
)

// latencySummary is the Summary's rows of latency (issue 39, item 4), the primary configuration.
func (r *report) latencySummary(p printer, world string) {
	sb := r.SideBySide
	if l, ok := sb.Ours.latencyAtN(1); ok {
		p("| one request alone (%s): create → fulfilled p99 ≤ %s, delete → gone p99 ≤ %s (%s) | %s / %s | %s |\n",
			timesAlone(), durS(targetFulfilP99One), durS(targetDeleteP99One), world, durS(l.FulfilP99), durS(l.DeleteP99),
			yes(l.complete() && l.FulfilP99 <= targetFulfilP99One && l.DeleteP99 <= targetDeleteP99One))
	}
	if sb.PeerErr != "" {
		return
	}
	for _, n := range append(append([]int{}, latencySizes...), sb.N) {
		o, ok1 := sb.Ours.latencyAtN(n)
		pe, ok2 := sb.Peer.latencyAtN(n)
		if !ok1 || !ok2 {
			continue
		}
		within := func(ours, peer time.Duration) bool { return ours.Seconds() <= targetLatencyRatio*peer.Seconds() }
		p("| %s: p99 create → fulfilled and delete → gone ≤ %.1f× the peer's (%s) | ours %s / %s; the peer %s / %s | %s |\n",
			atOnce(n), targetLatencyRatio, world, durS(o.FulfilP99), durS(o.DeleteP99), durS(pe.FulfilP99), durS(pe.DeleteP99),
			yes(o.complete() && within(o.FulfilP99, pe.FulfilP99) && within(o.DeleteP99, pe.DeleteP99)))
	}
}

// sideBySideSummary is the Summary's rows of section 8.
func (r *report) sideBySideSummary(p printer) {
	sb := r.SideBySide
	if sb == nil {
		return
	}
	o, pe := sb.Ours, sb.Peer
	world := sb.Config.String()
	p("| ≤ %.1f request writes per fulfilled request (%s) | %.2f (%s); the peer %s | %s |\n",
		targetRequestWrites, world, o.WritesPerRequest(), patchesOf(o), sb.peerOr(func(c contenderRun) string {
			return fmt.Sprintf("%.2f (%s)", c.WritesPerRequest(), patchesOf(c))
		}), yes(o.WritesPerRequest() <= targetRequestWrites && o.Fulfilled == sb.N))
	p("| ≥ %.0f fulfilled/s (%s) | %.1f/s | %s |\n", targetSideRate, world, o.Rate, yes(o.Rate >= targetSideRate && o.Fulfilled == sb.N))
	beats := sb.PeerErr == "" && o.Rate >= pe.Rate && o.DelRate >= pe.DelRate && o.Fulfilled == sb.N
	p("| throughput ≥ the controller-runtime peer measured in the same run (%s) | ours %.1f fulfilled/s, %.1f deleted/s; the peer %s | %s |\n",
		world, o.Rate, o.DelRate, sb.peerOr(func(c contenderRun) string {
			return fmt.Sprintf("%.1f fulfilled/s, %.1f deleted/s", c.Rate, c.DelRate)
		}), yes(beats))
	r.configsSummary(p)
	r.controlSummary(p)
	r.latencySummary(p, world)
	p("| every state a request ends in written exactly once (%s) | ours: %s; the peer: %s | %s |\n",
		world, finalWrites(o), sb.peerOr(finalWrites), yes(o.FinalOnce()))
	p("| no Event lost (%s) | due / held by the API server: ours %.0f / %d; the peer %s | %s |\n",
		world, o.EventsDue, o.EventsHeld, sb.peerOr(func(c contenderRun) string {
			return fmt.Sprintf("%.0f / %d", c.EventsDue, c.EventsHeld)
		}), yes(o.EventsDue > 0 && float64(o.EventsHeld) == o.EventsDue))
}

func patchesOf(c contenderRun) string {
	n := float64(max(c.Fulfilled, 1))
	return fmt.Sprintf("%.2f status, %.2f object PATCHes", c.StatusPatches/n, c.ObjectPatches/n)
}

// finalWrites says how many requests had their final state written how many times.
func finalWrites(c contenderRun) string {
	var parts []string
	for _, k := range sortedKeys(c.FinalWrites) {
		parts = append(parts, fmt.Sprintf("%d requests × %d", c.FinalWrites[k], k))
	}
	if len(parts) == 0 {
		return "none ended"
	}
	return strings.Join(parts, ", ")
}

// sideBySideSection is section 8.
func (r *report) sideBySideSection(p printer) {
	sb := r.SideBySide
	if sb == nil {
		return
	}
	p("## 8. Side by side with a controller-runtime peer, at two client limits and two paces of the world\n\n")
	p("The operator and `tests/bench/peer` — the same chain without NetBox (validate, Porch PackageVariant, CAPI Cluster, "+
		"the same statuses and the same Events: Created when its PackageVariant POST succeeds, Progressing / Fulfilled / "+
		"Failed on a state change, Deleted when its PackageVariant DELETE succeeds or finds nothing, with the operator's "+
		"types, reasons and messages; the PackageVariant deleted and the finalizer removed on delete) written as a "+
		"controller-runtime v0.25.2 operator (unstructured objects read from its cache, a REST client and so a token bucket "+
		"per kind, its Events through controller-runtime's recorder, 8 workers) — one after the other on one stack per pace of the world (its delays are fixed when it starts), both as "+
		"the shipped ServiceAccount, without NetBox. The tables first show the primary configuration in full: both at `%s`, "+
		"the world moving every %s: Porch reports a PackageVariant rendered %s after it appears, and its Cluster is Pending, "+
		"Provisioning %s later and provisioned %s after that. Each creates %d requests at once (a fast admin client, 64 callers), "+
		"then deletes them at once. Each configuration runs in %d rounds, the second in the reverse order (the peer "+
		"first, fresh processes and requests): fulfilled/s and deleted/s are the rounds' mean, each round in brackets; "+
		"everything else is the first round's. Request writes are the PATCHes of provisioningrequests (object and /status) the API "+
		"server served for the run, until none came for 2 s; a final state's writes are the versions a watch saw whose "+
		"provisioningStatus changed to the state the request ended in. Events due are those each contender handed to its "+
		"recorder over the load and the deletion (`o2ims_events_posted_total`), held those the API server has about the "+
		"run's requests once no Event write came for 2 s after the last request was gone. CPU per fulfilled request is "+
		"measured from the first create to the last fulfilled, CPU per deleted request from the first DELETE to the last gone.\n\n",
		strings.Join(sb.Config.Limits.flags(), " "), sb.Config.World, sb.Config.World, sb.Config.World, sb.Config.World, sb.N, sideRounds)
	p("What `--kube-api-qps` / `--kube-api-burst` mean, the same for both: a client-side token bucket **per API resource**, " +
		"that many calls per second with that many in hand, a subresource such as `/status` in its resource's bucket; reads " +
		"served from the informer caches take no token. The operator builds one REST client, and so one bucket, per resource " +
		"(`framework/clientlimits.go`; Events go through the typed client's, shared only with calls this path does not make); controller-runtime " +
		"builds one REST client per kind from the same `rest.Config` (`QPS`, `Burst`), and its event recorder a clientset of " +
		"its own. Neither has one bucket for all its calls.\n\n")
	if sb.PeerErr != "" {
		p("The peer was not measured: %s\n\n", sb.PeerErr)
	}
	p("| | o2ims-operator | controller-runtime peer |\n|---|--:|--:|\n")
	row := func(what string, f func(contenderRun) string) {
		p("| %s | %s | %s |\n", what, f(sb.Ours), sb.peerOr(f))
	}
	row("fulfilled / failed", func(c contenderRun) string { return fmt.Sprintf("%d / %d", c.Fulfilled, c.Failed) })
	row("first create → last fulfilled", func(c contenderRun) string { return fmt.Sprintf("%.1f s", c.Total.Seconds()) })
	row("**fulfilled/s**, the mean (each round)", func(c contenderRun) string { return fmt.Sprintf("**%.1f**%s", c.Rate, roundsOf(c.Rounds)) })
	row("**deleted/s**, the mean (each round)", func(c contenderRun) string { return fmt.Sprintf("**%.1f**%s", c.DelRate, roundsOf(c.DelRounds)) })
	if cl := sb.Ceiling; cl.Rate > 0 {
		row(fmt.Sprintf("share of the world-alone ceiling (%.1f Clusters/s)", cl.Rate), func(c contenderRun) string {
			return fmt.Sprintf("%.0f %%", 100*c.Rate/cl.Rate)
		})
	}
	row("**request writes per fulfilled request**", func(c contenderRun) string { return fmt.Sprintf("**%.2f**", c.WritesPerRequest()) })
	row("status PATCHes / object PATCHes per request", func(c contenderRun) string {
		n := float64(max(c.Fulfilled, 1))
		return fmt.Sprintf("%.2f / %.2f", c.StatusPatches/n, c.ObjectPatches/n)
	})
	row("distinct statuses seen per request", func(c contenderRun) string { return fmt.Sprintf("%.2f", c.StatusesPerRequest) })
	row("final state written", finalWrites)
	row("events due / held (load and deletion)", func(c contenderRun) string { return fmt.Sprintf("%.0f / %d", c.EventsDue, c.EventsHeld) })
	row("CPU: contender / kube-apiserver (cores)", func(c contenderRun) string {
		return fmt.Sprintf("%.2f / %.2f", c.CPU.Cores("operator"), c.CPU.Cores("kube-apiserver"))
	})
	row("CPU per fulfilled request: contender / kube-apiserver (core-ms)", func(c contenderRun) string {
		return fmt.Sprintf("%.1f / %.1f", 1000*c.cpuPer("operator"), 1000*c.cpuPer("kube-apiserver"))
	})
	row("CPU per deleted request: contender / kube-apiserver (core-ms)", func(c contenderRun) string {
		return cpuMs(c.cpuPerDeleted)
	})
	row("other processes meanwhile", func(c contenderRun) string { return foreign(c.CPU) })
	row("note", func(c contenderRun) string { return c.Note })
	r.waitsTable(p)
	r.controlTable(p)
	r.configsTable(p)
	p("\nBoth write a request only when its status or metadata changes. The peer sends a write waiting for the " +
		"client-side limiter as it was computed; ours sends a status that only reports progress (a new message in the " +
		"same state) only when its bucket has a token free at once, else holds it and sends the newest later " +
		"(framework/yield.go), so under a full bucket it may skip a progress message, never a state. The distinct " +
		"statuses seen per request above are what each wrote.\n\n")
}

// waitsTable is where each request waited (issue 39, item 1) and its latency (item 4), both contenders
// from the same run.
func (r *report) waitsTable(p printer) {
	sb := r.SideBySide
	p("\n**Where a request waits** (each contender's own metrics over the phase: client-go's limiter and " +
		"workqueue families, the same buckets in both; p50/p99 interpolated inside buckets, so the workqueue's " +
		"decade buckets make its quantiles coarse). Calls include Events; the peer reads from its cache.\n\n")
	p("| %d requests at once | o2ims-operator | controller-runtime peer |\n|---|--:|--:|\n", sb.N)
	for _, phase := range []struct {
		what  string
		w     func(contenderRun) waits
		n     func(contenderRun) int
		calls func(contenderRun) apiRequests
	}{
		{"fulfil", func(c contenderRun) waits { return c.FulfilWaits }, func(c contenderRun) int { return c.Fulfilled },
			func(c contenderRun) apiRequests { return c.FulfilCalls }},
		{"delete", func(c contenderRun) waits { return c.DelWaits }, func(c contenderRun) int { return c.Deleted },
			func(c contenderRun) apiRequests { return c.DelCalls }},
	} {
		ours := waitRows(phase.what, phase.n(sb.Ours), phase.w(sb.Ours))
		peer := waitRows(phase.what, phase.n(sb.Peer), phase.w(sb.Peer))
		served := func(c contenderRun) string { return topWrites(phase.calls(c).ByResource, phase.n(c), 0.05) }
		watched := func(c contenderRun) string { return topWrites(phase.calls(c).Watched, phase.n(c), 0.05) }
		answered := func(c contenderRun) string { return answerTimes(phase.calls(c), phase.n(c)) }
		sized := func(c contenderRun) string { return watchSizes(phase.calls(c), phase.n(c)) }
		ours = append(ours, phase.what+": calls the API server served per request, everyone's (the world's too), by resource and verb", served(sb.Ours),
			phase.what+": the API server's answer time per call, the mean, by resource and verb (what a worker waits on)", answered(sb.Ours),
			phase.what+": watch events it sent per request, to every watcher, by resource", watched(sb.Ours),
			phase.what+": bytes per watch event, the mean, by resource", sized(sb.Ours))
		peer = append(peer, "", served(sb.Peer), "", answered(sb.Peer), "", watched(sb.Peer), "", sized(sb.Peer))
		for i := 0; i+1 < len(ours); i += 2 {
			v := peer[i+1]
			if sb.PeerErr != "" {
				v = "not measured"
			}
			p("| %s | %s | %s |\n", ours[i], ours[i+1], v)
		}
	}
	p("\n**Latency** per request: create returned → `fulfilled` seen, first DELETE sent → gone seen (a watch), "+
		"p50 / p99, at N requests created (then deleted) at once, one request alone %s, its samples pooled; the world "+
		"alone needs %s from a PackageVariant to a provisioned Cluster.\n\n| N at once | o2ims-operator | "+
		"controller-runtime peer |\n|---|--:|--:|\n", timesAlone(), 3*worldStep)
	for _, n := range append(append([]int{}, latencySizes...), sb.N) {
		f := func(c contenderRun) string {
			if l, ok := c.latencyAtN(n); ok {
				return l.String()
			}
			return "not measured"
		}
		p("| %s | %s | %s |\n", atOnce(n), f(sb.Ours), sb.peerOr(f))
	}
	cl := sb.Ceiling
	p("\n**The world alone** (the ceiling): before either contender, the bench created %d PackageVariants as the "+
		"operator writes them, at once (64 callers), with no operator running; the world brought %d Clusters to "+
		"Available %.1f s after the first create: **%.1f Clusters/s**, with kube-apiserver at %.2f cores and other "+
		"processes at %s. %s\n\n", cl.N, cl.Available, cl.Total.Seconds(), cl.Rate, cl.CPU.Cores("kube-apiserver"),
		foreign(cl.CPU), cl.Note)
}

// cpuPer is a process's core-seconds per fulfilled request over the load (creates to the last fulfilled).
func (r contenderRun) cpuPer(name string) float64 {
	return r.CPU.ByPid[name] / float64(max(r.Fulfilled, 1))
}
