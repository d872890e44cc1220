package framework

import (
	"context"
	"fmt"
	"github.com/o2ims-operator/o2ims-operator/framework/kopf"
	"testing"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
)

// benchController builds a controller whose cache holds n handled widgets (diff-base in place), so a pass
// exercises the whole dispatch path — queue, freshness, cause detection, progress, handler, patch
// computation — and ends without a write, as a resume of an unchanged object does.
func benchController(b *testing.B, n int, fn HandlerFunc) (*controller, []string) {
	b.Helper()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{widgetGVR: "WidgetList"})
	clients := &Clients{Dynamic: dyn, watch: dyn, Kubernetes: kubefake.NewClientset()}
	op, err := New(clients, Options{Prefix: testPrefix, Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	w := op.Watch(widgetGVR, WatchOptions{})
	w.OnCreate("create_fn", fn)
	w.OnResume("create_fn", fn)
	if err := op.buildControllers(); err != nil {
		b.Fatal(err)
	}
	c := op.ctrls[0]
	keys := make([]string, n)
	for i := range keys {
		u := widget("bench", fmt.Sprintf("w%05d", i), map[string]any{
			"templateName": "edge", "templateVersion": "v1",
			"templateParameters": map[string]any{"clusterName": fmt.Sprintf("c%d", i), "labels": map[string]any{"a": "b"}},
		})
		u.SetUID("uid")
		u.SetResourceVersion("1")
		u.SetAnnotations(map[string]string{testPrefix + "/last-handled-configuration": kopf.EncodeDiffBase(essence(u, testPrefix))})
		if err := c.informer.GetIndexer().Add(u); err != nil {
			b.Fatal(err)
		}
		keys[i] = u.GetName()
	}
	return c, keys
}

func benchmarkDispatch(b *testing.B, resume bool) {
	var runs int
	c, keys := benchController(b, 1000, func(_ context.Context, cause *Cause) error {
		runs++
		st, _, _ := unstructured.NestedString(cause.Object.Object, "status", "provisioningStatus", "provisioningState")
		_ = st
		return nil
	})
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		key := keys[i%len(keys)]
		if resume {
			c.mu.Lock()
			c.stateLocked(key, "uid").shared.initial = true
			c.mu.Unlock()
		}
		c.queue.Add(key)
		c.processNext(ctx)
	}
	b.StopTimer()
	if resume && runs != b.N {
		b.Fatalf("handler ran %d times for %d passes", runs, b.N)
	}
}

// BenchmarkDispatchResume is a pass that runs a handler (resume of a handled object) and writes nothing.
func BenchmarkDispatchResume(b *testing.B) { benchmarkDispatch(b, true) }

// BenchmarkDispatchNoop is a pass woken by a change that is not essential: cause detection only.
func BenchmarkDispatchNoop(b *testing.B) { benchmarkDispatch(b, false) }
