package world

import (
	"context"
	"encoding/json"
	"reflect"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/o2ims-operator/o2ims-operator/api/external"
)

// capi plays Cluster API's Cluster controller for one served version: phase Pending → Provisioning →
// Provisioned, with the v1beta2 summary condition Available (or v1beta1's Ready) as CAPI v1.14 reports them.
type capi struct {
	w   *World
	gvr schema.GroupVersionResource
	mu  sync.Mutex
	// rollouts: per Cluster, the revision last seen applied and when it changed (zero: the first one).
	rollouts map[string]rollout
}

type rollout struct {
	revision string
	since    time.Time
}

// rollingOut tells whether the Cluster is rolling out a newly applied revision (RolloutDelay from the
// change) and how long until it is done.
func (c *capi) rollingOut(cl *unstructured.Unstructured) (bool, time.Duration) {
	key := cl.GetNamespace() + "/" + cl.GetName()
	rev := cl.GetAnnotations()[AnnotationRevision]
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rollouts == nil {
		c.rollouts = map[string]rollout{}
	}
	r, seen := c.rollouts[key]
	if !seen || r.revision != rev {
		r = rollout{revision: rev}
		if seen {
			r.since = time.Now()
		}
		c.rollouts[key] = r
	}
	if r.since.IsZero() {
		return false, 0
	}
	d := due(r.since, c.w.opts.RolloutDelay)
	return d > 0, d
}

