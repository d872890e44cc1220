package handlers

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/framework"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// Fulfilment after a change rests on Porch's and CAPI's reports on the new spec (porch.go, rollout.go),
// on the real API server with the world's Porch (PackageRevisions from Porch's types) and CAPI.

// publishedTarget returns the PackageRevision our PackageVariant names, when it is Published.
func publishedTarget(t *testing.T, srv *kubeapi.Server, name string) (*unstructured.Unstructured, bool) {
	t.Helper()
	pv, ok := getPV(t, srv, name)
	if !ok {
		return nil, false
	}
	targets := downstreamTargets(pv)
	if len(targets) != 1 {
		return nil, false
	}
	pr, err := srv.AdminDynamic().Resource(external.PackageRevisionGVR).Namespace("default").Get(context.Background(), targets[0], metav1.GetOptions{})
	if err != nil {
		return nil, false
	}
	lc, _, _ := unstructured.NestedString(pr.Object, "spec", "lifecycle")
	return pr, lc == "Published"
}

// The repro: a fulfilled request patched to a template Porch never renders keeps Porch's old
// Ready=True; it must never be fulfilled again, say what it waits for, and fail when the budget is spent.
func TestAChangePorchNeverRendersIsNeverFulfilled(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	c := startChain(t, srv, "norender", func(c *Config) { c.CreationTimeout = 6 * time.Second; c.Requeue = 300 * time.Millisecond }, nil)
	createPR(t, srv, provisioningRequest("norender-1", "norender", tmplOK, map[string]any{"clusterName": "edge-norender-1"}))
	waitState(t, srv, "norender-1", v1alpha1.StateFulfilled, 30*time.Second)
	before, _ := getPV(t, srv, "norender-1")
	readyBefore, _ := condition(before, "Ready")

	patchPR(t, srv, "norender-1", `{"spec":{"templateName":"`+tmplNeverRenders+`","templateVersion":"v9.9.9"}}`)
	st := c.trail.await(t, "norender-1", msgRenderingAwaitingRender, 20*time.Second)
	assert.Contains(t, st.Message, "Porch has no revision v9.9.9 of template "+tmplNeverRenders+" in catalog-infra-capi")
	u := waitState(t, srv, "norender-1", v1alpha1.StateFailed, 30*time.Second)
	msg := v1alpha1.StatusOf(u).Message
	assert.Contains(t, msg, "timed out after 6s waiting for the Cluster instance rendering")
	assert.Contains(t, msg, "no revision v9.9.9 of template "+tmplNeverRenders)
	pv, _ := getPV(t, srv, "norender-1")
	ready, _ := condition(pv, "Ready")
	assert.Equal(t, readyBefore, ready, "Porch's Ready moved: this test no longer shows an old Ready=True")
	c.trail.never(t, "norender-1", msgFulfilled, "after the change")
}

// Nephio's policy initial publishes only a package's first revision: a change's draft waits for an
// approver. The request names the draft it waits for, and fails when nobody approves it in time.
func TestAChangeWhoseDraftIsNeverPublishedIsNeverFulfilled(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	c := startChain(t, srv, "nopublish", func(c *Config) { c.CreationTimeout = 6 * time.Second; c.Requeue = 300 * time.Millisecond }, nil)
	// Its first revision is published (policy initial), a change's is not.
	createPR(t, srv, provisioningRequest("nopublish-1", "nopublish", tmplNeverPublished, map[string]any{"clusterName": "edge-nopublish-1"}))
	waitState(t, srv, "nopublish-1", v1alpha1.StateFulfilled, 30*time.Second)

	patchPR(t, srv, "nopublish-1", `{"spec":{"templateVersion":"v2.0.0"}}`)
	st := c.trail.await(t, "nopublish-1", msgRenderingAwaitingApproval, 20*time.Second)
	assert.Contains(t, st.Message, "waiting for package revision mgmt.edge-nopublish-1.packagevariant-2 (Draft) to be approved and published")
	u := waitState(t, srv, "nopublish-1", v1alpha1.StateFailed, 30*time.Second)
	assert.Contains(t, v1alpha1.StatusOf(u).Message, "mgmt.edge-nopublish-1.packagevariant-2 (Draft)")
	c.trail.never(t, "nopublish-1", msgFulfilled, "after the change")
}

