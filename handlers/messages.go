package handlers

import (
	"fmt"
	"strings"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
)

// The table of every (provisioningState, provisioningMessage) pair the chain writes. setStatus takes only a
// said, made from an entry here, so no status message is composed anywhere else; docs/chain.md's "Status
// messages" table is this one (TestTheMessageTableIsDocumented), and the handlers tests reach every entry
// on the real API server (messages_test.go).
//
// Wording: where the Python image had a message for the same situation, it is kept ("Cluster resource
// created", "Cluster instance rendering ongoing", "Provisioning request validation failed; reason: …");
// every failed message says what failed and why ("… failed; reason: …"), and no other state's message
// says "failed" (a retried error says "retrying after: …").

// message is one entry: its state, a stable key, the text with its parts in braces ({reason}), and when
// it is written (Markdown, as docs/chain.md shows it).
type message struct {
	key   string
	state string
	text  string
	when  string
}

// said is an entry with its parts filled in: what setStatus writes.
type said struct {
	m    *message
	text string
}

// with fills the entry's parts, in the order the text names them. A missing part stays "{name}" (a test
// checks every call passes as many as the text names).
func (m *message) with(parts ...string) said {
	var b strings.Builder
	rest := m.text
	for i := 0; ; i++ {
		open := strings.IndexByte(rest, '{')
		if open < 0 {
			b.WriteString(rest)
			break
		}
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:open])
		if i < len(parts) {
			b.WriteString(parts[i])
		} else {
			b.WriteString(rest[open : open+end+1])
		}
		rest = rest[open+end+1:]
	}
	return said{m: m, text: b.String()}
}

// parts lists the names of the entry's parts, in order.
func (m *message) parts() []string {
	var out []string
	rest := m.text
	for {
		open := strings.IndexByte(rest, '{')
		if open < 0 {
			return out
		}
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return out
		}
		out = append(out, rest[open+1:open+end])
		rest = rest[open+end+1:]
	}
}

// hostsWords begin every message of the hosts step: when the budget runs out before a pass could look
// at the hosts, they are the last word on them.
const hostsWords = "Hosts are being prepared"

const (
	progressing = v1alpha1.StateProgressing
	fulfilled   = v1alpha1.StateFulfilled
	failed      = v1alpha1.StateFailed
	deleting    = v1alpha1.StateDeleting
)

