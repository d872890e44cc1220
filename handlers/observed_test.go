package handlers

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// Porch's Ready is read by type and believed only for the PackageVariant's current generation where
// Porch reports one; after a rewrite it is necessary, never sufficient (porch.go), and no time makes it so.
func TestRenderingReadyBelievesReadyOnlyForTheCurrentSpec(t *testing.T) {
	updated := time.Date(2026, 12, 2, 10, 0, 0, 500, time.UTC)
	pv := func(gen int64, ann string, ready map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{
			map[string]any{"type": "Stalled", "status": "False"}, ready,
		}}}}
		u.SetGeneration(gen)
		if ann != "" {
			u.SetAnnotations(map[string]string{AnnotationSpecUpdated: ann})
		}
		return u
	}
	stamp := updated.Format(time.RFC3339Nano)
	readyAt := func(at time.Time) map[string]any {
		return map[string]any{"type": "Ready", "status": "True", "lastTransitionTime": at.Format(time.RFC3339)}
	}
	cases := []struct {
		name   string
		pv     *unstructured.Unstructured
		ready  bool
		detail string
	}{
		{"never rewritten", pv(1, "", readyAt(updated.Add(-time.Hour))), true, ""},
		{"rewritten: Ready is necessary, porch.go decides", pv(2, stamp, readyAt(updated.Add(-time.Hour))), true, ""},
		{"observedGeneration behind", pv(3, stamp, map[string]any{"type": "Ready", "status": "True", "observedGeneration": int64(2)}), false, "generation 3"},
		{"observedGeneration current", pv(3, stamp, map[string]any{"type": "Ready", "status": "True", "observedGeneration": int64(3)}), true, ""},
		{"not ready", pv(1, "", map[string]any{"type": "Ready", "status": "False", "reason": "Error", "message": "no upstream"}), false, "Error: no upstream"},
	}
	for _, c := range cases {
		ready, wait := renderingReady(c.pv)
		assert.Equal(t, c.ready, ready, c.name)
		if c.detail == "" {
			assert.Empty(t, wait.text, c.name)
		} else {
			assert.Contains(t, wait.text, c.detail, c.name)
		}
	}
	at, ok := specUpdatedAt(pv(2, stamp, readyAt(updated)))
	assert.True(t, ok)
	assert.True(t, at.Equal(updated))
	assert.Equal(t, int64(3), lockRevision("edge-cluster/v3"))
	assert.Equal(t, int64(-1), lockRevision("drafts/edge-cluster/packagevariant-2"))

	cl := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"observedGeneration": int64(1)}}}
	cl.SetGeneration(2)
	current, generation := clusterCurrent(cl)
	assert.False(t, current)
	assert.Equal(t, int64(2), generation)
	cl.Object["status"].(map[string]any)["observedGeneration"] = float64(2)
	current, _ = clusterCurrent(cl)
	assert.True(t, current)
	delete(cl.Object, "status")
	current, _ = clusterCurrent(cl)
	assert.True(t, current, "nothing reported: nothing to compare")
}

// A spec change while the request is in flight reaches the PackageVariant before the request can be
// fulfilled: here its template, from one Porch never renders to one it does.
func TestSpecChangeInFlightReachesThePackageVariant(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	c := startChain(t, srv, "inflight", func(c *Config) { c.Requeue = 500 * time.Millisecond }, nil)
	createPR(t, srv, provisioningRequest("inflight-1", "inflight", tmplNeverRenders, map[string]any{"clusterName": "edge-inflight-1"}))
	eventually(t, 20*time.Second, func() bool {
		u, _ := getPR(t, srv, "inflight-1")
		return strings.HasPrefix(v1alpha1.StatusOf(u).Message, "Cluster instance rendering ongoing")
	}, "never waited on rendering")
	first, ok := getPV(t, srv, "inflight-1")
	require.True(t, ok)
	patchPR(t, srv, "inflight-1", `{"spec":{"templateName":"`+tmplOK+`","templateVersion":"v2.0.0"}}`)
	done := waitState(t, srv, "inflight-1", v1alpha1.StateFulfilled, 30*time.Second)
	pv, ok := getPV(t, srv, "inflight-1")
	require.True(t, ok)
	up, _, _ := unstructured.NestedMap(pv.Object, "spec", "upstream")
	assert.Equal(t, map[string]any{"repo": "catalog-infra-capi", "package": tmplOK, "workspaceName": "v2.0.0"}, up, "fulfilled on a package variant of the old spec")
	stamp, err := time.Parse(time.RFC3339Nano, pv.GetAnnotations()[AnnotationSpecUpdated])
	require.NoError(t, err, "the rewrite was not stamped")
	at, err := time.Parse(time.RFC3339, v1alpha1.StatusOf(done).UpdateTime)
	require.NoError(t, err)
	assert.False(t, at.Before(stamp.Truncate(time.Second)), "fulfilled before the package variant had the new spec")
	assert.Equal(t, first.GetUID(), pv.GetUID(), "the package variant was re-created, not updated")
	assert.GreaterOrEqual(t, c.rec.Count("PUT", "/packagevariants/inflight-1"), 1, "no update sent")
	assert.True(t, hasEvent(eventsOf(t, srv, "inflight-1"), corev1.EventTypeNormal, EventUpdated, "Updated package variant default/inflight-1"))
}

// An update whose answer is lost (it landed) is settled by reading the package variant back: no blind
// second update, no "retrying" status, one Updated event.
func TestALostUpdateAnswerIsSettledByReadingBack(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	var puts atomic.Int32
	rec := &kubeapi.Recorder{Fault: func(req *http.Request) bool {
		return req.Method == http.MethodPut && strings.HasSuffix(req.URL.Path, "/packagevariants/lostupd-1") && puts.Add(1) == 1
	}}
	c := startChain(t, srv, "lostupd", func(c *Config) { c.Requeue = 500 * time.Millisecond }, rec)
	createPR(t, srv, provisioningRequest("lostupd-1", "lostupd", tmplOK, map[string]any{"clusterName": "edge-lostupd-1"}))
	waitState(t, srv, "lostupd-1", v1alpha1.StateFulfilled, 30*time.Second)
	patchPR(t, srv, "lostupd-1", `{"spec":{"templateVersion":"v2.0.0"}}`)
	eventually(t, 30*time.Second, func() bool {
		u, _ := getPR(t, srv, "lostupd-1")
		pv, _ := getPV(t, srv, "lostupd-1")
		ws, _, _ := unstructured.NestedString(pv.Object, "spec", "upstream", "workspaceName")
		return v1alpha1.StatusOf(u).State == v1alpha1.StateFulfilled && ws == "v2.0.0" && specHandled(u)
	}, "never fulfilled again on the new spec")
	assert.Equal(t, 1, c.rec.Count("PUT", "/packagevariants/lostupd-1"), "the update was sent again blindly")
	said := strings.Join(c.rec.Bodies("PATCH", "/provisioningrequests/lostupd-1/status"), "\n")
	assert.NotContains(t, said, "retrying after", "a landed update was reported as a failure")
	assert.Equal(t, 1, countEvents(eventsOf(t, srv, "lostupd-1"), EventUpdated))
}