// A change that Porch renders and an administrator publishes is fulfilled only once CAPI has rolled the
// Cluster out: not while RollingOut=True, and then on the published revision of the new template. The
// revision is read live and the Cluster from the cache; a pass that sees the publication first finds the
// old Cluster's generation and waits (cluster-not-applied), whatever that Cluster reports.
func TestAPublishedChangeIsFulfilledAfterTheRollout(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	c := startChain(t, srv, "rollout", func(c *Config) { c.Requeue = 300 * time.Millisecond }, nil)
	createPR(t, srv, provisioningRequest("rollout-1", "rollout", tmplOK, map[string]any{"clusterName": "edge-rollout-1"}))
	waitState(t, srv, "rollout-1", v1alpha1.StateFulfilled, 30*time.Second)

	patchPR(t, srv, "rollout-1", `{"spec":{"templateVersion":"v2.0.0"}}`)
	st := c.trail.await(t, "rollout-1", msgClusterRollingOut, 20*time.Second)
	assert.Contains(t, st.Message, "RollingOut=True RollingOut")
	done := waitState(t, srv, "rollout-1", v1alpha1.StateFulfilled, 30*time.Second)
	c.trail.fulfilledOnlyAfter(t, "rollout-1", msgClusterRollingOut)
	assertFulfilledOnTheRollout(t, srv, "rollout-1", "edge-rollout-1", tmplOK, done)
}

