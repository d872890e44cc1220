package main

import (
	"fmt"
	"strings"
)

// Targets of the side-by-side section (issue 27, item 6).
const (
	targetRequestWrites = 4.0  // request writes (object and status PATCHes) per fulfilled request, QPS 100
	targetSideRate      = 25.0 // fulfilled/s at QPS 100 with the world moving every 0.3 s
)

// sideBySideSummary is the Summary's rows of section 8.
func (r *report) sideBySideSummary(p printer) {
	sb := r.SideBySide
	if sb == nil {
		return
	}
	o, pe := sb.Ours, sb.Peer
	world := fmt.Sprintf("QPS 100 / burst 200, world moving every %s", worldStep)
	p("| ≤ %.1f request writes per fulfilled request (%s) | %.2f (%s); the peer %s | %s |\n",
		targetRequestWrites, world, o.WritesPerRequest(), patchesOf(o), peerOr(sb, func(c contenderRun) string {
			return fmt.Sprintf("%.2f (%s)", c.WritesPerRequest(), patchesOf(c))
		}), yes(o.WritesPerRequest() <= targetRequestWrites && o.Fulfilled == sb.N))
	p("| ≥ %.0f fulfilled/s (%s) | %.1f/s | %s |\n", targetSideRate, world, o.Rate, yes(o.Rate >= targetSideRate && o.Fulfilled == sb.N))
	beats := sb.PeerErr == "" && o.Rate >= pe.Rate && o.DelRate >= pe.DelRate && o.Fulfilled == sb.N
	p("| throughput ≥ the controller-runtime peer measured in the same run (%s) | ours %.1f fulfilled/s, %.1f deleted/s; the peer %s | %s |\n",
		world, o.Rate, o.DelRate, peerOr(sb, func(c contenderRun) string {
			return fmt.Sprintf("%.1f fulfilled/s, %.1f deleted/s", c.Rate, c.DelRate)
		}), yes(beats))
	p("| every state a request ends in written exactly once (%s) | ours: %s; the peer: %s | %s |\n",
		world, finalWrites(o), peerOr(sb, finalWrites), yes(o.FinalOnce()))
	p("| no Event lost (%s) | due / held by the API server: ours %.0f / %d; the peer %s | %s |\n",
		world, o.EventsDue, o.EventsHeld, peerOr(sb, func(c contenderRun) string {
			return fmt.Sprintf("%.0f / %d", c.EventsDue, c.EventsHeld)
		}), yes(o.EventsDue > 0 && float64(o.EventsHeld) == o.EventsDue))
}

func peerOr(sb *sideBySide, f func(contenderRun) string) string {
	if sb.PeerErr != "" {
		return "not measured (" + sb.PeerErr + ")"
	}
	return f(sb.Peer)
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
	p("## 8. Side by side with a controller-runtime peer, the world moving every %s\n\n", worldStep)
	p("The operator and `tests/bench/peer` — the same chain without NetBox (validate, Porch PackageVariant, CAPI Cluster, "+
		"the same statuses and events; the PackageVariant deleted and the finalizer removed on delete) written as a "+
		"controller-runtime v0.25.2 operator (unstructured objects read from its cache, a REST client and so a token bucket "+
		"per kind, 8 workers) — one after the other on one stack, both as the shipped ServiceAccount at `%s`, without NetBox. "+
		"The world moves every %s: Porch reports a PackageVariant rendered %s after it appears, and its Cluster is Pending, "+
		"Provisioning %s later and provisioned %s after that. Each creates %d requests at once (a fast admin client, 64 callers), "+
		"then deletes them at once. Request writes are the PATCHes of provisioningrequests (object and /status) the API "+
		"server served for the run, until none came for 2 s; a final state's writes are the versions a watch saw whose "+
		"provisioningStatus changed to the state the request ended in.\n\n",
		strings.Join(peerArgs, " "), worldStep, worldStep, worldStep, worldStep, sb.N)
	if sb.PeerErr != "" {
		p("The peer was not measured: %s\n\n", sb.PeerErr)
	}
	p("| | o2ims-operator | controller-runtime peer |\n|---|--:|--:|\n")
	row := func(what string, f func(contenderRun) string) {
		p("| %s | %s | %s |\n", what, f(sb.Ours), peerOr(sb, f))
	}
	row("fulfilled / failed", func(c contenderRun) string { return fmt.Sprintf("%d / %d", c.Fulfilled, c.Failed) })
	row("first create → last fulfilled", func(c contenderRun) string { return fmt.Sprintf("%.1f s", c.Total.Seconds()) })
	row("**fulfilled/s**", func(c contenderRun) string { return fmt.Sprintf("**%.1f**", c.Rate) })
	row("**deleted/s**", func(c contenderRun) string { return fmt.Sprintf("**%.1f**", c.DelRate) })
	row("**request writes per fulfilled request**", func(c contenderRun) string { return fmt.Sprintf("**%.2f**", c.WritesPerRequest()) })
	row("status PATCHes / object PATCHes per request", func(c contenderRun) string {
		n := float64(max(c.Fulfilled, 1))
		return fmt.Sprintf("%.2f / %.2f", c.StatusPatches/n, c.ObjectPatches/n)
	})
	row("distinct statuses seen per request", func(c contenderRun) string { return fmt.Sprintf("%.2f", c.StatusesPerRequest) })
	row("final state written", finalWrites)
	row("events due / held", func(c contenderRun) string { return fmt.Sprintf("%.0f / %d", c.EventsDue, c.EventsHeld) })
	row("CPU: contender / kube-apiserver (cores)", func(c contenderRun) string {
		return fmt.Sprintf("%.2f / %.2f", c.CPU.Cores("operator"), c.CPU.Cores("kube-apiserver"))
	})
	row("other processes meanwhile", func(c contenderRun) string { return foreign(c.CPU) })
	row("note", func(c contenderRun) string { return c.Note })
	p("\nBoth write a request only when its status or metadata changes; a write waiting for the client-side " +
		"limiter is sent as it was computed (not superseded by a newer one), so the distinct statuses seen per request " +
		"above are what each wrote.\n\n")
}
