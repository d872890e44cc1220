package main

import "time"

// The failover section: two replicas with --leader-elect, the leader SIGKILLed under NBI load.
const (
	failoverRequests = 100
	failoverLease    = 15 * time.Second // the framework's LeaseDuration
	failoverRetry    = 2 * time.Second  // its RetryPeriod
)

// failoverBound is the latest a standby can take an unreleased Lease after the holder died: the Lease
// must have gone unrenewed for its duration as the standby observed it (up to a jittered retry period
// after the last renewal, which came at or before the kill), and the standby tries once per jittered
// retry period. client-go's jitter factor is 1.2 and wait.Jitter adds up to that many periods, so a
// jittered retry period is 1 to 2.2 retry periods.
const failoverBound = failoverLease + 2*failoverRetry*22/10

func (r *report) failoverOK() (reads, leader, twice bool) {
	f := r.Failover
	reads = f.SurvivorReads > 0 && f.SurvivorFailed == 0 && f.LeaderFailed == 0 && f.DeadRetryFailed == 0 && f.SurvivorCurrent == f.Total && f.Total > 0
	leader = f.NewLeaderAfter > 0 && f.NewLeaderAfter <= failoverBound
	twice = !f.HandledTwice()
	return
}

func (r *report) failoverSummary(p printer) {
	f := r.Failover
	reads, leader, twice := r.failoverOK()
	p("| failover (leader SIGKILLed under NBI load): zero failed reads of the survivor, answers current | %d reads of the survivor, %d failed; %d of %d requests answered `FULFILLED` by it afterwards; %d reads sent to the killed replica after the kill, %d unanswered and all %d answered by the survivor when sent there | %s |\n",
		f.SurvivorReads, f.SurvivorFailed, f.SurvivorCurrent, f.Total, f.DeadReads, f.DeadRefused, f.DeadRefused-f.DeadRetryFailed, yes(reads))
	p("| failover: a new leader within the Lease's bound (Lease %s; ≤ %s after the kill) | %s | %s |\n",
		failoverLease, failoverBound, secs(f.NewLeaderAfter.Seconds()), yes(leader))
	p("| failover: no request handled twice | %.0f PackageVariants created for %d requests created during the failover (%.0f creates settled by reading back one that existed); standby handler runs while the other led: %.0f | %s |\n",
		f.PackageVariantPOSTs["201"], f.Created, f.CreatesSettledByReadBack(), f.StandbyRunsBeforeLead, yes(twice))
}

func (r *report) failoverSection(p printer) {
	f := r.Failover
	p("## 6. Failover: the leader SIGKILLed under NBI load\n\n")
	if f.Total == 0 {
		p("Not run.\n\n")
		return
	}
	p("Stack B, two fresh operator processes with `--leader-elect` on a Lease of their own (`--leader-elect-id=o2ims-bench-failover`), "+
		"both selecting `%s=failover`, as `manifests/ha` runs them. %d requests are created and fulfilled first; then %d NBI clients "+
		"read them (named GETs, every tenth a list page), each sending its requests to the two replicas in turn as a Service spreads "+
		"connections over its ready endpoints, while a new request is created every 200 ms. After 5 s the leader is SIGKILLed; the load "+
		"goes on until 5 s after the survivor leads.\n\n", runLabel, failoverRequests, r.FailoverReaders)
	p("What \"zero failed reads\" means here: the survivor's answers. A read the killed replica can no longer answer (connection refused " +
		"or reset) is what a Service's clients meet until the endpoint is removed (its readiness probe fails, or the pod is deleted); " +
		"a client that retries another endpoint, as this one does, then gets it answered by the survivor. So: no read the survivor " +
		"answers fails, none of the retried ones fails, and its answers stay current (every request, also those created while nobody " +
		"led, is answered `FULFILLED` by it at the end).\n\n")
	reads, leader, twice := r.failoverOK()
	p("| | |\n|---|--:|\n")
	p("| reads of the survivor / failed | %d / %d |\n", f.SurvivorReads, f.SurvivorFailed)
	p("| reads of the leader before the kill / failed | %d / %d |\n", f.LeaderReads, f.LeaderFailed)
	p("| reads sent to the killed replica after the kill (or cut by it) / unanswered / failed again on the survivor | %d / %d / %d |\n", f.DeadReads, f.DeadRefused, f.DeadRetryFailed)
	p("| **failed reads** | **%d** (%s) |\n", f.SurvivorFailed+f.LeaderFailed+f.DeadRetryFailed, yes(reads))
	p("| SIGKILL → the survivor leads | **%s** (Lease %s, bound %s: %s) |\n", secs(f.NewLeaderAfter.Seconds()), failoverLease, failoverBound, yes(leader))
	p("| requests created during the failover / all handled afterwards / answered `FULFILLED` by the survivor | %d / %d of %d / %d |\n", f.Created, f.Fulfilled, f.Total, f.SurvivorCurrent)
	p("| PackageVariant creates the API server saw (by code; a 409 is a create the chain settled by reading back the one there: a pass that looked before its own earlier create reached the cache, or a create the kill cut off before it was recorded) | %s |\n", fmtCodes(f.PackageVariantPOSTs))
	p("| survivor's handler runs while the other led | %.0f |\n", f.StandbyRunsBeforeLead)
	p("| **no request handled twice** (one PackageVariant per new request, none for those fulfilled before, no standby runs, all handled) | %s |\n", yes(twice))
	p("| took / other processes | %s / %s |\n\n", f.Duration.Round(100*time.Millisecond), foreign(r.FailoverCPU))
	if len(f.Failures) > 0 {
		p("Failed reads (first few): %v\n\n", f.Failures)
	}
	p("**The Lease bound.** client-go's leader election cannot take a Lease its holder did not release before it has gone unrenewed "+
		"for the Lease duration as the standby observed it: the holder renews every retry period (%s), the standby notices a renewal up "+
		"to a jittered retry period later and tries once per jittered retry period (1 to 2.2 retry periods: client-go's jitter factor 1.2), "+
		"so SIGKILL → new leader lies between about %s and %s; within the Lease duration itself only a released Lease can be taken; "+
		"a clean stop (SIGTERM) releases the Lease and the standby takes it within one retry period.\n\n",
		failoverRetry, failoverLease-failoverRetry, failoverBound)
}

func fmtCodes(m map[string]float64) string {
	if len(m) == 0 {
		return "none"
	}
	return codes(m)
}
