package world

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/o2ims-operator/o2ims-operator/api/external"
)

// CAPM3's Metal3Machine controller and the image part of BMO's host state machine, for hosts a test
// hands to a cluster's Machine. From cluster-api-provider-metal3 v1.13.2 (e58645d8),
// baremetal/metal3machine_manager.go: Associate sets the host's spec.consumerRef to the Metal3Machine
// (setHostConsumerRef, with an ownerReference to it, controller true), its image and online, and the
// cluster-name label (setHostLabel); the Metal3Machine carries the annotation metal3.io/BareMetalHost
// (HostAnnotation, "<namespace>/<name>") and CAPM3's finalizer. Delete clears image and online, waits while
// the host is preparing/provisioning/provisioned/deprovisioning/powering off before delete/deleting, then
// clears consumerRef, its ownerReference and the label, and the finalizer goes. And from baremetal-operator
// v0.13.2 (2b3ea2e1): an image makes an available host provisioning then provisioned; an image removed
// from a provisioned host makes it deprovisioning then available (apis/metal3.io/v1alpha1
// baremetalhost_types.go, the ProvisioningState values).
//
// The world runs no Machine controller and stores no Machines: the Metal3Machine's ownerReference names
// its Machine as CAPI sets it, and ScaleDown deletes the Metal3Machine as CAPI's Machine controller does
// once the node is drained (its infrastructure reference deleted first).
const (
	m3mFinalizer   = "metal3machine.infrastructure.cluster.x-k8s.io"
	hostAnnotation = "metal3.io/BareMetalHost"
	clusterLabel   = "cluster.x-k8s.io/cluster-name"
	m3mVersion     = "v1beta2" // what CAPM3 v1.13.2's controllers write (api/v1beta2)
	machineVersion = "cluster.x-k8s.io/v1beta2"
)

var m3mGVR = external.Metal3MachineGVR(m3mVersion)

// capm3 holds when each host began its current image phase.
type capm3 struct {
	w     *World
	mu    sync.Mutex
	phase map[types.UID]imagePhase
}

type imagePhase struct {
	state string
	since time.Time
}

// ConsumeHost is a Machine of cluster consuming the BareMetalHost ns/bmh through a Metal3Machine of the
// Machine's name (the Metal3Machine first, then the host, as Associate does). Like CAPM3's chooseHost it
// takes only an available (or ready) host without consumer, error or deletion; the host is written
// conditionally on the version read. taken: false when the host could not be had (the Metal3Machine is then removed).
func (w *World) ConsumeHost(ctx context.Context, ns, bmh, machine, cluster string) (taken bool, err error) {
	hosts := w.opts.Dynamic.Resource(external.BareMetalHostGVR).Namespace(ns)
	host, err := hosts.Get(ctx, bmh, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	ref, _, _ := unstructured.NestedMap(host.Object, "spec", "consumerRef")
	state, _, _ := unstructured.NestedString(host.Object, "status", "provisioning", "state")
	errMsg, _, _ := unstructured.NestedString(host.Object, "status", "errorMessage")
	if ref != nil || host.GetDeletionTimestamp() != nil || errMsg != "" || (state != "available" && state != "ready") {
		return false, nil
	}
	m3m := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": m3mGVR.GroupVersion().String(), "kind": external.Metal3MachineKind,
		"spec": map[string]any{"image": map[string]any{"url": "http://images.example/node.qcow2", "checksum": "http://images.example/node.qcow2.sha256sum"}},
	}}
	m3m.SetName(machine)
	m3m.SetNamespace(ns)
	m3m.SetFinalizers([]string{m3mFinalizer})
	m3m.SetLabels(map[string]string{clusterLabel: cluster})
	m3m.SetAnnotations(map[string]string{hostAnnotation: ns + "/" + bmh})
	yes := true
	m3m.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: machineVersion, Kind: external.MachineKind, Name: machine,
		UID: types.UID(uuid.NewString()), Controller: &yes, BlockOwnerDeletion: &yes}})
	machines := w.opts.Dynamic.Resource(m3mGVR).Namespace(ns)
	created, err := machines.Create(ctx, m3m, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	patch := map[string]any{
		"metadata": map[string]any{
			"resourceVersion": host.GetResourceVersion(),
			"labels":          map[string]any{clusterLabel: cluster},
			"ownerReferences": []any{map[string]any{"apiVersion": m3mGVR.GroupVersion().String(), "kind": external.Metal3MachineKind,
				"name": machine, "uid": string(created.GetUID()), "controller": true}},
		},
		"spec": map[string]any{
			"consumerRef": map[string]any{"apiVersion": m3mGVR.GroupVersion().String(), "kind": external.Metal3MachineKind, "name": machine, "namespace": ns},
			"image":       map[string]any{"url": "http://images.example/node.qcow2", "checksum": "http://images.example/node.qcow2.sha256sum"},
			"online":      true,
		},
	}
	body, _ := json.Marshal(patch)
	_, err = hosts.Patch(ctx, bmh, types.MergePatchType, body, metav1.PatchOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		_, _ = machines.Patch(ctx, machine, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		return false, machines.Delete(ctx, machine, metav1.DeleteOptions{})
	}
	return err == nil, err
}

// ScaleDown is CAPI scaling the Machine away: its Metal3Machine is deleted and CAPM3 deprovisions the host.
func (w *World) ScaleDown(ctx context.Context, ns, machine string) error {
	err := w.opts.Dynamic.Resource(m3mGVR).Namespace(ns).Delete(ctx, machine, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// imageState is the host's state once registered ("available"): provisioning → provisioned with an
// image, deprovisioning → available when the image goes from a host that had one; again: when to look.
func (c *capm3) imageState(bmh *unstructured.Unstructured, registered string) (state string, poweredOn bool, again time.Duration) {
	if registered != "available" {
		return registered, false, 0
	}
	image, _, _ := unstructured.NestedFieldNoCopy(bmh.Object, "spec", "image")
	online, _, _ := unstructured.NestedBool(bmh.Object, "spec", "online")
	current, _, _ := unstructured.NestedString(bmh.Object, "status", "provisioning", "state")
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.phase == nil {
		c.phase = map[types.UID]imagePhase{}
	}
	p := c.phase[bmh.GetUID()]
	step := func(doing, done string, on bool) (string, bool, time.Duration) {
		if p.state != doing && p.state != done {
			p = imagePhase{state: doing, since: time.Now()}
			c.phase[bmh.GetUID()] = p
		}
		if d := due(p.since, c.w.opts.ImageDelay); d > 0 {
			return doing, on, d
		}
		c.phase[bmh.GetUID()] = imagePhase{state: done, since: p.since}
		return done, on && done == "provisioned", 0
	}
	switch {
	case image != nil:
		return step("provisioning", "provisioned", online)
	case current == "provisioning" || current == "provisioned" || current == "deprovisioning":
		return step("deprovisioning", "available", false)
	}
	delete(c.phase, bmh.GetUID())
	return "available", false, 0
}

// reconcile plays CAPM3's Delete for a Metal3Machine being deleted.
func (c *capm3) reconcile(ctx context.Context, m3m *unstructured.Unstructured, _ time.Time) (time.Duration, error) {
	if m3m.GetDeletionTimestamp() == nil || !hasFinalizer(m3m, m3mFinalizer) {
		return 0, nil
	}
	dyn := c.w.opts.Dynamic
	ns, name, _ := cutKey(m3m.GetAnnotations()[hostAnnotation])
	hosts := dyn.Resource(external.BareMetalHostGVR).Namespace(ns)
	bmh, err := hosts.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || name == "":
	case err != nil:
		return 0, err
	default:
		if done, err := c.release(ctx, bmh, m3m); !done || err != nil {
			return 20 * time.Millisecond, err
		}
	}
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": without(m3m.GetFinalizers(), m3mFinalizer),
		"resourceVersion": m3m.GetResourceVersion()}})
	_, err = dyn.Resource(m3mGVR).Namespace(m3m.GetNamespace()).Patch(ctx, m3m.GetName(), types.MergePatchType, body, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	return 0, err
}

