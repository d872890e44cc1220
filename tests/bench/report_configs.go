package main

import (
	"fmt"
	"strings"
)

// peerOr is f of the configuration's peer run, or why it was not measured.
func (cr configRun) peerOr(f func(contenderRun) string) string {
	if cr.PeerErr != "" {
		return "not measured (" + cr.PeerErr + ")"
	}
	return f(cr.Peer)
}

// ratios are ours ÷ the peer's fulfilled/s and deleted/s (ok false when the peer was not measured).
func (cr configRun) ratios() (fulfil, del float64, ok bool) {
	if cr.PeerErr != "" {
		return 0, 0, false
	}
	return cr.Ours.Rate / max(cr.Peer.Rate, 0.001), cr.Ours.DelRate / max(cr.Peer.DelRate, 0.001), true
}

// complete says whether ours fulfilled and deleted all n (a rate of fewer is not a rate of the run).
func (cr configRun) complete(n int) bool { return cr.Ours.Fulfilled == n && cr.Ours.Deleted == n }

// cpuPerDeleted is a process's core-seconds per deleted request over the deletion (first DELETE to gone).
func (r contenderRun) cpuPerDeleted(name string) float64 {
	return r.DelCPU.ByPid[name] / float64(max(r.Deleted, 1))
}

// cpuMs is a contender's CPU per request, contender / kube-apiserver, in core-ms.
func cpuMs(per func(string) float64) string {
	return fmt.Sprintf("%.1f / %.1f", 1000*per("operator"), 1000*per("kube-apiserver"))
}

// cpuNotAbove says whether ours costs no more CPU per request than the peer, contender and
// kube-apiserver, fulfil and delete.
func (cr configRun) cpuNotAbove() bool {
	o, pe := cr.Ours, cr.Peer
	for _, name := range []string{"operator", "kube-apiserver"} {
		if o.cpuPer(name) > pe.cpuPer(name) || o.cpuPerDeleted(name) > pe.cpuPerDeleted(name) {
			return false
		}
	}
	return cr.PeerErr == ""
}

// configsTable is every configuration side by side (issue 39, item 2): a column per configuration, each
// cell ours then the peer's.
func (r *report) configsTable(p printer) {
	sb := r.SideBySide
	all := sb.all()
	p("\n**Every configuration** (%d requests at once in each; the first column is the run above). Each contender "+
		"runs with the same flags: `%s` for QPS 100, and at the shipped defaults the operator without limit flags "+
		"(its defaults, `framework.DefaultQPS`/`DefaultBurst`) and the peer with `%s` (controller-runtime's own "+
		"config has no client-side limit). A world at zero delay reports a PackageVariant rendered and its Cluster "+
		"provisioned as soon as it sees them; its ceiling is measured on its own stack.\n\n",
		sb.N, strings.Join(limitsQPS100.flags(), " "), strings.Join(limitsShipped.flags(), " "))
	p("| ours; the peer |")
	for _, cr := range all {
		p(" %s |", cr.Config)
	}
	p("\n|---|%s\n", strings.Repeat("--:|", len(all)))
	row := func(what string, f func(configRun) string) {
		p("| %s |", what)
		for _, cr := range all {
			p(" %s |", f(cr))
		}
		p("\n")
	}
	both := func(f func(contenderRun) string) func(configRun) string {
		return func(cr configRun) string { return f(cr.Ours) + "; " + cr.peerOr(f) }
	}
	row("fulfilled / deleted", both(func(c contenderRun) string { return fmt.Sprintf("%d / %d", c.Fulfilled, c.Deleted) }))
	ratioOf := func(rate func(contenderRun) float64, rounds func(contenderRun) []float64) func(configRun) string {
		return func(cr configRun) string {
			s := fmt.Sprintf("**%.1f**%s; %s", rate(cr.Ours), roundsOf(rounds(cr.Ours)), cr.peerOr(func(c contenderRun) string {
				return fmt.Sprintf("%.1f%s", rate(c), roundsOf(rounds(c)))
			}))
			if cr.PeerErr == "" {
				s += fmt.Sprintf(" (%.2f×)", rate(cr.Ours)/max(rate(cr.Peer), 0.001))
			}
			return s
		}
	}
	row("**fulfilled/s**, the mean (each round) (ours ÷ the peer's)", ratioOf(func(c contenderRun) float64 { return c.Rate },
		func(c contenderRun) []float64 { return c.Rounds }))
	row("**deleted/s**, the mean (each round) (ours ÷ the peer's)", ratioOf(func(c contenderRun) float64 { return c.DelRate },
		func(c contenderRun) []float64 { return c.DelRounds }))
	row("share of the world-alone ceiling (its Clusters/s)", func(cr configRun) string {
		share := func(c contenderRun) string { return fmt.Sprintf("%.0f %%", 100*c.Rate/max(cr.Ceiling.Rate, 0.001)) }
		return fmt.Sprintf("%s; %s (%.1f)", share(cr.Ours), cr.peerOr(share), cr.Ceiling.Rate)
	})
	row("request writes per fulfilled request", both(func(c contenderRun) string { return fmt.Sprintf("%.2f", c.WritesPerRequest()) }))
	row("events due / held (load and deletion)", both(func(c contenderRun) string { return fmt.Sprintf("%.0f / %d", c.EventsDue, c.EventsHeld) }))
	row("CPU per fulfilled request, contender / kube-apiserver (core-ms)", both(func(c contenderRun) string { return cpuMs(c.cpuPer) }))
	row("CPU per deleted request, contender / kube-apiserver (core-ms)", both(func(c contenderRun) string { return cpuMs(c.cpuPerDeleted) }))
	row("other processes during the load", both(func(c contenderRun) string { return foreign(c.CPU) }))
	for _, cr := range all {
		if cr.Ours.Note != "" || cr.Peer.Note != "" {
			row("note", both(func(c contenderRun) string { return c.Note }))
			break
		}
	}
}

