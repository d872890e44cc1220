package handlers

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/framework"
	"github.com/o2ims-operator/o2ims-operator/handlers/hosts"
)

// Provision is the create and resume handler: one observation per pass along validate → hosts →
// PackageVariant → rendering → Cluster → fulfilled. Each step either completes within the pass and the next
// one is looked at, or the pass ends with the request's status saying what it waits for.
func (h *Handlers) Provision(ctx context.Context, c *framework.Cause) error {
	return h.provision(ctx, c, false)
}

// Update is the update handler. It is registered with framework.Field("spec"), so it runs only when the
// spec changed: labels, annotations and status never re-drive a request.
func (h *Handlers) Update(ctx context.Context, c *framework.Cause) error {
	return h.provision(ctx, c, true)
}

func (h *Handlers) provision(ctx context.Context, c *framework.Cause, specChanged bool) error {
	pr := c.Object
	cur := v1alpha1.StatusOf(pr)
	terminal := cur.State == v1alpha1.StateFulfilled || cur.State == v1alpha1.StateFailed
	if terminal && !specChanged {
		// Fulfilled and failed are where a request stops until its spec changes: resuming must not re-drive
		// it (a fulfilled one's PackageVariant may be gone on purpose; a failed one must claim, register
		// and write nothing more). Its hosts stay claimed until it is deleted or its spec changes.
		if cur.State != v1alpha1.StateFulfilled {
			return nil
		}
		h.rewriteResourceIDs(c)
		spec, _, _ := unstructured.NestedMap(pr.Object, "spec")
		if req, err := ParseRequest(spec, h.reservedKeys()); err == nil {
			return h.recheckFulfilled(c, req)
		}
		return nil
	}
	spec, _, _ := unstructured.NestedMap(pr.Object, "spec")
	req, err := ParseRequest(spec, h.reservedKeys())
	if err != nil {
		return h.fail(c, msgInvalid.with(err.Error()))
	}
	if specChanged && terminal {
		return h.redrive(c, cur)
	}

	hostIDs, done, err := h.provisionHosts(ctx, c, req, cur)
	if done {
		return err
	}
	rendered, done, err := h.provisionRendering(ctx, c, req)
	if done {
		return err
	}
	return h.provisionCluster(ctx, c, req, hostIDs, rendered)
}

// redrive starts a finished request (fulfilled or failed) again after its spec changed.
func (h *Handlers) redrive(c *framework.Cause, cur v1alpha1.ProvisioningStatus) error {
	// A changed spec re-drives a finished request, with a budget of its own from now.
	restartBudget(c)
	msg := msgRedriven.with()
	if cur.State == v1alpha1.StateFailed {
		msg = msgRedrivenAfterFailure.with(h.cfg.CreationTimeout.String())
	}
	h.setStatus(c, msg)
	return framework.Again("re-driving after an update")
}

// provisionHosts is the hosts step: the request's hosts claimed, registered and available (their ids
// returned), and those it no longer asks for released. done: the pass ends here, with err.
func (h *Handlers) provisionHosts(ctx context.Context, c *framework.Cause, req Request, cur v1alpha1.ProvisioningStatus) (hostIDs []string, done bool, err error) {
	pr := c.Object
	if len(req.Hosts) == 0 && len(hosts.Held(pr)) == 0 {
		return nil, false, nil
	}
	if h.hosts == nil {
		if len(req.Hosts) > 0 {
			return nil, true, h.fail(c, msgHostsWithoutInventory.with())
		}
		return nil, true, h.waitWithinBudget(c, "hosts", msgHostsHeldWithoutInventory.with(strconv.Itoa(len(hosts.Held(pr)))), "")
	}
	if !h.hosts.Settled(req, pr) && h.expired(pr, c.Now) {
		// Spent while hosts were still being claimed, chosen or released: it claims and registers nothing
		// more, gives back what it holds (giveBack) and fails. The last word on the hosts is what the
		// status said of them.
		return nil, true, h.giveBack(ctx, c, cur)
	}
	res, err := h.hosts.Ensure(ctx, c, req)
	if err != nil {
		return nil, true, h.hostsFailed(c, err)
	}
	if !res.Ready {
		msg := msgHostsPreparing.with(res.Message)
		if res.Soon && !h.expired(pr, c.Now) {
			// Claim the recorded candidates as soon as the record is visible.
			h.setStatus(c, msg)
			return nil, true, framework.Again(msg.text)
		}
		return nil, true, h.waitWithinBudget(c, "hosts", msg, "")
	}
	return res.IDs, false, nil
}

// provisionRendering is the PackageVariant step: ours, with the current spec, and Porch done rendering
// it; after a change, rendered is the Cluster the published revision renders (nil otherwise), for the
// Cluster step. done: the pass ends here, with err.
func (h *Handlers) provisionRendering(ctx context.Context, c *framework.Cause, req Request) (rendered *unstructured.Unstructured, done bool, err error) {
	pv, err := h.ensurePackageVariant(ctx, c, req)
	if pv == nil {
		return nil, true, err
	}
	if ready, msg := renderingReady(pv); !ready {
		return nil, true, h.waitWithinBudget(c, "rendering", msg, "")
	}
	published, rendered, msg, err := h.porch.published(ctx, c, pv, req)
	if err != nil {
		return nil, true, h.retryOrFail(c, err)
	}
	if !published {
		return nil, true, h.waitWithinBudget(c, "rendering", msg, "")
	}
	return rendered, false, nil
}

