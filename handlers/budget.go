package handlers

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/framework"
)

// budgetStartKey (under status.extensions) moves the budget's start when an update re-drives a request;
// it is on the object, so a restart never grants a fresh budget.
const budgetStartKey = v1alpha1.FieldBudgetStart

// deadline is when the CREATION_TIMEOUT budget runs out. It is measured from the request's own
// creationTimestamp (or the start of an update's re-drive): the Python operator counted its sleeps, so the
// API calls' own time did not count and every restart granted a fresh budget.
func (r *reporter) deadline(u *unstructured.Unstructured) time.Time {
	return v1alpha1.BudgetStart(u).Add(r.creationTimeout)
}

// expired tells whether the budget is spent at now.
func (r *reporter) expired(u *unstructured.Unstructured, now time.Time) bool {
	return !now.Before(r.deadline(u))
}

// restartBudget gives a re-driven request a budget of its own from now.
func restartBudget(c *framework.Cause) {
	c.Patch.SetStatus(c.Now.UTC().Format(time.RFC3339), v1alpha1.FieldExtensions, budgetStartKey)
}

// waitedFor names each stage a request waits in, as the failure message says it.
var waitedFor = map[string]string{
	"hosts":     "the hosts",
	"rendering": "the Cluster instance rendering",
	"cluster":   "the Cluster resource",
}

// waitWithinBudget keeps waiting while the CREATION_TIMEOUT budget lasts and fails the request once it is
// spent. The budget covers every wait (hosts, rendering, cluster), not only the last one: a package that
// never rendered used to keep its request progressing for good.
func (r *reporter) waitWithinBudget(c *framework.Cause, stage string, s said, detail string) error {
	return r.waitWithinBudgetFor(c, stage, s, detail, r.requeue)
}

// waitWithinBudgetFor is waitWithinBudget looking again after recheck (when the answer can change by time
// alone sooner than the safety net would look) rather than REQUEUE_INTERVAL.
func (r *reporter) waitWithinBudgetFor(c *framework.Cause, stage string, s said, detail string, recheck time.Duration) error {
	if r.expired(c.Object, c.Now) {
		last := s.text
		if detail != "" {
			last += ": " + detail
		}
		return r.timedOut(c, stage, last)
	}
	return r.waitFor(c, s, min(recheck, r.requeue))
}

// timedOut fails a request whose budget is spent. Failed says failed, what it waited for and the last
// word on it (FOCOM and people read the message; "… ongoing; timed out" read as progress).
func (r *reporter) timedOut(c *framework.Cause, stage, last string) error {
	r.metrics.BudgetExpiries.WithLabelValues(stage).Inc()
	return r.fail(c, msgTimedOut.with(r.creationTimeout.String(), waitedFor[stage], last))
}
