package handlers

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/framework"
	"github.com/o2ims-operator/o2ims-operator/handlers/hosts"
)

// EventReleaseBlocked: a deletion cannot release what the request holds (the inventory is not configured).
const EventReleaseBlocked = "ReleaseBlocked"

// Release is the delete handler (the Python operator had none and orphaned everything). It undoes the
// chain in reverse: our PackageVariant first (and waits until it is gone), then the inventory hosts; only
// when both are released does the framework remove the finalizer. A PackageVariant that is not ours is
// never touched. It never fails permanently: giving up would drop the finalizer with resources still held,
// so every obstacle is retried and shown in the status.
func (h *Handlers) Release(ctx context.Context, c *framework.Cause) error {
	pr := c.Object
	ns, name := h.cfg.PackageVariantNamespace, pr.GetName()
	if h.hosts != nil {
		h.hosts.Forget(string(pr.GetUID())) // a request being deleted waits for no host
	}

	// Live, not cached: removing the finalizer is irreversible, so "gone" must be the server's answer.
	pv, err := h.kube.Get(ctx, c, external.PackageVariantGVR, ns, name)
	switch {
	case framework.IsClass(err, framework.ClassNotFound):
		// Nothing of ours left there.
	case err != nil:
		return h.deleting(c, msgDeletingRetrying.with(err.Error()))
	case h.isOurs(pv, pr):
		if pv.GetDeletionTimestamp() != nil {
			return h.deleting(c, msgDeletingPackageVariant.with(pvRef(pv)))
		}
		// Exactly the version just read: if it carries no finalizer, a delete that succeeds removed it
		// there and then, and the release goes on in this pass (no status write, wake-up and GET more).
		err := h.kube.DeleteVersion(ctx, external.PackageVariantGVR, ns, name, pv.GetUID(), pv.GetResourceVersion())
		if err != nil && !framework.IsClass(err, framework.ClassNotFound) {
			return h.deleting(c, msgDeletingPackageVariantRetrying.with(err.Error()))
		}
		c.Normal(EventDeleted, "Deleted package variant "+pvRef(pv))
		if err == nil && len(pv.GetFinalizers()) > 0 {
			return h.deleting(c, msgDeletingPackageVariant.with(pvRef(pv)))
		}
	default:
		c.Logger.Info("leaving a package variant that is not this request's", stringField("packageVariant", pvRef(pv)))
	}

	if h.hosts == nil {
		if held := hosts.Held(pr); len(held) > 0 {
			// Dropping the finalizer now would leave the hosts claimed in NetBox and registered in Metal3
			// for good: the release waits for an operator that has the inventory configured.
			msg := msgDeletingHostsBlocked.with(strconv.Itoa(len(held)), strings.Join(held, ", "))
			if v1alpha1.StatusOf(pr).Message != truncateMessage(msg.text) {
				c.Warning(EventReleaseBlocked, msg.text)
			}
			return h.deleting(c, msg)
		}
	} else {
		rel, err := h.hosts.Release(ctx, c)
		if err != nil {
			return h.deleting(c, msgDeletingHostsRetrying.with(err.Error()))
		}
		if !rel.Done {
			msg := msgDeletingHosts.with(rel.Message)
			if rel.Soon {
				// The next release step reads what this one wrote: run again as soon as it is visible.
				h.setStatus(c, msg)
				return framework.Again(msg.text)
			}
			return h.deleting(c, msg)
		}
	}
	// With our finalizer the last one, the request is gone once the framework removes it: a status
	// written now would be read by nobody, so it is written only while another finalizer keeps it.
	if slices.ContainsFunc(pr.GetFinalizers(), func(f string) bool { return f != Finalizer }) {
		h.setStatus(c, msgReleased.with())
	}
	return nil
}

func (h *Handlers) deleting(c *framework.Cause, s said) error { //nolint:unparam // always a TemporaryError
	h.setStatus(c, s)
	return &framework.TemporaryError{Message: s.text, Delay: h.cfg.Requeue}
}
