package handlers

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/framework"
)

// What Cluster API says about a rollout, and what a fulfilled request does when Porch or CAPI later report
// a fault.
//
// Rollout (cluster-api v1.14.0, 560d4acf507bc7cac34b2da449fa5cd53eaeb149, api/core/v1beta2/cluster_types.go):
// a Cluster's v1beta2 conditions (status.conditions of v1beta2, status.v1beta2.conditions of v1beta1)
// include RollingOut (True while the control plane, a MachineDeployment or a MachinePool rolls out),
// ControlPlaneMachinesUpToDate and WorkerMachinesUpToDate (False while a machine is not up to date) and,
// for a Cluster with a managed topology, TopologyReconciled (False while the topology controller has not
// applied the spec: ClusterUpgrading, …). Available summarises availability, not rollout, so an Available
// Cluster can still be moving to the new spec: the request waits until none of those says so. A condition
// that is absent says nothing (older CAPI, no topology).

// rolloutConditions are the conditions that say a rollout is in progress, with the status that says it.
var rolloutConditions = []struct{ condition, rolling string }{
	{"RollingOut", "True"},
	{"ControlPlaneMachinesUpToDate", "False"},
	{"WorkerMachinesUpToDate", "False"},
	{"TopologyReconciled", "False"},
}

// rollingOut returns what CAPI reports of a rollout in progress ("" when none): each condition that says
// so, with its reason.
func rollingOut(cl *unstructured.Unstructured, version string) string {
	path := []string{"status", "conditions"}
	if version == "v1beta1" {
		path = []string{"status", "v1beta2", "conditions"}
	}
	var out []string
	for _, rc := range rolloutConditions {
		cond, ok := condition(cl, append(append([]string{}, path...), rc.condition)...)
		if ok && cond["status"] == rc.rolling {
			r, _ := cond["reason"].(string)
			out = append(out, strings.TrimSuffix(rc.condition+"="+rc.rolling+" "+r, " "))
		}
	}
	return strings.Join(out, ", ")
}

// recheckFulfilled looks at a fulfilled request again when its PackageVariant or Cluster changed (their
// related watches are Resuming: no timer, no read beyond the cache). Porch reporting Ready=False on our
// PackageVariant, or CAPI Available=False on the Cluster, re-drives it: progressing, saying why, with a
// CREATION_TIMEOUT budget from then; it is fulfilled again when both recover, and fails with the usual
// timeout message when they do not. A Cluster that CAPI (converted from v1beta1) reports Failed fails it.
// A PackageVariant or Cluster that is gone is not a report, and is left alone (a PackageVariant may be
// removed on purpose once its job is done); so is a request whose PackageVariant is not ours by uid.
func (h *Handlers) recheckFulfilled(c *framework.Cause, req Request) error {
	pr := c.Object
	pv, found, err := c.Cache.Get(external.PackageVariantGVR, h.cfg.PackageVariantNamespace, pr.GetName())
	if err != nil || !found || !pvOwnedByRequest(pv, pr) {
		// Only what this operator provisioned (or adopted) is watched: a request the Python image
		// fulfilled is left alone, as the upgrade promises, and so is one whose PackageVariant is gone.
		return nil
	}
	what := ""
	if cond, ok := condition(pv, "Ready"); ok && cond["status"] == "False" {
		what = "Porch reports the package variant not ready: " + conditionDetail(cond)
	}
	if cl, found, err := c.Cache.Get(h.clusterGVR, h.cfg.ClusterNamespace, req.ClusterName); what == "" && err == nil && found {
		v := viewCluster(cl, h.clusterVersion)
		if v.failed {
			return h.fail(c, msgClusterFailed.with(v.detail))
		}
		if cond, ok := condition(cl, "Available"); ok && h.clusterVersion != "v1beta1" && cond["status"] == "False" {
			what = "the Cluster is not available: " + conditionDetail(cond)
		}
	}
	if what == "" {
		return nil
	}
	restartBudget(c)
	h.setStatus(c, msgRedrivenDegraded.with(what))
	return framework.Again("re-driving a fulfilled request whose package variant or Cluster reports a fault")
}
