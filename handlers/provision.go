package handlers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/framework"
)

// Provision is the create/resume/update handler: one observation per pass along validate → hosts →
// PackageVariant → rendering → Cluster → fulfilled. Each step either completes within the pass and the next
// one is looked at, or the pass ends with the request's status saying what it waits for.
func (h *Handlers) Provision(ctx context.Context, c *framework.Cause) error {
	pr := c.Object
	cur := CurrentStatus(pr)
	if cur.State == StateFulfilled && c.Reason != framework.ReasonUpdate {
		// Fulfilled is where a request stops: resuming must not re-drive a finished one (its PackageVariant
		// may be gone on purpose, and re-rendering would report it progressing after it was reported done).
		return nil
	}
	spec, _, _ := unstructured.NestedMap(pr.Object, "spec")
	req, err := ParseRequest(spec, h.reservedKeys())
	if err != nil {
		return h.fail(c, "Provisioning request validation failed; reason: "+err.Error())
	}
	if c.Reason == framework.ReasonUpdate && cur.State != StateProgressing && cur.State != "" {
		// A changed spec re-drives a finished request, with a budget of its own from now.
		c.Patch.SetStatus(c.Now.UTC().Format(time.RFC3339), "extensions", budgetStartKey)
		h.setStatus(c, StateProgressing, "Provisioning request updated; provisioning again")
		return &framework.TemporaryError{Message: "re-driving after an update", Delay: time.Millisecond}
	}

	var hostIDs []string
	if len(req.Hosts) > 0 {
		if h.hosts == nil {
			return h.fail(c, "Provisioning request validation failed; reason: hosts are requested but no inventory is configured (NETBOX_URL is not set)")
		}
		res, err := h.hosts.Ensure(ctx, c, req)
		if err != nil {
			return h.hostsFailed(c, err)
		}
		if !res.Ready {
			err := h.waitWithinBudget(c, "hosts", "Hosts are being prepared: "+res.Message, "")
			var temp *framework.TemporaryError
			if res.Soon && errors.As(err, &temp) {
				temp.Delay = time.Millisecond // claim the recorded candidates as soon as the record is visible
			}
			return err
		}
		hostIDs = res.IDs
	}

	pv, err := h.ensurePackageVariant(ctx, c, req)
	if pv == nil {
		return err
	}
	if ready, detail := renderingReady(pv); !ready {
		msg := "Cluster instance rendering ongoing"
		if detail != "" {
			msg += ": " + detail
		}
		return h.waitWithinBudget(c, "rendering", msg, "")
	}

	cl, found, err := c.Cache.Get(h.clusterGVR, h.cfg.ClusterNamespace, req.ClusterName)
	if err != nil {
		return err
	}
	if !found {
		return h.waitWithinBudget(c, "cluster", "Cluster resource creation ongoing (the Cluster does not exist yet)", "")
	}
	v := viewCluster(cl, h.clusterVersion)
	switch {
	case v.provisioned:
		setResourceSet(c, string(cl.GetUID()), hostIDs)
		h.setStatus(c, StateFulfilled, "Cluster resource created")
		return nil
	case v.failed:
		return h.fail(c, "Cluster resource creation failed; reason: "+v.detail)
	default:
		// The phase is the progress signal; the condition's free text only in a final message, or every
		// change of it would be a status write.
		return h.waitWithinBudget(c, "cluster", fmt.Sprintf("Cluster resource creation ongoing (%s)", v.phase), v.detail)
	}
}

// waitWithinBudget keeps waiting while the CREATION_TIMEOUT budget lasts and fails the request once it is
// spent. The budget covers every wait (hosts, rendering, cluster), not only the last one: a package that
// never rendered used to keep its request progressing for good.
func (h *Handlers) waitWithinBudget(c *framework.Cause, stage, message, detail string) error {
	if h.expired(c.Object, c.Now) {
		h.metrics.BudgetExpiries.WithLabelValues(stage).Inc()
		if detail != "" {
			message += ": " + detail
		}
		return h.fail(c, fmt.Sprintf("%s; timed out after %s", message, h.cfg.CreationTimeout))
	}
	return h.wait(c, message)
}

// hostsFailed maps an inventory failure: a configuration or schema error fails the request (no endless
// retry on a NetBox that can never answer), anything else is retried while the budget lasts.
func (h *Handlers) hostsFailed(c *framework.Cause, err error) error {
	var perm *framework.PermanentError
	if errors.As(err, &perm) {
		return h.fail(c, "Host assignment failed; reason: "+perm.Error())
	}
	return h.waitWithinBudget(c, "hosts", "Hosts are being prepared; retrying after: "+err.Error(), "")
}

func (h *Handlers) reservedKeys() map[string]bool {
	if h.hosts == nil {
		return nil
	}
	return h.hosts.Reserved()
}
