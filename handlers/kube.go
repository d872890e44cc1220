package handlers

import (
	"context"
	"fmt"
	"sync"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/framework"
)

// kube is the chain's live API access: every call bounded by the clients' timeout, redirects refused, the
// token re-read on rotation (framework.NewClients), and every failure classified.
type kube struct {
	dyn dynamic.Interface
}

func (k kube) resource(gvr schema.GroupVersionResource, ns string) dynamic.ResourceInterface {
	if ns == "" {
		return k.dyn.Resource(gvr)
	}
	return k.dyn.Resource(gvr).Namespace(ns)
}

func describe(verb string, gvr schema.GroupVersionResource, ns, name string) string {
	if ns == "" {
		return fmt.Sprintf("%s %s %s", verb, gvr.Resource, name)
	}
	return fmt.Sprintf("%s %s %s/%s", verb, gvr.Resource, ns, name)
}

// kinds of what the chain reads by name: an answer of another kind is not the object asked for.
var kinds = map[schema.GroupResource]string{
	external.PackageVariantGVR.GroupResource(): external.PackageVariantKind,
	external.BareMetalHostGVR.GroupResource():  external.BareMetalHostKind,
	v1alpha1.GVR.GroupResource():               v1alpha1.Kind,
	external.ClusterGVR("").GroupResource():    external.ClusterKind,
}

// get reads live, for when the cache cannot be trusted (after a write whose answer was lost, before
// removing a finalizer). An answer that is not the object asked for (a list, another kind or name) is a
// retryable protocol error, never "not found" or "someone else's"; c (may be nil) is the request it is
// read for, to say so once.
func (k kube) get(ctx context.Context, c *framework.Cause, gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	op := describe("get", gvr, ns, name)
	u, err := k.resource(gvr, ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, framework.ClassifyAPIError(op, false, err)
	}
	if err := noteAnswer(c, op, framework.CheckNamedAnswer(op, u, gvr.GroupVersion().String(), kinds[gvr.GroupResource()], ns, name)); err != nil {
		return nil, err
	}
	return u, nil
}

// getSecret is get for the typed Secret client (Secrets are not cached, and not read as unstructured so
// their data is never logged by accident).
func getSecret(ctx context.Context, c *framework.Cause, secrets typedcorev1.SecretInterface, ns, name string) (*corev1.Secret, error) {
	op := "get Secret " + ns + "/" + name
	sec, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, framework.ClassifyAPIError(op, false, err)
	}
	// The typed client does not keep the kind; a list decodes into an empty Secret, which has no name.
	if err := noteAnswer(c, op, framework.CheckNamedAnswer(op, sec, "", "", ns, name)); err != nil {
		return nil, err
	}
	return sec, nil
}

// protocolNoted remembers which request has been told about a wrong answer to which read: the read is
// retried every pass, and one log line per object says what is wrong (again after it was right once).
var protocolNoted sync.Map

func noteAnswer(c *framework.Cause, op string, err error) error {
	if c == nil || c.Object == nil {
		return err
	}
	key := string(c.Object.GetUID()) + " " + op
	if err == nil {
		protocolNoted.Delete(key)
		return nil
	}
	if _, seen := protocolNoted.LoadOrStore(key, true); !seen && c.Logger != nil {
		c.Logger.Warn("the API server answered a named read with something else; treating it as a protocol error and retrying",
			zap.String("read", op), zap.Error(err))
	}
	return err
}

func (k kube) create(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	u, err := k.resource(gvr, obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{})
	return u, framework.ClassifyAPIError(describe("create", gvr, obj.GetNamespace(), obj.GetName()), true, err)
}

func (k kube) update(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	u, err := k.resource(gvr, obj.GetNamespace()).Update(ctx, obj, metav1.UpdateOptions{})
	return u, framework.ClassifyAPIError(describe("update", gvr, obj.GetNamespace(), obj.GetName()), true, err)
}

// delete removes exactly the object we looked at: the uid precondition refuses a same-named replacement.
func (k kube) delete(ctx context.Context, gvr schema.GroupVersionResource, ns, name string, uid types.UID) error {
	opts := metav1.DeleteOptions{}
	if uid != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	err := k.resource(gvr, ns).Delete(ctx, name, opts)
	return framework.ClassifyAPIError(describe("delete", gvr, ns, name), true, err)
}
