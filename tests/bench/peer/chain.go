package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// The operator's names (api/v1alpha1, api/external, handlers/resources.go), repeated: the peer shares no
// code with what it is compared with.
var (
	requestGVK = schema.GroupVersionKind{Group: "o2ims.provisioning.oran.org", Version: "v1alpha1", Kind: "ProvisioningRequest"}
	pvGVK      = schema.GroupVersionKind{Group: "config.porch.kpt.dev", Version: "v1alpha1", Kind: "PackageVariant"}
	clusterGVK = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Cluster"}
)

const (
	finalizer     = "provisioningrequests.o2ims.provisioning.oran.org"
	annRequestUID = "o2ims.provisioning.oran.org/request-uid"
	annDownstream = "o2ims.provisioning.oran.org/downstream-package"
	namespace     = "default" // PACKAGEVARIANT_NAMESPACE and CLUSTER_NAMESPACE as the bench runs them
	clusterIndex  = "clusterName"
	requeue       = 30 * time.Second
)

// The Events the operator posts on this path, reason and message (handlers/resources.go,
// handlers/status.go: a state change posts its new message; handlers/packagevariant.go: Created on a
// PackageVariant POST that succeeded; handlers/release.go deletedPackageVariant: Deleted on a DELETE that
// succeeded or found nothing).
const (
	reasonProgressing = "Progressing"
	reasonFulfilled   = "Fulfilled"
	reasonFailed      = "Failed"
	reasonCreated     = "Created"
	reasonDeleted     = "Deleted"
	msgCreatedPV      = "Created package variant %s/%s"
	msgDeletedPV      = "Deleted package variant %s/%s"
)

// The statuses the operator's chain writes on this path (handlers/messages.go).
const (
	msgRendering     = "Cluster instance rendering ongoing"
	msgClusterAbsent = "Cluster resource creation ongoing (the Cluster does not exist yet)"
	msgClusterPhase  = "Cluster resource creation ongoing (%s)"
	msgFulfilled     = "Cluster resource created"
	msgInvalid       = "Provisioning request validation failed; reason: %s"
	msgClusterFailed = "Cluster resource creation failed; reason: %s"
)

type reconciler struct {
	client.Client
	events record.EventRecorder
	// kopfAnnotations: the finalizer's PATCH also writes the annotations the operator keeps on a request
	// for kopf (kopf.go), so that a request is the operator's size when it is deleted.
	kopfAnnotations bool
}

// setup registers the controller: requests, and the PackageVariants and Clusters that wake them.
func setup(ctx context.Context, mgr ctrl.Manager, workers int, kopfAnnotations bool) error {
	err := mgr.GetFieldIndexer().IndexField(ctx, newRequest(), clusterIndex, func(o client.Object) []string {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			return nil
		}
		if cn, _, _ := unstructured.NestedString(u.Object, "spec", "templateParameters", "clusterName"); cn != "" {
			return []string{cn}
		}
		return nil
	})
	if err != nil {
		return err
	}
	r := &reconciler{Client: mgr.GetClient(), events: mgr.GetEventRecorderFor("o2ims-bench-peer"), kopfAnnotations: kopfAnnotations}
	byName := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetName()}}}
	})
	byCluster := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(requestGVK.GroupVersion().WithKind("ProvisioningRequestList"))
		if err := r.List(ctx, list, client.MatchingFields{clusterIndex: o.GetName()}); err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(list.Items))
		for _, u := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: u.GetName()}})
		}
		return out
	})
	return ctrl.NewControllerManagedBy(mgr).Named("provisioningrequest").
		For(newRequest()).
		Watches(object(pvGVK), byName).
		Watches(object(clusterGVK), byCluster).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}

