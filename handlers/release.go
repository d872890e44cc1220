package handlers

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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

	gone, err := h.releasePackageVariant(ctx, c, ns, name)
	if !gone {
		return err
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

// releasePackageVariant deletes our PackageVariant and answers whether it is gone (else the error to
// return). Removing the finalizer is irreversible, so "gone" rests on the server's answer: the DELETE of
// exactly the cached version (uid and resourceVersion preconditions) succeeding on one without a
// finalizer, a 404, or a live GET. The cached copy saves the GET before the DELETE (one PackageVariant
// call per deleted request, as a controller-runtime operator makes, not two on the same client-side
// bucket: issue 39); a cache behind the server is refused with a conflict and read live.
func (h *Handlers) releasePackageVariant(ctx context.Context, c *framework.Cause, ns, name string) (bool, error) {
	pr := c.Object
	if pv, found, err := c.Cache.Get(external.PackageVariantGVR, ns, name); err == nil && found &&
		pv.GetDeletionTimestamp() == nil && h.isOurs(pv, pr) {
		err := h.kube.DeleteVersion(ctx, external.PackageVariantGVR, ns, name, pv.GetUID(), pv.GetResourceVersion())
		if err == nil || framework.IsClass(err, framework.ClassNotFound) {
			return h.deletedPackageVariant(c, pv, err)
		}
		if !framework.IsClass(err, framework.ClassConflict) {
			return false, h.deleting(c, msgDeletingPackageVariantRetrying.with(err.Error()))
		}
	}
	pv, err := h.kube.Get(ctx, c, external.PackageVariantGVR, ns, name)
	switch {
	case framework.IsClass(err, framework.ClassNotFound):
		return true, nil // nothing of ours left there
	case err != nil:
		return false, h.deleting(c, msgDeletingRetrying.with(err.Error()))
	case !h.isOurs(pv, pr):
		c.Logger.Info("leaving a package variant that is not this request's", stringField("packageVariant", pvRef(pv)))
		return true, nil
	case pv.GetDeletionTimestamp() != nil:
		return false, h.deleting(c, msgDeletingPackageVariant.with(pvRef(pv)))
	}
	err = h.kube.DeleteVersion(ctx, external.PackageVariantGVR, ns, name, pv.GetUID(), pv.GetResourceVersion())
	if err != nil && !framework.IsClass(err, framework.ClassNotFound) {
		return false, h.deleting(c, msgDeletingPackageVariantRetrying.with(err.Error()))
	}
	return h.deletedPackageVariant(c, pv, err)
}

// deletedPackageVariant follows a DELETE of exactly pv's version that succeeded or found nothing: one
// without a finalizer is gone there and then, and the release goes on in this pass (no status write,
// wake-up and GET more); one with a finalizer is waited for.
func (h *Handlers) deletedPackageVariant(c *framework.Cause, pv *unstructured.Unstructured, err error) (bool, error) {
	c.Normal(EventDeleted, "Deleted package variant "+pvRef(pv))
	if err == nil && len(pv.GetFinalizers()) > 0 {
		return false, h.deleting(c, msgDeletingPackageVariant.with(pvRef(pv)))
	}
	return true, nil
}

func (h *Handlers) deleting(c *framework.Cause, s said) error { //nolint:unparam // always a TemporaryError
	h.setStatus(c, s)
	return &framework.TemporaryError{Message: s.text, Delay: h.cfg.Requeue}
}