// The race itself, made certain: Porch publishes the change and the GitOps sync applies it syncDelay later
// (Config Sync's poll; a cache lagging the API server is the same state, shorter). Meanwhile the Cluster
// is the old, settled one — observedGeneration current, Available, not rolling out — and it must not be
// taken for the end of the change's rollout: the request says it waits for the apply, naming the field the
// published revision's Cluster sets and the live one lacks, and is fulfilled only after CAPI rolled the
// applied spec out.
func TestAPublicationNotYetAppliedIsNotFulfilled(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	c := startChain(t, srv, "slowsync", func(c *Config) { c.Requeue = 300 * time.Millisecond }, nil)
	createPR(t, srv, provisioningRequest("slowsync-1", "slowsync", tmplSlowSync, map[string]any{"clusterName": "edge-slowsync-1"}))
	waitState(t, srv, "slowsync-1", v1alpha1.StateFulfilled, 30*time.Second)
	gvr := external.ClusterGVR("v1beta2")
	before, err := srv.AdminDynamic().Resource(gvr).Namespace("default").Get(context.Background(), "edge-slowsync-1", metav1.GetOptions{})
	require.NoError(t, err)

	patchPR(t, srv, "slowsync-1", `{"spec":{"templateVersion":"v2.0.0"}}`)
	st := c.trail.await(t, "slowsync-1", msgClusterNotApplied, 20*time.Second)
	assert.Equal(t, msgClusterNotApplied.with("spec.clusterNetwork.serviceDomain").text, st.Message)
	_, published := publishedTarget(t, srv, "slowsync-1")
	assert.True(t, published, "waiting for the apply before Porch published the change")
	done := waitState(t, srv, "slowsync-1", v1alpha1.StateFulfilled, 30*time.Second)
	c.trail.fulfilledOnlyAfter(t, "slowsync-1", msgClusterRollingOut)
	after, err := srv.AdminDynamic().Resource(gvr).Namespace("default").Get(context.Background(), "edge-slowsync-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Greater(t, after.GetGeneration(), before.GetGeneration(), "fulfilled on a Cluster the change was never applied to")
	assertFulfilledOnTheRollout(t, srv, "slowsync-1", "edge-slowsync-1", tmplSlowSync, done)
}

// The false failure the generation rule made: a version bump that changes only the package's other
// objects leaves the Cluster's spec as it was, so no apply moves its generation. The published revision's
// content shows the Cluster it renders is the live one's: the request is fulfilled on that publication
// (before its CREATION_TIMEOUT, which used to fail it), with the Cluster's generation unchanged.
func TestAChangeThatLeavesTheClusterSpecIsFulfilledOnItsPublication(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	c := startChain(t, srv, "samecluster", func(c *Config) { c.CreationTimeout = 6 * time.Second; c.Requeue = 300 * time.Millisecond }, nil)
	createPR(t, srv, provisioningRequest("samecluster-1", "samecluster", tmplSameCluster, map[string]any{"clusterName": "edge-samecluster-1"}))
	waitState(t, srv, "samecluster-1", v1alpha1.StateFulfilled, 30*time.Second)
	gvr := external.ClusterGVR("v1beta2")
	before, err := srv.AdminDynamic().Resource(gvr).Namespace("default").Get(context.Background(), "edge-samecluster-1", metav1.GetOptions{})
	require.NoError(t, err)

	patchPR(t, srv, "samecluster-1", `{"spec":{"templateVersion":"v2.0.0"}}`)
	c.trail.await(t, "samecluster-1", msgRedriven, 20*time.Second)
	done := waitState(t, srv, "samecluster-1", v1alpha1.StateFulfilled, 30*time.Second)
	pr, ok := publishedTarget(t, srv, "samecluster-1")
	require.True(t, ok, "fulfilled without a published revision")
	assert.NotEqual(t, "mgmt.edge-samecluster-1.packagevariant-1", pr.GetName(), "fulfilled on the revision before the change")
	at, err := time.Parse(time.RFC3339, v1alpha1.StatusOf(done).UpdateTime)
	require.NoError(t, err)
	pubAt, _, _ := unstructured.NestedString(pr.Object, "status", "publishTimestamp")
	pub, err := time.Parse(time.RFC3339, pubAt)
	require.NoError(t, err)
	assert.False(t, at.Before(pub), "fulfilled at %s, before the change was published at %s", at, pub)
	after, err := srv.AdminDynamic().Resource(gvr).Namespace("default").Get(context.Background(), "edge-samecluster-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, before.GetGeneration(), after.GetGeneration(), "the change moved the Cluster's generation: this test no longer shows a change that leaves its spec alone")
	c.trail.never(t, "samecluster-1", msgClusterNotApplied, "after the change")

	// The shipped Role is enough to read what this took: the revision and its content (get only).
	h := shippedRoleHandlers(t, srv, "porch-read")
	cause := &framework.Cause{Object: done, Logger: zaptest.NewLogger(t)}
	rev, _, err := h.porch.readRevision(context.Background(), cause, "default", pr.GetName())
	require.NoError(t, err)
	require.NotNil(t, rev)
	cl, wait, err := h.porch.renderedCluster(context.Background(), cause, "default", pr.GetName(), "edge-samecluster-1")
	require.NoError(t, err, "the shipped Role cannot read the published revision's content")
	require.NotNil(t, cl, wait.text)
	assert.Empty(t, notCarried(cl, after))
}

// A change whose published revision renders no Cluster of the request's name has nothing to be applied
// to: the request waits, naming the revision, and its budget fails it saying so. (Created on a template
// whose packages render no Cluster, then moved to its next version: Porch's upgrade compares revision
// numbers only, so a move to another template's first version would make no draft at all.)
func TestAPublishedRevisionWithoutTheClusterWaitsAndSaysSo(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	c := startChain(t, srv, "nocluster", func(c *Config) { c.CreationTimeout = 8 * time.Second; c.Requeue = 300 * time.Millisecond }, nil)
	createPR(t, srv, provisioningRequest("nocluster-1", "nocluster", tmplNoCluster, map[string]any{"clusterName": "edge-nocluster-1"}))
	c.trail.await(t, "nocluster-1", msgClusterAbsent, 20*time.Second)

	patchPR(t, srv, "nocluster-1", `{"spec":{"templateVersion":"v2.0.0"}}`)
	st := c.trail.await(t, "nocluster-1", msgRenderingNoCluster, 20*time.Second)
	assert.Equal(t, msgRenderingNoCluster.with("mgmt.edge-nocluster-1.packagevariant-2", "edge-nocluster-1").text, st.Message)
	u := waitState(t, srv, "nocluster-1", v1alpha1.StateFailed, 30*time.Second)
	assert.Contains(t, v1alpha1.StatusOf(u).Message, "renders no Cluster edge-nocluster-1")
	assert.Equal(t, 0, c.trail.count("nocluster-1", msgFulfilled), "fulfilled without a Cluster")
}

// count is how often the request's trail holds entry m.
func (tr *statusTrail) count(name string, m *message) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	n := 0
	for _, st := range tr.seen[name] {
		if classify(st.State, st.Message) == m {
			n++
		}
	}
	return n
}

// assertFulfilledOnTheRollout: the published revision is of the new template version, and the request was
// fulfilled no earlier than CAPI's rollout ended.
func assertFulfilledOnTheRollout(t *testing.T, srv *kubeapi.Server, name, cluster, template string, done *unstructured.Unstructured) {
	t.Helper()
	pr, ok := publishedTarget(t, srv, name)
	require.True(t, ok, "fulfilled without a published revision")
	ref, _, _ := unstructured.NestedString(pr.Object, "status", "upstreamLock", "git", "ref")
	up, err := srv.AdminDynamic().Resource(external.PackageRevisionGVR).Namespace("default").Get(context.Background(),
		"catalog-infra-capi."+template+".v2.0.0", metav1.GetOptions{})
	require.NoError(t, err)
	rev, _, _ := unstructured.NestedInt64(up.Object, "spec", "revision")
	assert.Equal(t, fmt.Sprintf("%s/v%d", template, rev), ref, "fulfilled on a revision of another template version")
	at, err := time.Parse(time.RFC3339, v1alpha1.StatusOf(done).UpdateTime)
	require.NoError(t, err)
	cl, err := srv.AdminDynamic().Resource(external.ClusterGVR("v1beta2")).Namespace("default").Get(context.Background(), cluster, metav1.GetOptions{})
	require.NoError(t, err)
	rolling, _ := condition(cl, "RollingOut")
	assert.Equal(t, "False", rolling["status"])
	lt, err := time.Parse(time.RFC3339, rolling["lastTransitionTime"].(string))
	require.NoError(t, err)
	assert.False(t, at.Before(lt), "fulfilled at %s, before the rollout ended at %s", at, lt)
}

// A fulfilled request whose PackageVariant (Porch Ready=False) or Cluster (Available=False) later reports
// a fault says so: re-driven with a budget from then, failed when the fault stays.
func TestAFaultAfterFulfilmentIsReported(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	c := startChain(t, srv, "degrade", func(c *Config) { c.CreationTimeout = 6 * time.Second; c.Requeue = 300 * time.Millisecond }, nil)
	createPR(t, srv, provisioningRequest("degrade-porch", "degrade", tmplPorchDegrades, map[string]any{"clusterName": "edge-degrade-porch"}))
	createPR(t, srv, provisioningRequest("degrade-cluster", "degrade", tmplClusterDegrades, map[string]any{"clusterName": "edge-degrade-cluster"}))
	for name, want := range map[string]string{
		"degrade-porch":   "Porch reports the package variant not ready: Error: invalid packagevariant object",
		"degrade-cluster": "the Cluster is not available: NotAvailable: * RemoteConnectionProbe: Remote connection probe failed",
	} {
		c.trail.await(t, name, msgFulfilled, 30*time.Second)
		st := c.trail.await(t, name, msgRedrivenDegraded, 30*time.Second)
		assert.Contains(t, st.Message, want)
		u := waitState(t, srv, name, v1alpha1.StateFailed, 20*time.Second)
		assert.True(t, strings.Contains(v1alpha1.StatusOf(u).Message, "timed out after 6s"), v1alpha1.StatusOf(u).Message)
	}
}

// never fails the test when the request's trail holds entry m after its first "redriven" status (the
// re-drive a spec change of a fulfilled request starts with).
func (tr *statusTrail) never(t *testing.T, name string, m *message, when string) {
	t.Helper()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	after := false
	for _, st := range tr.seen[name] {
		switch classify(st.State, st.Message) {
		case msgRedriven:
			after = true
		case m:
			if after {
				t.Errorf("request %s: %s %s: the API server held %s; trail %v", name, when, m.key, m.key, tr.seen[name])
			}
		}
	}
	require.True(t, after, "request %s was never re-driven", name)
}

// fulfilledOnlyAfter fails the test when, after the request's first re-drive, it was fulfilled before the
// trail held m (CAPI's report that the change is rolling out).
func (tr *statusTrail) fulfilledOnlyAfter(t *testing.T, name string, m *message) {
	t.Helper()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	after, seen := false, false
	for _, st := range tr.seen[name] {
		switch classify(st.State, st.Message) {
		case msgRedriven:
			after = true
		case m:
			seen = seen || after
		case msgFulfilled:
			if after && !seen {
				t.Fatalf("request %s fulfilled before %s; trail %v", name, m.key, tr.seen[name])
			}
		}
	}
	require.True(t, after && seen, "request %s: no %s after its re-drive; trail %v", name, m.key, tr.seen[name])
}