func object(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// Reconcile is one look at a request: release it when deleted, else its finalizer first, then the chain's
// status as the world stands.
func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pr := newRequest()
	if err := r.Get(ctx, req.NamespacedName, pr); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if pr.GetDeletionTimestamp() != nil {
		return reconcile.Result{}, r.release(ctx, pr)
	}
	if !controllerutil.ContainsFinalizer(pr, finalizer) {
		patch := client.MergeFrom(pr.DeepCopy())
		controllerutil.AddFinalizer(pr, finalizer)
		if r.kopfAnnotations {
			if err := addKopfAnnotations(pr); err != nil {
				return reconcile.Result{}, err
			}
		}
		return reconcile.Result{}, r.Patch(ctx, pr, patch)
	}
	state, _, _ := unstructured.NestedString(pr.Object, "status", "provisioningStatus", "provisioningState")
	if state == "fulfilled" || state == "failed" {
		return reconcile.Result{}, nil
	}
	s, err := r.observe(ctx, pr)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.setStatus(ctx, pr, s); err != nil {
		return reconcile.Result{}, err
	}
	if s.state == "progressing" {
		return reconcile.Result{RequeueAfter: requeue}, nil
	}
	return reconcile.Result{}, nil
}

// status is what the chain says of a request.
type status struct {
	state, message string
	clusterID      string // with fulfilled: provisionedResourceSet
}

// observe walks the chain: a valid spec, the PackageVariant created and rendered, the Cluster provisioned.
func (r *reconciler) observe(ctx context.Context, pr *unstructured.Unstructured) (status, error) {
	clusterName, reason := validate(pr)
	if reason != "" {
		return status{state: "failed", message: fmt.Sprintf(msgInvalid, reason)}, nil
	}
	pv := object(pvGVK)
	err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: pr.GetName()}, pv)
	switch {
	case apierrors.IsNotFound(err):
		created := desiredPackageVariant(pr, clusterName)
		switch err := r.Create(ctx, created); {
		case err == nil:
			r.post(pr, corev1.EventTypeNormal, reasonCreated, fmt.Sprintf(msgCreatedPV, created.GetNamespace(), created.GetName()))
		case !apierrors.IsAlreadyExists(err):
			return status{}, err
		}
		return status{state: "progressing", message: msgRendering}, nil
	case err != nil:
		return status{}, err
	case !conditionTrue(pv, "Ready"):
		return status{state: "progressing", message: msgRendering}, nil
	}
	cl := object(clusterGVK)
	err = r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: clusterName}, cl)
	switch {
	case apierrors.IsNotFound(err):
		return status{state: "progressing", message: msgClusterAbsent}, nil
	case err != nil:
		return status{}, err
	}
	phase, _, _ := unstructured.NestedString(cl.Object, "status", "phase")
	switch {
	case phase == "Failed":
		msg, _, _ := unstructured.NestedString(cl.Object, "status", "deprecated", "v1beta1", "failureMessage")
		return status{state: "failed", message: fmt.Sprintf(msgClusterFailed, msg)}, nil
	case conditionTrue(cl, "Available"):
		return status{state: "fulfilled", message: msgFulfilled, clusterID: string(cl.GetUID())}, nil
	case phase == "":
		phase = "no phase yet"
	}
	return status{state: "progressing", message: fmt.Sprintf(msgClusterPhase, phase)}, nil
}

// setStatus writes the status when its state or message changed, with an event per state change.
func (r *reconciler) setStatus(ctx context.Context, pr *unstructured.Unstructured, s status) error {
	cur, _, _ := unstructured.NestedStringMap(pr.Object, "status", "provisioningStatus")
	if cur["provisioningState"] == s.state && cur["provisioningMessage"] == s.message {
		return nil
	}
	patch := client.MergeFrom(pr.DeepCopy())
	ps := map[string]any{"provisioningState": s.state, "provisioningMessage": s.message,
		"provisioningUpdateTime": time.Now().UTC().Format(time.RFC3339)}
	if err := unstructured.SetNestedMap(pr.Object, ps, "status", "provisioningStatus"); err != nil {
		return err
	}
	if s.state == "fulfilled" {
		set := map[string]any{"oCloudNodeClusterId": s.clusterID, "oCloudInfrastructureResourceIds": []any{}}
		if err := unstructured.SetNestedMap(pr.Object, set, "status", "provisionedResourceSet"); err != nil {
			return err
		}
	}
	if err := r.Status().Patch(ctx, pr, patch); err != nil {
		return err
	}
	if cur["provisioningState"] != s.state {
		r.event(pr, s)
	}
	return nil
}