// configsSummary is the Summary's rows of every configuration: ahead of the peer by targetPeerRatio,
// no more CPU per request than the peer's, and the share of the ceiling.
func (r *report) configsSummary(p printer) {
	sb := r.SideBySide
	for _, cr := range sb.all() {
		fr, dr, ok := cr.ratios()
		got := "not measured (" + cr.PeerErr + ")"
		if ok {
			got = fmt.Sprintf("fulfilled %.2f× (%.1f vs %.1f/s), deleted %.2f× (%.1f vs %.1f/s)", fr, cr.Ours.Rate, cr.Peer.Rate,
				dr, cr.Ours.DelRate, cr.Peer.DelRate)
		}
		p("| fulfilled/s and deleted/s ≥ %.1f× the peer's (%s) | %s | %s |\n", targetPeerRatio, cr.Config, got,
			yes(ok && cr.complete(sb.N) && fr >= targetPeerRatio && dr >= targetPeerRatio))
	}
	for _, cr := range sb.all() {
		got := cr.peerOr(func(pe contenderRun) string {
			o := cr.Ours
			return fmt.Sprintf("fulfil: ours %s core-ms, the peer %s; delete: ours %s, the peer %s",
				cpuMs(o.cpuPer), cpuMs(pe.cpuPer), cpuMs(o.cpuPerDeleted), cpuMs(pe.cpuPerDeleted))
		})
		p("| CPU per fulfilled and per deleted request ≤ the peer's, contender / kube-apiserver (%s) | %s | %s |\n",
			cr.Config, got, yes(cr.complete(sb.N) && cr.cpuNotAbove()))
	}
	for _, cr := range sb.all() {
		cl := cr.Ceiling
		if cl.Rate <= 0 {
			continue
		}
		share := func(c contenderRun) string { return fmt.Sprintf("%.0f %%", 100*c.Rate/cl.Rate) }
		p("| fulfilled/s ≥ %.0f %% of the world-alone ceiling (%s) | ceiling %.1f Clusters/s; ours %s, the peer %s | %s |\n",
			100*targetCeilingShare, cr.Config, cl.Rate, share(cr.Ours), cr.peerOr(share),
			yes(cr.Ours.Fulfilled == sb.N && cr.Ours.Rate >= targetCeilingShare*cl.Rate))
	}
}
