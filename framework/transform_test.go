package framework

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// A widget created as client-side `kubectl apply` creates it (the object again in the last-applied
// annotation, managedFields from the server) and a server-side applied gadget: the cache holds neither
// managedFields, nor the widget's last-applied annotation; the handler sees the same; what the
// operator writes leaves the server's copies of both alone; the diff-base is as before.
func TestCacheDropsManagedFieldsAndLastAppliedServerKeepsThem(t *testing.T) {
	t.Parallel()
	label := "transform"
	var log calls
	to := newTestOperator(t, label, Options{}, func(_ *Operator, w *Watch) {
		w.Related(gadgetGVR, "default", SameName(false))
		w.OnCreate("create_fn", func(_ context.Context, c *Cause) error {
			log.add(c)
			c.Patch.SetStatus("done", "phase")
			c.Patch.SetAnnotation(testPrefix+"/touched", "yes")
			return nil
		})
	})
	to.start(t)

	w := widget(label, "tf1", map[string]any{"size": int64(2)})
	applied, err := json.Marshal(w.Object)
	require.NoError(t, err)
	w.SetAnnotations(map[string]string{lastAppliedAnnotation: string(applied) + "\n", "team": "edge"})
	_, err = kubeapi.Shared(t).AdminDynamic().Resource(widgetGVR).Create(context.Background(), w,
		metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"})
	require.NoError(t, err)
	g := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.o2ims.io/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": "tf1", "annotations": map[string]any{lastAppliedAnnotation: "{}\n"}},
		"spec":     map[string]any{},
	}}
	_, err = kubeapi.Shared(t).AdminDynamic().Resource(gadgetGVR).Namespace("default").Apply(context.Background(), "tf1", g,
		metav1.ApplyOptions{FieldManager: "test", Force: true})
	require.NoError(t, err)

	eventually(t, 20*time.Second, func() bool {
		u := mustGet(t, "tf1")
		return statusField(u, "phase") == "done" && u.GetAnnotations()[testPrefix+"/last-handled-configuration"] != ""
	}, "never handled")
	runs := log.of("create_fn", "tf1")
	require.NotEmpty(t, runs)
	seen := runs[0].Object
	assert.Empty(t, seen.GetManagedFields(), "the handler's object carries no managedFields")
	assert.NotContains(t, seen.GetAnnotations(), lastAppliedAnnotation)
	assert.Equal(t, "edge", seen.GetAnnotations()["team"], "other annotations are kept")

	cached, found, err := to.op.Cache().Get(widgetGVR, "", "tf1")
	require.NoError(t, err)
	require.True(t, found)
	assert.Empty(t, cached.GetManagedFields())
	peeked, found, err := to.op.Cache().Peek(widgetGVR, "", "tf1")
	require.NoError(t, err)
	require.True(t, found)
	again, _, _ := to.op.Cache().Peek(widgetGVR, "", "tf1")
	assert.Same(t, peeked, again, "Peek answers the shared cached object")
	assert.NotSame(t, peeked, cached, "Get answers a copy")
	assert.NotContains(t, cached.GetAnnotations(), lastAppliedAnnotation)
	eventually(t, 10*time.Second, func() bool {
		_, found, _ := to.op.Cache().Get(gadgetGVR, "default", "tf1")
		return found
	}, "the gadget never reached the cache")
	gc, _, err := to.op.Cache().Get(gadgetGVR, "default", "tf1")
	require.NoError(t, err)
	assert.Empty(t, gc.GetManagedFields(), "related objects carry no managedFields either")
	assert.Contains(t, gc.GetAnnotations(), lastAppliedAnnotation, "a related object keeps it: a handler may update it from the cache")

	live := mustGet(t, "tf1")
	assert.Equal(t, string(applied)+"\n", live.GetAnnotations()[lastAppliedAnnotation], "the operator's patches left it alone")
	assert.Equal(t, "yes", live.GetAnnotations()[testPrefix+"/touched"])
	assert.NotEmpty(t, live.GetManagedFields())
	var base map[string]any
	require.NoError(t, json.Unmarshal([]byte(live.GetAnnotations()[testPrefix+"/last-handled-configuration"]), &base))
	assert.Equal(t, map[string]any{"labels": map[string]any{"test": label}, "annotations": map[string]any{"team": "edge"}},
		base["metadata"], "the diff-base is kopf's: without last-applied")

	// Applying the same object again (kubectl rewrites last-applied) is no essential change.
	eventually(t, 10*time.Second, func() bool {
		u := mustGet(t, "tf1")
		ann := u.GetAnnotations()
		ann[lastAppliedAnnotation] = string(applied) + " \n"
		u.SetAnnotations(ann)
		_, err := kubeapi.Shared(t).AdminDynamic().Resource(widgetGVR).Update(context.Background(), u, metav1.UpdateOptions{})
		return err == nil
	}, "could not rewrite last-applied")
	time.Sleep(500 * time.Millisecond)
	assert.Len(t, log.of("create_fn", "tf1"), len(runs))
}

func TestStripUnreadIsIdempotentAndTolerant(t *testing.T) {
	strip := stripUnread(true)
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{
		"name": "a", "managedFields": []any{map[string]any{"manager": "x"}},
		"annotations": map[string]any{lastAppliedAnnotation: "{}"},
	}}}
	for i := 0; i < 2; i++ {
		out, err := strip(u)
		require.NoError(t, err)
		assert.Equal(t, map[string]any{"metadata": map[string]any{"name": "a"}}, out.(*unstructured.Unstructured).Object)
	}
	for _, odd := range []any{"not an object", &unstructured.Unstructured{Object: map[string]any{}}} {
		out, err := strip(odd)
		require.NoError(t, err)
		assert.Equal(t, odd, out)
	}
}
