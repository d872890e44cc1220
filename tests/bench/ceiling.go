package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

// targetCeilingShare is the fraction of the world-alone ceiling a contender should reach (issue 39).
const targetCeilingShare = 0.8

// ceiling is the world-alone run (issue 39, item 3): the bench creates the PackageVariants the operator
// would, all at once, with no operator running, and times the world and the API server bringing each
// Cluster to Available. No operator can fulfil faster on this machine with this world.
type ceiling struct {
	N, Available int
	Total        time.Duration // first create sent → last Cluster Available seen
	Rate         float64
	CPU          cpuWindow
	Note         string
}

// pvNamespace is where the stack's world and the operator keep PackageVariants and Clusters.
const pvNamespace = "default"

// measureCeiling runs the world alone with n PackageVariants, then deletes them and their Clusters.
func measureCeiling(ctx context.Context, st *stack.Stack, n int) (ceiling, error) {
	c := ceiling{N: n}
	dyn := fastAdmin(st)
	clusters := dyn.Resource(external.ClusterGVR("v1beta2")).Namespace(pvNamespace)
	list, err := clusters.List(ctx, metav1.ListOptions{})
	if err != nil {
		return c, err
	}
	w, err := clusters.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		return c, err
	}
	defer w.Stop()
	var mu sync.Mutex
	available := map[string]time.Time{}
	go func() {
		for ev := range w.ResultChan() {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok || ev.Type == watch.Deleted || !conditionTrue(u, "Available") {
				continue
			}
			mu.Lock()
			if _, seen := available[u.GetName()]; !seen {
				available[u.GetName()] = time.Now()
			}
			mu.Unlock()
		}
	}()
	pvs := make([]*unstructured.Unstructured, n)
	for i := range pvs {
		pvs[i] = ceilingPackageVariant(fmt.Sprintf("ceiling-%04d", i))
	}
	pids := contenderPids(st, &contender{})
	delete(pids, "operator") // none runs
	m := startMeter(pids)
	t0 := time.Now()
	if _, err := createAllOf(ctx, dyn.Resource(external.PackageVariantGVR), pvs, 64); err != nil {
		return c, err
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		mu.Lock()
		c.Available = len(available)
		var last time.Time
		for _, at := range available {
			if at.After(last) {
				last = at
			}
		}
		mu.Unlock()
		if c.Available >= n {
			c.Total = last.Sub(t0)
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			c.Note = fmt.Sprintf("%d of %d Clusters Available within 3 minutes", c.Available, n)
			c.Total = time.Since(t0)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.CPU = m.end()
	c.Rate = float64(c.Available) / max(c.Total.Seconds(), 0.001)
	// Cleared away before the contenders start (16 callers: a thousand serial deletes take long).
	names := make(chan string)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range names {
				_ = dyn.Resource(external.PackageVariantGVR).Namespace(pvNamespace).Delete(ctx, name, metav1.DeleteOptions{})
				_ = clusters.Delete(ctx, name, metav1.DeleteOptions{})
			}
		}()
	}
	for i := range pvs {
		names <- pvs[i].GetName()
	}
	close(names)
	wg.Wait()
	return c, nil
}

// ceilingPackageVariant is what the operator creates for a request of that cluster name
// (handlers/packagevariant.go; the peer's desiredPackageVariant), without an owning request.
func ceilingPackageVariant(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": external.PackageVariantGVR.GroupVersion().String(), "kind": "PackageVariant",
		"metadata": map[string]any{"name": name, "namespace": pvNamespace},
		"spec": map[string]any{
			"upstream":    map[string]any{"repo": "catalog-infra-capi", "package": "nephio-workload-cluster", "workspaceName": "v3.0.0"},
			"downstream":  map[string]any{"repo": "mgmt", "package": name},
			"annotations": map[string]any{"approval.nephio.org/policy": "initial"},
			"pipeline": map[string]any{"mutators": []any{map[string]any{"image": "gcr.io/kpt-fn/set-labels:v0.2.0",
				"configMap": map[string]any{"nephio.org/site-type": "edge"}}}},
		},
	}}
	return u
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