var (
	msgRedriven = &message{"redriven", progressing,
		"Provisioning request updated; provisioning again",
		"the spec of a fulfilled request changed: it is provisioned again"}
	msgRedrivenAfterFailure = &message{"redriven-after-failure", progressing,
		"Provisioning request updated after it failed; provisioning again with a new budget of {budget} from the change",
		"the spec of a failed request changed: it starts again with a `CREATION_TIMEOUT` budget of its own"}
	msgRedrivenDegraded = &message{"redriven-degraded", progressing,
		"Provisioning request was fulfilled and is provisioning again: {what}",
		"a fulfilled request's PackageVariant reports `Ready=False` (`what`: `Porch reports the package variant not ready: …`) or its Cluster `Available=False` (`the Cluster is not available: …`): it is re-driven with a `CREATION_TIMEOUT` budget from then, fulfilled again when both recover, failed when they do not"}
	msgHostsPreparing = &message{"hosts-preparing", progressing,
		"Hosts are being prepared: {progress}",
		"the hosts step is under way; `progress` is what it reports, `; `-separated: `N of M hosts claimed`, " +
			"`releasing N hosts no longer requested: …`, `quarantining N hosts and choosing others: netbox-<id> (why)`, " +
			"`waiting for free hosts: N more for role R, since <time>`, `N of M available in Metal3`, `netbox-<id>: what it waits for`; " +
			"or, while NetBox cannot be used, `NetBox unreachable since …; waiting`"}
	msgHostsGivingBack = &message{"hosts-giving-back", progressing,
		"Hosts are being prepared: the budget of {budget} is spent; giving back every host no machine uses: {progress}",
		"`CREATION_TIMEOUT` ran out while the request waited for hosts: before it fails, it releases what it holds " +
			"(`netbox-<id>: BareMetalHost being removed`, …); a host a Machine consumes stays with it"}
	msgHostsRetrying = &message{"hosts-retrying", progressing,
		"Hosts are being prepared; retrying after: {error}",
		"a Kubernetes call of the hosts step failed in a way a retry can fix (the budget keeps running)"}
	msgHostsHeldWithoutInventory = &message{"hosts-held-without-inventory", progressing,
		"Hosts are being prepared: {count} hosts no longer requested are still claimed; releasing them needs the inventory (NETBOX_URL is not set)",
		"the spec no longer asks for hosts the request holds, and the operator runs without `NETBOX_URL`"}
	msgRendering = &message{"rendering", progressing,
		"Cluster instance rendering ongoing",
		"the PackageVariant exists and Porch has not reported `Ready` yet"}
	msgRenderingNotReady = &message{"rendering-not-ready", progressing,
		"Cluster instance rendering ongoing: {porch}",
		"Porch reports `Ready` not `True`: `porch` is its reason and message"}
	msgRenderingNotReported = &message{"rendering-not-reported", progressing,
		"Cluster instance rendering ongoing: Porch has not reported on the updated package variant (generation {generation}) yet",
		"Porch's `Ready` carries an `observedGeneration` behind the PackageVariant's generation"}
	msgRenderingAwaitingRender = &message{"rendering-awaiting-render", progressing,
		"Cluster instance rendering ongoing: waiting for Porch to render the change ({porch})",
		"the PackageVariant was rewritten for a spec change and Porch has not yet published a revision of it: `porch` says what it reports instead " +
			"(no revision named in `status.downstreamTargets`; the template revision missing from `UPSTREAM_PKG_REPO`; the published revision cloned from another template revision; " +
			"the latest published revision older than the change; no content served for it); Porch's `Ready` alone, which carries no generation, is never taken for the new spec"}
	msgRenderingAwaitingApproval = &message{"rendering-awaiting-approval", progressing,
		"Cluster instance rendering ongoing: waiting for package revision {revision} ({lifecycle}) to be approved and published",
		"Porch rendered the change into a draft; Nephio's approval policy `initial` publishes only a package's first revision, so someone must approve this one (`porchctl rpkg propose` / `approve`)"}
	msgRenderingNoCluster = &message{"rendering-no-cluster", progressing,
		"Cluster instance rendering ongoing: the published package revision {revision} renders no Cluster {cluster}",
		"Porch published the change, but the revision's content (`PackageRevisionResources`) holds no `cluster.x-k8s.io` Cluster of that name outside kpt's local-config objects: there is nothing to wait for on the Cluster, and the budget runs out saying so"}
	msgRenderingEarlierRequest = &message{"rendering-earlier-request", progressing,
		"Cluster instance rendering ongoing; waiting for the package variant of an earlier request of this name to be removed",
		"a request re-created under a name whose deleted predecessor's PackageVariant the garbage collector has not removed yet"}
	msgRenderingAdoptionRaced = &message{"rendering-adoption-raced", progressing,
		"Cluster instance rendering ongoing; the package variant changed while it was being adopted and will be looked at again",
		"adopting the Python image's PackageVariant met a newer version of it (409) or found it gone"}
	msgRenderingCreateLost = &message{"rendering-create-lost", progressing,
		"Cluster instance rendering ongoing; the package variant create did not land and will be retried",
		"the answer to the PackageVariant's create was lost and reading it back found nothing"}
	msgRenderingUpdateRaced = &message{"rendering-update-raced", progressing,
		"Cluster instance rendering ongoing; the package variant changed meanwhile and its update will be retried",
		"writing a changed spec to the PackageVariant met a newer version of it (409) that does not have the spec"}
	msgRenderingRetrying = &message{"rendering-retrying", progressing,
		"Cluster instance rendering ongoing; retrying after: {error}",
		"a PackageVariant call failed in a way a retry can fix (the budget keeps running)"}
	msgClusterAbsent = &message{"cluster-absent", progressing,
		"Cluster resource creation ongoing (the Cluster does not exist yet)",
		"the package is rendered and the Cluster named `clusterName` does not exist yet"}
	msgClusterNotObserved = &message{"cluster-not-observed", progressing,
		"Cluster resource creation ongoing ({phase}; Cluster API has not observed generation {generation} yet)",
		"the Cluster's `status.observedGeneration` is behind its generation: its report is about an older spec"}
	msgClusterNotApplied = &message{"cluster-not-applied", progressing,
		"Cluster resource creation ongoing (waiting for the published change to be applied to the Cluster: it differs at {fields})",
		"Porch published the change, but the live Cluster's spec does not yet carry every field the published revision's Cluster sets: the GitOps sync has not applied it yet. " +
			"`fields` are the paths that differ (`spec.…`, at most five; no values); a field a webhook rewrites would keep them differing until the budget runs out, saying so"}
	msgClusterRollingOut = &message{"cluster-rolling-out", progressing,
		"Cluster resource creation ongoing ({phase}; rolling out: {rollout})",
		"the Cluster is available but Cluster API reports a rollout in progress (v1beta2 conditions `RollingOut=True`, `ControlPlaneMachinesUpToDate` or `WorkerMachinesUpToDate` `False`, `TopologyReconciled=False`): the request waits until it is done"}
	msgClusterOngoing = &message{"cluster-ongoing", progressing,
		"Cluster resource creation ongoing ({phase})",
		"the Cluster exists and is not provisioned yet; `phase` is its `status.phase` (`no phase yet`, `Deleting`)"}

	msgFulfilled = &message{"fulfilled", fulfilled,
		"Cluster resource created",
		"the Cluster is provisioned (v1beta2: `Available=True`; v1beta1: phase `Provisioned`) and every requested host is available"}

	msgInvalid = &message{"invalid", failed,
		"Provisioning request validation failed; reason: {reason}",
		"the spec is not a valid request (`api/spec`: the field and the broken rule)"}
	msgHostsWithoutInventory = &message{"hosts-without-inventory", failed,
		"Provisioning request validation failed; reason: hosts are requested but no inventory is configured (NETBOX_URL is not set)",
		"the spec asks for hosts and the operator runs without `NETBOX_URL`"}
	msgPackageVariantConflict = &message{"package-variant-conflict", failed,
		"Provisioning request creation failed; reason: package variant {packageVariant} already exists and belongs to another request",
		"a PackageVariant of the request's name exists and is neither this request's nor the Python image's for it"}
	msgClusterNameChanged = &message{"cluster-name-changed", failed,
		"Provisioning request update failed; reason: clusterName cannot change from {from} to {to} after the package variant was created; delete and re-create the request",
		"`clusterName` changed after the PackageVariant was created"}
	msgHostsFailed = &message{"hosts-failed", failed,
		"Host assignment failed; reason: {reason}",
		"the hosts step met what a retry cannot fix: NetBox's configuration or schema (an unknown selector field), a Metal3 object of the host's name that is not ours"}
	msgRenderingFailed = &message{"rendering-failed", failed,
		"Cluster instance rendering failed; reason: {error}",
		"a PackageVariant call failed in a way a retry cannot fix"}
	msgClusterFailed = &message{"cluster-failed", failed,
		"Cluster resource creation failed; reason: {reason}",
		"the Cluster's phase is `Failed` (its `failureReason: failureMessage`)"}
	msgTimedOut = &message{"timed-out", failed,
		"Provisioning request failed; reason: timed out after {timeout} waiting for {stage} (last: {last})",
		"`CREATION_TIMEOUT` ran out; `stage` is `the hosts`, `the Cluster instance rendering` or `the Cluster resource`, " +
			"`last` the progressing message it would have written (the Python image said `… failed reached timeout`)"}

	msgDeletingRetrying = &message{"deleting-retrying", deleting,
		"Deleting; retrying after: {error}",
		"reading the PackageVariant failed; the release is retried"}
	msgDeletingPackageVariant = &message{"deleting-package-variant", deleting,
		"Deleting; waiting for package variant {packageVariant} to be removed",
		"our PackageVariant is being deleted (Porch's finalizer holds it)"}
	msgDeletingPackageVariantRetrying = &message{"deleting-package-variant-retrying", deleting,
		"Deleting; removing the package variant will be retried after: {error}",
		"deleting our PackageVariant failed; the release is retried"}
	msgDeletingHostsBlocked = &message{"deleting-hosts-blocked", deleting,
		"Deleting; {count} hosts ({hosts}) are still claimed and cannot be released: the inventory is not configured (NETBOX_URL is not set); set NETBOX_URL to release them",
		"the request holds hosts and the operator runs without `NETBOX_URL`: the finalizer stays (a `ReleaseBlocked` event says so too)"}
	msgDeletingHostsRetrying = &message{"deleting-hosts-retrying", deleting,
		"Deleting; releasing hosts will be retried after: {error}",
		"a step of the hosts' release failed (unreadable host records, a Kubernetes call); the release is retried"}
	msgDeletingHosts = &message{"deleting-hosts", deleting,
		"Deleting; releasing hosts: {progress}",
		"the hosts are being released, `progress` per host (`netbox-<id>: BareMetalHost being removed`, …), or `NetBox unreachable since …; waiting`"}
	msgReleased = &message{"released", deleting,
		"Deleting; all resources released",
		"everything is released and another finalizer than ours still holds the request (with ours the last, the request is gone instead)"}
)

