package handlers

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// recSince is what the operator sent after mark (an index into the recorder), as "METHOD path".
func recSince(r *kubeapi.Recorder, mark int) []string {
	var out []string
	for _, q := range r.Requests()[mark:] {
		out = append(out, q.String())
	}
	return out
}

func recMark(r *kubeapi.Recorder) int { return len(r.Requests()) }

func countCalls(calls []string, method, substr string) int {
	n := 0
	for _, q := range calls {
		if strings.HasPrefix(q, method+" ") && strings.Contains(q, substr) {
			n++
		}
	}
	return n
}

// Deleting a fulfilled request whose PackageVariant Porch holds for a moment (its finalizer): the
// PackageVariant is read live and deleted once, the request shows Deleting while Porch finishes, and
// when it is gone only the finalizer comes off — no status is written that nobody would read.
func TestDeletionWritesOneStatusAndRemovesTheFinalizer(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	c := startChain(t, srv, "release-calls", nil, nil)
	createPR(t, srv, provisioningRequest("release-calls-1", "release-calls", tmplOK, map[string]any{"clusterName": "edge-release-calls-1"}))
	waitState(t, srv, "release-calls-1", v1alpha1.StateFulfilled, 30*time.Second)
	waitHandled(t, srv, "release-calls-1")
	time.Sleep(500 * time.Millisecond) // the fulfilled pass's trailing writes (events)

	mark := recMark(c.rec)
	require.NoError(t, srv.AdminDynamic().Resource(v1alpha1.GVR).Delete(context.Background(), "release-calls-1", metav1.DeleteOptions{}))
	eventually(t, 30*time.Second, func() bool { _, ok := getPR(t, srv, "release-calls-1"); return !ok }, "request never went away")
	calls := recSince(c.rec, mark)
	pr := "/provisioningrequests/release-calls-1"
	assert.Equal(t, 1, countCalls(calls, "PATCH", pr+"/status"), "status writes of the deletion: %v", calls)
	assert.Equal(t, 1, countCalls(calls, "PATCH", pr)-countCalls(calls, "PATCH", pr+"/status"), "finalizer removal: %v", calls)
	assert.Equal(t, 1, countCalls(calls, "DELETE", "/packagevariants/release-calls-1"), "%v", calls)
	_, pvLeft := getPV(t, srv, "release-calls-1")
	assert.False(t, pvLeft, "the request's package variant outlived it")
}

// A request another finalizer still holds stays after our release: its status says everything of ours
// is released.
func TestReleasedRequestHeldByAnotherFinalizerSaysSo(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	startChain(t, srv, "release-held", nil, nil)
	u := provisioningRequest("release-held-1", "release-held", tmplOK, map[string]any{"clusterName": "edge-release-held-1"})
	u.SetFinalizers([]string{"example.com/someone-else"})
	createPR(t, srv, u)
	waitState(t, srv, "release-held-1", v1alpha1.StateFulfilled, 30*time.Second)
	waitHandled(t, srv, "release-held-1")
	ctx := context.Background()
	prs := srv.AdminDynamic().Resource(v1alpha1.GVR)
	require.NoError(t, prs.Delete(ctx, "release-held-1", metav1.DeleteOptions{}))
	defer func() {
		_, _ = prs.Patch(ctx, "release-held-1", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	}()
	eventually(t, 30*time.Second, func() bool {
		got, ok := getPR(t, srv, "release-held-1")
		return ok && len(got.GetFinalizers()) == 1 && v1alpha1.StatusOf(got).Message == "Deleting; all resources released"
	}, "never released with the other finalizer kept")
	_, pvLeft := getPV(t, srv, "release-held-1")
	assert.False(t, pvLeft)
}
