package handlers

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

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

// get reads live, for when the cache cannot be trusted (after a write whose answer was lost, before
// removing a finalizer).
func (k kube) get(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	u, err := k.resource(gvr, ns).Get(ctx, name, metav1.GetOptions{})
	return u, framework.ClassifyAPIError(describe("get", gvr, ns, name), false, err)
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