// release is one step of CAPM3's Delete on the host; done: consumerRef cleared (or never this one's).
func (c *capm3) release(ctx context.Context, bmh, m3m *unstructured.Unstructured) (done bool, err error) {
	hosts := c.w.opts.Dynamic.Resource(external.BareMetalHostGVR).Namespace(bmh.GetNamespace())
	ref, _, _ := unstructured.NestedStringMap(bmh.Object, "spec", "consumerRef")
	if ref["name"] != m3m.GetName() || ref["kind"] != external.Metal3MachineKind {
		return true, nil
	}
	image, _, _ := unstructured.NestedFieldNoCopy(bmh.Object, "spec", "image")
	online, _, _ := unstructured.NestedBool(bmh.Object, "spec", "online")
	if image != nil || online {
		_, err := hosts.Patch(ctx, bmh.GetName(), types.MergePatchType, []byte(`{"spec":{"image":null,"online":false}}`), metav1.PatchOptions{})
		return false, err
	}
	state, _, _ := unstructured.NestedString(bmh.Object, "status", "provisioning", "state")
	switch state {
	case "preparing", "provisioning", "provisioned", "deprovisioning", "powering off before delete", "deleting":
		return false, nil
	}
	var owners []any
	for _, o := range bmh.GetOwnerReferences() {
		if o.Kind != external.Metal3MachineKind || o.Name != m3m.GetName() {
			owners = append(owners, map[string]any{"apiVersion": o.APIVersion, "kind": o.Kind, "name": o.Name, "uid": string(o.UID)})
		}
	}
	body, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"ownerReferences": owners, "labels": map[string]any{clusterLabel: nil}, "resourceVersion": bmh.GetResourceVersion()},
		"spec":     map[string]any{"consumerRef": nil},
	})
	_, err = hosts.Patch(ctx, bmh.GetName(), types.MergePatchType, body, metav1.PatchOptions{})
	return err == nil, err
}

func cutKey(key string) (ns, name string, ok bool) {
	for i := 0; i < len(key); i++ {
		if key[i] == '/' {
			return key[:i], key[i+1:], true
		}
	}
	return "", "", false
}

func without(list []string, s string) []string {
	out := []string{}
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}