// messages is the table, in docs/chain.md's order.
var messages = []*message{
	msgRedriven, msgRedrivenAfterFailure, msgRedrivenDegraded,
	msgHostsPreparing, msgHostsGivingBack, msgHostsRetrying, msgHostsHeldWithoutInventory,
	msgRendering, msgRenderingNotReady, msgRenderingNotReported, msgRenderingAwaitingRender, msgRenderingAwaitingApproval, msgRenderingNoCluster, msgRenderingEarlierRequest, msgRenderingAdoptionRaced,
	msgRenderingCreateLost, msgRenderingUpdateRaced, msgRenderingRetrying,
	msgClusterAbsent, msgClusterNotObserved, msgClusterNotApplied, msgClusterRollingOut, msgClusterOngoing,
	msgFulfilled,
	msgInvalid, msgHostsWithoutInventory, msgPackageVariantConflict, msgClusterNameChanged,
	msgHostsFailed, msgRenderingFailed, msgClusterFailed, msgTimedOut,
	msgDeletingRetrying, msgDeletingPackageVariant, msgDeletingPackageVariantRetrying,
	msgDeletingHostsBlocked, msgDeletingHostsRetrying, msgDeletingHosts, msgReleased,
}

// markdownMessages is docs/chain.md's "Status messages" table.
func markdownMessages() string {
	var b strings.Builder
	b.WriteString("| state | key | message | written when |\n|---|---|---|---|\n")
	for _, m := range messages {
		text := m.text
		for _, p := range m.parts() {
			text = strings.ReplaceAll(text, "{"+p+"}", "`"+"{"+p+"}"+"`")
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s |\n", m.state, m.key, text, m.when)
	}
	return b.String()
}