// event is the Event of a state change (handlers/status.go setStatus).
func (r *reconciler) event(pr *unstructured.Unstructured, s status) {
	switch s.state {
	case "failed":
		r.post(pr, corev1.EventTypeWarning, reasonFailed, s.message)
	case "fulfilled":
		r.post(pr, corev1.EventTypeNormal, reasonFulfilled, s.message)
	default:
		r.post(pr, corev1.EventTypeNormal, reasonProgressing, s.message)
	}
}

// post hands an Event about the request to controller-runtime's recorder, counted as handed (the
// recorder may drop it under load: that is its behaviour, measured as events due against held).
func (r *reconciler) post(pr *unstructured.Unstructured, typ, reason, message string) {
	eventsPosted.Inc()
	r.events.Event(pr, typ, reason, message)
}

// release deletes the request's PackageVariant and lets the request go.
func (r *reconciler) release(ctx context.Context, pr *unstructured.Unstructured) error {
	if !controllerutil.ContainsFinalizer(pr, finalizer) {
		return nil
	}
	pv := object(pvGVK)
	err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: pr.GetName()}, pv)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return err
	case pv.GetAnnotations()[annRequestUID] == string(pr.GetUID()):
		if err := r.Delete(ctx, pv, client.Preconditions{UID: ptr(pv.GetUID())}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		r.post(pr, corev1.EventTypeNormal, reasonDeleted, fmt.Sprintf(msgDeletedPV, pv.GetNamespace(), pv.GetName()))
	}
	patch := client.MergeFrom(pr.DeepCopy())
	controllerutil.RemoveFinalizer(pr, finalizer)
	return client.IgnoreNotFound(r.Patch(ctx, pr, patch))
}

func ptr[T any](v T) *T { return &v }

// validate is the part of the operator's spec check a benchmark request meets: the template and the
// cluster's name.
func validate(pr *unstructured.Unstructured) (clusterName, reason string) {
	for _, f := range []string{"templateName", "templateVersion"} {
		if v, _, _ := unstructured.NestedString(pr.Object, "spec", f); v == "" {
			return "", "spec." + f + " is required"
		}
	}
	cn, _, _ := unstructured.NestedString(pr.Object, "spec", "templateParameters", "clusterName")
	if cn == "" {
		return "", "spec.templateParameters.clusterName is required"
	}
	return cn, ""
}

// desiredPackageVariant is the PackageVariant the operator creates (handlers/packagevariant.go).
func desiredPackageVariant(pr *unstructured.Unstructured, clusterName string) *unstructured.Unstructured {
	tn, _, _ := unstructured.NestedString(pr.Object, "spec", "templateName")
	tv, _, _ := unstructured.NestedString(pr.Object, "spec", "templateVersion")
	mutators := []any{}
	if l, ok, _ := unstructured.NestedMap(pr.Object, "spec", "templateParameters", "labels"); ok {
		mutators = append(mutators, map[string]any{"image": "gcr.io/kpt-fn/set-labels:v0.2.0", "configMap": l})
	}
	pv := object(pvGVK)
	pv.Object["spec"] = map[string]any{
		"upstream":    map[string]any{"repo": "catalog-infra-capi", "package": tn, "workspaceName": tv},
		"downstream":  map[string]any{"repo": "mgmt", "package": clusterName},
		"annotations": map[string]any{"approval.nephio.org/policy": "initial"},
		"pipeline":    map[string]any{"mutators": mutators},
	}
	pv.SetName(pr.GetName())
	pv.SetNamespace(namespace)
	pv.SetLabels(map[string]string{"owner": "o2ims.provisioning.oran.org.provisioningrequests"})
	pv.SetAnnotations(map[string]string{annRequestUID: string(pr.GetUID()), annDownstream: clusterName})
	pv.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: requestGVK.GroupVersion().String(),
		Kind: requestGVK.Kind, Name: pr.GetName(), UID: pr.GetUID()}})
	return pv
}

// conditionTrue says whether the object's condition of that type has status True.
func conditionTrue(u *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m["status"] == "True"
		}
	}
	return false
}