// provisionCluster is the last step: the CAPI Cluster provisioned fulfills the request (with the hosts'
// ids), failed fails it; anything else is waited for. After a change, a Cluster that does not carry the
// spec the published revision renders (rendered.go) is waited for whatever it reports.
func (h *Handlers) provisionCluster(ctx context.Context, c *framework.Cause, req Request, hostIDs []string, rendered *unstructured.Unstructured) error {
	cl, found, err := c.Cache.Get(h.clusterGVR, h.cfg.ClusterNamespace, req.ClusterName)
	if err != nil {
		return err
	}
	if !found {
		return h.waitWithinBudget(c, "cluster", msgClusterAbsent.with(), "")
	}
	v := viewCluster(cl, h.clusterVersion)
	if rendered != nil {
		differs, behind, err := h.porch.clusterCarries(ctx, c, rendered, cl)
		switch {
		case framework.IsClass(err, framework.ClassNotFound):
			return h.waitWithinBudget(c, "cluster", msgClusterAbsent.with(), "")
		case err != nil:
			return h.retryOrFail(c, err)
		case differs != "":
			return h.waitWithinBudget(c, "cluster", msgClusterNotApplied.with(differs), "")
		case behind > 0:
			return h.waitWithinBudget(c, "cluster", msgClusterNotObserved.with(v.phase, strconv.FormatInt(behind, 10)), "")
		}
	}
	if current, generation := clusterCurrent(cl); !current && !v.failed {
		return h.waitWithinBudget(c, "cluster", msgClusterNotObserved.with(v.phase, strconv.FormatInt(generation, 10)), "")
	}
	if rolling := rollingOut(cl, h.clusterVersion); v.provisioned && rolling != "" {
		return h.waitWithinBudget(c, "cluster", msgClusterRollingOut.with(v.phase, rolling), "")
	}
	switch {
	case v.provisioned:
		setResourceSet(c, string(cl.GetUID()), hostIDs)
		h.setStatus(c, msgFulfilled.with())
		return nil
	case v.failed:
		return h.fail(c, msgClusterFailed.with(v.detail))
	default:
		// The phase is the progress signal; the condition's free text only in a final message, or every
		// change of it would be a status write.
		return h.waitWithinBudget(c, "cluster", msgClusterOngoing.with(v.phase), v.detail)
	}
}

// rewriteResourceIDs is the one write a fulfilled request may get without a spec change: ids recorded in
// the old form (netbox-<id>) become the inventory resource ids, in this pass's status write; state,
// message and time stay as they are, and nothing is re-driven. Without an inventory there is no O-Cloud
// to compute them in, and they stay.
func (h *Handlers) rewriteResourceIDs(c *framework.Cause) {
	if h.hosts == nil {
		return
	}
	set := v1alpha1.ResourceSetOf(c.Object)
	if ids, changed := h.hosts.ResourceIDs(set.InfrastructureResourceIDs); changed {
		setResourceSet(c, set.NodeClusterID, ids)
	}
}

// hostsFailed maps an inventory failure: a configuration or schema error fails the request (no endless
// retry on a NetBox that can never answer), anything else is retried while the budget lasts.
func (h *Handlers) hostsFailed(c *framework.Cause, err error) error {
	var perm *framework.PermanentError
	if errors.As(err, &perm) {
		return h.fail(c, msgHostsFailed.with(perm.Error()))
	}
	return h.waitWithinBudget(c, "hosts", msgHostsRetrying.with(err.Error()), "")
}

func (h *Handlers) reservedKeys() map[string]bool {
	if h.hosts == nil {
		return nil
	}
	return h.hosts.Reserved()
}

// giveBack: a request whose budget ran out while it waited for hosts gives back, at once, every host no
// machine uses (hosts.Step.GiveBack), then fails. So a request that cannot be satisfied holds hosts
// others could use for no longer than its CREATION_TIMEOUT budget; the allocator hands them to the
// longest waiter. Hosts a machine consumes stay with the request (never released in use).
func (h *Handlers) giveBack(ctx context.Context, c *framework.Cause, cur v1alpha1.ProvisioningStatus) error {
	h.hosts.Forget(string(c.Object.GetUID())) // it waits for no host any more
	last := cur.Message
	givingBack := msgHostsGivingBack.text[:strings.Index(msgHostsGivingBack.text, "{")]
	if !strings.HasPrefix(last, hostsWords) || strings.HasPrefix(last, givingBack) {
		last = hostsWords
	}
	budget := h.cfg.CreationTimeout.String()
	rel, err := h.hosts.GiveBack(ctx, c)
	var perm *framework.PermanentError
	switch {
	case errors.As(err, &perm):
		return h.timedOut(c, "hosts", last+"; hosts not given back: "+perm.Error())
	case err != nil:
		return h.waitFor(c, msgHostsGivingBack.with(budget, "retrying after: "+err.Error()), h.cfg.Requeue)
	case !rel.Done:
		msg := msgHostsGivingBack.with(budget, rel.Message)
		if rel.Soon {
			h.setStatus(c, msg)
			return framework.Again(msg.text)
		}
		return h.waitFor(c, msg, h.cfg.Requeue)
	}
	if rel.Message != "" {
		last += "; kept in use: " + rel.Message
	}
	return h.timedOut(c, "hosts", last)
}