// ensureCluster creates the Cluster the rendered package would apply (a GitOps sync), with the spec it
// renders (none without PackageRevisions) plus the controlPlaneEndpoint CAPI fills in from the
// infrastructure cluster: the live spec carries more than the package sets, as a real one does.
func (w *World) ensureCluster(ctx context.Context, name, template, revision string, rendered map[string]any) error {
	gvr := external.ClusterGVR(w.opts.ClusterVersion)
	spec := map[string]any{}
	for k, v := range rendered {
		spec[k] = v
	}
	spec["controlPlaneEndpoint"] = map[string]any{"host": "10.10.0.1", "port": int64(6443)}
	cl := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": external.ClusterKind, "spec": spec,
	}}
	cl.SetName(name)
	cl.SetNamespace(w.opts.ClusterNamespace)
	ann := map[string]string{AnnotationTemplate: template}
	if revision != "" {
		ann[AnnotationRevision] = revision
	}
	cl.SetAnnotations(ann)
	_, err := w.opts.Dynamic.Resource(gvr).Namespace(w.opts.ClusterNamespace).Create(ctx, cl, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func (c *capi) reconcile(ctx context.Context, cl *unstructured.Unstructured, first time.Time) (time.Duration, error) {
	o := c.w.opts
	if cl.GetDeletionTimestamp() != nil {
		return 0, nil
	}
	template := cl.GetAnnotations()[AnnotationTemplate]
	half := o.ProvisionDelay / 2
	phase, again := "Provisioning", due(first, o.ProvisionDelay)
	if d := due(first, half); d > 0 {
		phase, again = "Pending", d
	}
	failure, failing := o.ClusterFailure[template]
	switch {
	case failing && phase == "Provisioning":
		phase, again = "Failed", 0
	case again == 0 && !o.NeverProvision[template] && !failing:
		phase = "Provisioned"
	case o.NeverProvision[template] && phase == "Provisioning":
		again = 0
	}
	degraded := false
	if d, ok := o.ClusterDegradesAfter[template]; ok && phase == "Provisioned" {
		left := due(first, d)
		degraded = left == 0
		if left > 0 && (again == 0 || left < again) {
			again = left
		}
	}
	rolling, left := c.rollingOut(cl)
	if rolling && (again == 0 || left < again) {
		again = left
	}
	var status map[string]any
	if o.ClusterVersion == "v1beta1" {
		status = v1beta1Status(phase, failure)
		status["observedGeneration"] = maxInt64(cl.GetGeneration(), 1)
		status["v1beta2"] = map[string]any{"conditions": rolloutConditions(rolling)}
	} else {
		status = v1beta2Status(cl, phase, failure)
		if degraded {
			status["conditions"] = []any{map[string]any{"type": "Available", "status": "False", "reason": "NotAvailable",
				"message": "* RemoteConnectionProbe: Remote connection probe failed", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}}
		}
		status["conditions"] = append(status["conditions"].([]any), rolloutConditions(rolling)...)
	}
	current, _, _ := unstructured.NestedMap(cl.Object, "status")
	if !sameIgnoringTimes(current, status) {
		body, _ := json.Marshal(map[string]any{"status": status})
		_, err := o.Dynamic.Resource(c.gvr).Namespace(cl.GetNamespace()).Patch(ctx, cl.GetName(), types.MergePatchType, body, metav1.PatchOptions{}, "status")
		if err != nil && !apierrors.IsNotFound(err) {
			return 0, err
		}
	}
	return again, nil
}

// rolloutConditions are the Cluster's v1beta2 rollout conditions (cluster-api v1.14.0
// api/core/v1beta2/cluster_types.go: RollingOut with RollingOut/NotRollingOut, ControlPlaneMachinesUpToDate
// and WorkerMachinesUpToDate with UpToDate/NotUpToDate).
func rolloutConditions(rolling bool) []any {
	now := time.Now().UTC().Format(time.RFC3339)
	cond := func(t, status, reason, msg string) any {
		return map[string]any{"type": t, "status": status, "reason": reason, "message": msg, "lastTransitionTime": now}
	}
	if rolling {
		return []any{
			cond("RollingOut", "True", "RollingOut", "* MachineDeployment md-0: rolling out 1 not up-to-date replica"),
			cond("ControlPlaneMachinesUpToDate", "True", "UpToDate", ""),
			cond("WorkerMachinesUpToDate", "False", "NotUpToDate", "* Machine md-0-abc: Version v1.33.1, v1.34.0 required"),
		}
	}
	return []any{
		cond("RollingOut", "False", "NotRollingOut", ""),
		cond("ControlPlaneMachinesUpToDate", "True", "UpToDate", ""),
		cond("WorkerMachinesUpToDate", "True", "UpToDate", ""),
	}
}

func v1beta2Status(cl *unstructured.Unstructured, phase, failure string) map[string]any {
	now := time.Now().UTC().Format(time.RFC3339)
	available := map[string]any{"type": "Available", "status": "False", "reason": "NotAvailable",
		"message": "* ControlPlaneAvailable: waiting for the control plane", "lastTransitionTime": now}
	st := map[string]any{
		"phase":              phase,
		"observedGeneration": maxInt64(cl.GetGeneration(), 1),
	}
	switch phase {
	case "Provisioned":
		available = map[string]any{"type": "Available", "status": "True", "reason": "Available", "message": "", "lastTransitionTime": now}
		st["initialization"] = map[string]any{"infrastructureProvisioned": true, "controlPlaneInitialized": true}
	case "Failed":
		st["deprecated"] = map[string]any{"v1beta1": map[string]any{"failureReason": "InvalidConfiguration", "failureMessage": failure}}
	}
	st["conditions"] = []any{available}
	return st
}

func v1beta1Status(phase, failure string) map[string]any {
	now := time.Now().UTC().Format(time.RFC3339)
	ready := "False"
	st := map[string]any{"phase": phase, "infrastructureReady": phase == "Provisioned", "controlPlaneReady": phase == "Provisioned"}
	if phase == "Provisioned" {
		ready = "True"
	}
	if phase == "Failed" {
		st["failureReason"] = "InvalidConfiguration"
		st["failureMessage"] = failure
	}
	cond := map[string]any{"type": "Ready", "status": ready, "lastTransitionTime": now}
	if ready == "False" {
		cond["severity"] = "Info"
		cond["reason"] = "WaitingForControlPlane"
	}
	st["conditions"] = []any{cond}
	return st
}

// sameIgnoringTimes compares statuses without lastTransitionTime, so an unchanged status is not rewritten.
func sameIgnoringTimes(a, b map[string]any) bool {
	strip := func(m map[string]any) any {
		raw, _ := json.Marshal(m)
		var out map[string]any
		_ = json.Unmarshal(raw, &out)
		lists := []any{out["conditions"]}
		if v2, ok := out["v1beta2"].(map[string]any); ok {
			lists = append(lists, v2["conditions"])
		}
		for _, l := range lists {
			conds, _ := l.([]any)
			for _, c := range conds {
				if cm, ok := c.(map[string]any); ok {
					delete(cm, "lastTransitionTime")
				}
			}
		}
		return out
	}
	return reflect.DeepEqual(strip(a), strip(b))
}

func maxInt64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}
