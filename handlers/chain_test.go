package handlers

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/pythonimage"
)

func TestRequestWalksToFulfilledWithTheRightResources(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	c := startChain(t, srv, "happy", nil, nil)
	pr := createPR(t, srv, provisioningRequest("happy-1", "happy", tmplOK, map[string]any{
		"clusterName": "edge-happy-1", "labels": map[string]any{"site": "lab-3", "nephio.org/region": "eu"},
	}))

	done := waitState(t, srv, "happy-1", v1alpha1.StateFulfilled, 30*time.Second)
	st := v1alpha1.StatusOf(done)
	assert.Equal(t, "Cluster resource created", st.Message)
	ts, err := time.Parse(time.RFC3339, st.UpdateTime)
	require.NoError(t, err, "provisioningUpdateTime is RFC 3339")
	assert.True(t, strings.HasSuffix(st.UpdateTime, "Z"), "UTC")
	assert.WithinDuration(t, time.Now(), ts, time.Minute)

	cl, err := srv.AdminDynamic().Resource(external.ClusterGVR("v1beta2")).Namespace("default").Get(context.Background(), "edge-happy-1", metav1.GetOptions{})
	require.NoError(t, err)
	set, _, _ := unstructured.NestedMap(done.Object, "status", "provisionedResourceSet")
	assert.Equal(t, map[string]any{"oCloudNodeClusterId": string(cl.GetUID()), "oCloudInfrastructureResourceIds": []any{}}, set)

	pv, ok := getPV(t, srv, "happy-1")
	require.True(t, ok)
	assert.Equal(t, map[string]any{
		"upstream":    map[string]any{"repo": "catalog-infra-capi", "package": tmplOK, "workspaceName": "v1.0.0"},
		"downstream":  map[string]any{"repo": "mgmt", "package": "edge-happy-1"},
		"annotations": map[string]any{"approval.nephio.org/policy": "initial"},
		"pipeline": map[string]any{"mutators": []any{map[string]any{
			"image":     "gcr.io/kpt-fn/set-labels:v0.2.0",
			"configMap": map[string]any{"site": "lab-3", "nephio.org/region": "eu"},
		}}},
	}, pv.Object["spec"])
	assert.Equal(t, map[string]string{LabelOwner: LabelOwnerValue}, pv.GetLabels())
	assert.Equal(t, string(pr.GetUID()), pv.GetAnnotations()[AnnotationRequestUID])
	assert.Equal(t, "edge-happy-1", pv.GetAnnotations()[AnnotationDownstream])
	require.Len(t, pv.GetOwnerReferences(), 1)
	assert.Equal(t, pr.GetUID(), pv.GetOwnerReferences()[0].UID)

	eventually(t, 10*time.Second, func() bool {
		u, _ := getPR(t, srv, "happy-1")
		return slices.Contains(u.GetFinalizers(), Finalizer)
	}, "a handled request has no finalizer")
	eventually(t, 10*time.Second, func() bool {
		return hasEvent(eventsOf(t, srv, "happy-1"), corev1.EventTypeNormal, EventProgressing, "rendering")
	}, "no Progressing event")
	eventually(t, 10*time.Second, func() bool {
		return hasEvent(eventsOf(t, srv, "happy-1"), corev1.EventTypeNormal, EventFulfilled, "Cluster resource created")
	}, "no Fulfilled event")

	// The writes it took, counted at the operator's transport (events are posted asynchronously and
	// counted apart).
	all := c.rec.Writes("")
	var objectWrites, eventWrites int
	for _, w := range all {
		if strings.Contains(w.Path, "/events") {
			eventWrites++
		} else {
			objectWrites++
		}
	}
	t.Logf("API writes for one fulfilled request: %d object writes %v, %d event writes", objectWrites, nonEvents(all), eventWrites)
	// One create and one closing patch (diff-base, with the finalizer riding along: no pass of its own);
	// the rest are status writes, each of which changed what the request says. Four in all when the world
	// answers fast enough for one progressing write: PackageVariant, progressing, fulfilled, diff-base.
	assert.Equal(t, 1, c.rec.Count("POST", "/packagevariants"))
	metaWrites := len(c.rec.Writes("/provisioningrequests/happy-1")) - len(c.rec.Writes("/provisioningrequests/happy-1/status"))
	assert.Equal(t, 1, metaWrites, "object writes: %v", nonEvents(all))
	closing := c.rec.Bodies("PATCH", "/provisioningrequests/happy-1")
	require.NotEmpty(t, closing)
	assert.Contains(t, closing[len(closing)-1], `"finalizers":["`+Finalizer+`"]`, "the finalizer did not ride along the diff-base")
	assert.Contains(t, closing[len(closing)-1], "last-handled-configuration")
	statuses := c.rec.Bodies("PATCH", "/provisioningrequests/happy-1/status")
	for i := 1; i < len(statuses); i++ {
		assert.NotEqual(t, statuses[i-1], statuses[i], "a status write that changed nothing")
	}
}

// A request deleted before it was handled holds nothing the garbage collector would not remove: it carries
// no finalizer, goes at once, and its PackageVariant names it as its owner. (tests/kubeapi runs no
// kube-controller-manager, so the collection itself is not observed here; the ownerReference it follows is.)
func TestDeletingAnUnhandledRequestLeavesItsPackageVariantToTheGarbageCollector(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	c := startChain(t, srv, "gc", nil, nil)
	pr := createPR(t, srv, provisioningRequest("gc-1", "gc", tmplNeverProvision, map[string]any{"clusterName": "edge-gc-1"}))
	eventually(t, 30*time.Second, func() bool {
		u, ok := getPR(t, srv, "gc-1")
		return ok && strings.HasPrefix(v1alpha1.StatusOf(u).Message, "Cluster resource creation ongoing")
	}, "never waited for the cluster")
	u, _ := getPR(t, srv, "gc-1")
	assert.Empty(t, u.GetFinalizers(), "a request holding nothing but its PackageVariant got a finalizer")
	assert.Empty(t, nonStatus(c.rec.Writes("/provisioningrequests/gc-1")), "the request's metadata was written mid-create")

	require.NoError(t, srv.AdminDynamic().Resource(v1alpha1.GVR).Delete(context.Background(), "gc-1", metav1.DeleteOptions{}))
	eventually(t, 10*time.Second, func() bool { _, ok := getPR(t, srv, "gc-1"); return !ok }, "the request was held")
	pv, ok := getPV(t, srv, "gc-1")
	require.True(t, ok)
	require.Len(t, pv.GetOwnerReferences(), 1)
	ref := pv.GetOwnerReferences()[0]
	assert.Equal(t, pr.GetUID(), ref.UID)
	assert.Equal(t, "ProvisioningRequest", ref.Kind)
	assert.Equal(t, v1alpha1.GVR.GroupVersion().String(), ref.APIVersion)
	assert.Equal(t, "gc-1", ref.Name)
	assert.Zero(t, c.rec.Count("DELETE", "/packagevariants/gc-1"), "a release ran without a finalizer")

	// Re-created under the same name before the collector got to the old PackageVariant: the new request
	// waits for it instead of failing over a "foreign" one, and carries on once it is gone.
	createPR(t, srv, provisioningRequest("gc-1", "gc", tmplOK, map[string]any{"clusterName": "edge-gc-1b"}))
	eventually(t, 30*time.Second, func() bool {
		u, ok := getPR(t, srv, "gc-1")
		return ok && strings.Contains(v1alpha1.StatusOf(u).Message, "package variant of an earlier request of this name")
	}, "the re-created request did not wait for the collector")
	time.Sleep(500 * time.Millisecond)
	u, _ = getPR(t, srv, "gc-1")
	assert.Equal(t, v1alpha1.StateProgressing, v1alpha1.StatusOf(u).State)
	// What the garbage collector does: delete the dependent whose owner is gone.
	require.NoError(t, srv.AdminDynamic().Resource(external.PackageVariantGVR).Namespace("default").Delete(context.Background(), "gc-1", metav1.DeleteOptions{}))
	waitState(t, srv, "gc-1", v1alpha1.StateFulfilled, 30*time.Second)
}

func nonStatus(ws []kubeapi.Request) []string {
	var out []string
	for _, w := range ws {
		if !strings.HasSuffix(w.Path, "/status") {
			out = append(out, w.String())
		}
	}
	return out
}

func nonEvents(ws []kubeapi.Request) []string {
	var out []string
	for _, w := range ws {
		if !strings.Contains(w.Path, "/events") {
			out = append(out, w.String())
		}
	}
	return out
}

func TestInvalidSpecFailsWithoutAPackageVariant(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	startChain(t, srv, "invalid", nil, nil)
	cases := map[string]struct {
		params map[string]any
		reason string
	}{
		"inv-no-cluster":     {map[string]any{"labels": map[string]any{}}, "clusterName is missing in template parameters"},
		"inv-cluster-number": {map[string]any{"clusterName": 7}, "clusterName must be a string, got a number"},
		"inv-cluster-name":   {map[string]any{"clusterName": "Edge_1"}, `clusterName "Edge_1" is not a valid name`},
		"inv-labels-list":    {map[string]any{"clusterName": "c", "labels": []any{"a"}}, "labels must be an object, got a list"},
		"inv-label-value":    {map[string]any{"clusterName": "c", "labels": map[string]any{"a": 1}}, "labels.a must be a string"},
	}
	for name, tc := range cases {
		createPR(t, srv, provisioningRequest(name, "invalid", tmplOK, tc.params))
	}
	for name, tc := range cases {
		u := waitState(t, srv, name, v1alpha1.StateFailed, 30*time.Second)
		assert.Equal(t, "Provisioning request validation failed; reason: ", v1alpha1.StatusOf(u).Message[:len("Provisioning request validation failed; reason: ")], name)
		assert.Contains(t, v1alpha1.StatusOf(u).Message, tc.reason, name)
		_, exists := getPV(t, srv, name)
		assert.False(t, exists, "%s: no PackageVariant for an invalid request", name)
		eventually(t, 10*time.Second, func() bool {
			return hasEvent(eventsOf(t, srv, name), corev1.EventTypeWarning, EventFailed, tc.reason)
		}, "%s: no Warning event", name)
	}
}

func TestForeignPackageVariantFailsTheRequestAndIsNeverTouched(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	startChain(t, srv, "foreign", nil, nil)
	foreign := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "PackageVariant",
		"metadata": map[string]any{"name": "foreign-1", "namespace": "default",
			"annotations": map[string]any{AnnotationRequestUID: "someone-else", AnnotationDownstream: "edge-foreign-1"}},
		"spec": map[string]any{"upstream": map[string]any{"repo": "r", "package": "p"}, "downstream": map[string]any{"repo": "r", "package": "edge-foreign-1"}},
	}}
	_, err := srv.AdminDynamic().Resource(external.PackageVariantGVR).Namespace("default").Create(context.Background(), foreign, metav1.CreateOptions{})
	require.NoError(t, err)
	// Let the world render it, so its resourceVersion settles before the request arrives.
	eventually(t, 10*time.Second, func() bool {
		pv, _ := getPV(t, srv, "foreign-1")
		_, ok := condition(pv, "Ready")
		return ok
	}, "world never rendered the foreign package variant")
	before, _ := getPV(t, srv, "foreign-1")

	createPR(t, srv, provisioningRequest("foreign-1", "foreign", tmplOK, map[string]any{"clusterName": "edge-foreign-1"}))
	u := waitState(t, srv, "foreign-1", v1alpha1.StateFailed, 30*time.Second)
	assert.Equal(t, "Provisioning request creation failed; reason: package variant default/foreign-1 already exists and belongs to another request", v1alpha1.StatusOf(u).Message)
	eventually(t, 10*time.Second, func() bool {
		return hasEvent(eventsOf(t, srv, "foreign-1"), corev1.EventTypeWarning, EventConflict, "belongs to another request")
	}, "no Conflict event")

	// Deleting the request leaves the foreign PackageVariant exactly as it was.
	require.NoError(t, srv.AdminDynamic().Resource(v1alpha1.GVR).Delete(context.Background(), "foreign-1", metav1.DeleteOptions{}))
	eventually(t, 30*time.Second, func() bool { _, ok := getPR(t, srv, "foreign-1"); return !ok }, "request never deleted")
	after, ok := getPV(t, srv, "foreign-1")
	require.True(t, ok, "the foreign package variant was deleted")
	assert.Equal(t, before.GetResourceVersion(), after.GetResourceVersion(), "the foreign package variant was modified")
}

func TestRenderingNotReadyIsProgressingWithItsReason(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	startChain(t, srv, "notready", nil, nil)
	createPR(t, srv, provisioningRequest("notready-1", "notready", tmplRenderFails, map[string]any{"clusterName": "edge-notready-1"}))
	eventually(t, 30*time.Second, func() bool {
		u, ok := getPR(t, srv, "notready-1")
		return ok && v1alpha1.StatusOf(u).Message == "Cluster instance rendering ongoing: Error: could not find upstream package revision"
	}, "Ready=False not reported with its reason")
	u, _ := getPR(t, srv, "notready-1")
	assert.Equal(t, v1alpha1.StateProgressing, v1alpha1.StatusOf(u).State)
}

func TestBudgetExpiresWhileRendering(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	startChain(t, srv, "budget-render", func(c *Config) { c.CreationTimeout = 3 * time.Second; c.Requeue = 500 * time.Millisecond }, nil)
	createPR(t, srv, provisioningRequest("budget-render-1", "budget-render", tmplNeverRenders, map[string]any{"clusterName": "edge-br-1"}))
	u := waitState(t, srv, "budget-render-1", v1alpha1.StateFailed, 30*time.Second)
	assert.Equal(t, "Provisioning request failed; reason: timed out after 3s waiting for the Cluster instance rendering (last: Cluster instance rendering ongoing)", v1alpha1.StatusOf(u).Message)
}

func TestBudgetExpiresWhileWaitingForTheCluster(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	startChain(t, srv, "budget-cluster", func(c *Config) { c.CreationTimeout = 3 * time.Second; c.Requeue = 500 * time.Millisecond }, nil)
	createPR(t, srv, provisioningRequest("budget-cluster-1", "budget-cluster", tmplNeverProvision, map[string]any{"clusterName": "edge-bc-1"}))
	u := waitState(t, srv, "budget-cluster-1", v1alpha1.StateFailed, 30*time.Second)
	assert.Contains(t, v1alpha1.StatusOf(u).Message, "Cluster resource creation ongoing (Provisioning): Available=False NotAvailable: * ControlPlaneAvailable: waiting for the control plane")
	assert.Contains(t, v1alpha1.StatusOf(u).Message, "timed out after 3s")
}

func TestClusterFailureFailsTheRequest(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	startChain(t, srv, "cluster-fails", nil, nil)
	createPR(t, srv, provisioningRequest("cluster-fails-1", "cluster-fails", tmplClusterFails, map[string]any{"clusterName": "edge-cf-1"}))
	u := waitState(t, srv, "cluster-fails-1", v1alpha1.StateFailed, 30*time.Second)
	assert.Equal(t, "Cluster resource creation failed; reason: InvalidConfiguration: invalid machine template", v1alpha1.StatusOf(u).Message)
}

func TestRestartMidwayCreatesNoSecondPackageVariantAndKeepsTheBudget(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	budget := func(c *Config) { c.CreationTimeout = 6 * time.Second; c.Requeue = 300 * time.Millisecond }
	first := startChain(t, srv, "restart", budget, nil)
	createPR(t, srv, provisioningRequest("restart-1", "restart", tmplNeverProvision, map[string]any{"clusterName": "edge-restart-1"}))
	eventually(t, 30*time.Second, func() bool {
		u, ok := getPR(t, srv, "restart-1")
		return ok && strings.HasPrefix(v1alpha1.StatusOf(u).Message, "Cluster resource creation ongoing")
	}, "never reached the cluster wait")
	require.Equal(t, 1, first.rec.Count("POST", "/packagevariants"))
	first.stop(t)
	u, _ := getPR(t, srv, "restart-1")
	created := u.GetCreationTimestamp().Time

	second := startChain(t, srv, "restart", budget, nil)
	failed := waitState(t, srv, "restart-1", v1alpha1.StateFailed, 30*time.Second)
	assert.Zero(t, second.rec.Count("POST", "/packagevariants"), "the restarted operator created a second package variant")
	updated, err := time.Parse(time.RFC3339, v1alpha1.StatusOf(failed).UpdateTime)
	require.NoError(t, err)
	// Measured from creationTimestamp (second precision), not from the restart: no fresh budget.
	assert.Less(t, updated.Sub(created), 6*time.Second+3*time.Second, "the restart granted a fresh budget")
}

func TestLostCreateAnswerIsSettledByReadingBack(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	var dropped atomic.Int32
	rec := &kubeapi.Recorder{Fault: func(req *http.Request) bool {
		return req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/packagevariants") && dropped.Add(1) == 1
	}}
	c := startChain(t, srv, "lost", nil, rec)
	createPR(t, srv, provisioningRequest("lost-1", "lost", tmplOK, map[string]any{"clusterName": "edge-lost-1"}))
	waitState(t, srv, "lost-1", v1alpha1.StateFulfilled, 30*time.Second)
	assert.Equal(t, 1, c.rec.Count("POST", "/packagevariants"), "the create was retried blindly")
	assert.GreaterOrEqual(t, c.rec.Count("GET", "/packagevariants/lost-1"), 1, "no read-back")
	assert.Equal(t, 1, packageVariantsFor(t, srv, "edge-lost-1"))
}

// packageVariantsFor counts the PackageVariants the API server holds for a cluster (our downstream
// annotation).
func packageVariantsFor(t *testing.T, srv *kubeapi.Server, clusterName string) int {
	t.Helper()
	list, err := srv.AdminDynamic().Resource(external.PackageVariantGVR).Namespace("default").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	n := 0
	for _, pv := range list.Items {
		if pv.GetAnnotations()[AnnotationDownstream] == clusterName {
			n++
		}
	}
	return n
}

// A create whose answer was lost and which did not land (the read-back finds nothing) is sent again, once
// the read-back has said so — never blindly.
func TestLostCreateThatDidNotLandIsSentAgain(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	var lost atomic.Int32
	first := func(req *http.Request) bool {
		return req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/packagevariants") && strings.Contains(req.URL.Path, "/namespaces/lost-nowhere/")
	}
	rec := &kubeapi.Recorder{
		// The first POST goes where nothing can be created (an absent namespace) and its answer is lost:
		// to the operator it is a reset connection, and nothing landed.
		Reroute: func(req *http.Request) *http.Request {
			if req.Method != http.MethodPost || !strings.HasSuffix(req.URL.Path, "/packagevariants") || lost.Add(1) != 1 {
				return req
			}
			r := req.Clone(req.Context())
			r.URL.Path = strings.Replace(r.URL.Path, "/namespaces/default/", "/namespaces/lost-nowhere/", 1)
			return r
		},
		Fault: first,
	}
	c := startChain(t, srv, "lostnot", func(c *Config) { c.Requeue = 500 * time.Millisecond }, rec)
	createPR(t, srv, provisioningRequest("lostnot-1", "lostnot", tmplOK, map[string]any{"clusterName": "edge-lostnot-1"}))
	waitState(t, srv, "lostnot-1", v1alpha1.StateFulfilled, 30*time.Second)
	// Twice at least: the lost one, then the one sent after the read-back (a pass that runs before the
	// cache sees the created object may send a third, answered 409 and settled by reading back).
	assert.GreaterOrEqual(t, c.rec.Count("POST", "/packagevariants"), 2, "never sent again after the read-back found nothing")
	assert.GreaterOrEqual(t, c.rec.Count("GET", "/packagevariants/lostnot-1"), 1, "no read-back")
	assert.Equal(t, 1, packageVariantsFor(t, srv, "edge-lostnot-1"), "one package variant for the request")
	assert.True(t, hasEvent(eventsOf(t, srv, "lostnot-1"), corev1.EventTypeNormal, EventCreated, "Created package variant default/lostnot-1"))
	said := strings.Join(c.rec.Bodies("PATCH", "/provisioningrequests/lostnot-1/status"), "\n")
	assert.Contains(t, said, "the package variant create did not land and will be retried")
}

// Porch's Ready is found by type wherever it stands: first here, with Stalled=False after it (the Python
// operator read conditions[-1] and would have seen Stalled).
func TestReadyIsFoundInAnyPosition(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	startChain(t, srv, "readyfirst", nil, nil)
	createPR(t, srv, provisioningRequest("readyfirst-1", "readyfirst", tmplReadyFirst, map[string]any{"clusterName": "edge-readyfirst-1"}))
	waitState(t, srv, "readyfirst-1", v1alpha1.StateFulfilled, 30*time.Second)
	pv, _ := getPV(t, srv, "readyfirst-1")
	conds, _, _ := unstructured.NestedSlice(pv.Object, "status", "conditions")
	require.Len(t, conds, 2)
	assert.Equal(t, "Ready", conds[0].(map[string]any)["type"], "the simulator no longer writes Ready first")
}

func TestDeletionRemovesOurPackageVariantThenTheFinalizer(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	startChain(t, srv, "delete", nil, nil)
	createPR(t, srv, provisioningRequest("delete-1", "delete", tmplOK, map[string]any{"clusterName": "edge-delete-1"}))
	waitState(t, srv, "delete-1", v1alpha1.StateFulfilled, 30*time.Second)
	waitHandled(t, srv, "delete-1")

	require.NoError(t, srv.AdminDynamic().Resource(v1alpha1.GVR).Delete(context.Background(), "delete-1", metav1.DeleteOptions{}))
	// Porch holds the package variant for a moment (its finalizer); the request shows deleting meanwhile.
	waitState(t, srv, "delete-1", v1alpha1.StateDeleting, 30*time.Second)
	eventually(t, 30*time.Second, func() bool { _, ok := getPR(t, srv, "delete-1"); return !ok }, "request never went away")
	_, pvLeft := getPV(t, srv, "delete-1")
	assert.False(t, pvLeft, "the request's package variant outlived it")
}

func TestWaitingPassesWriteNothingNew(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	c := startChain(t, srv, "quiet", func(c *Config) { c.Requeue = 200 * time.Millisecond }, nil)
	createPR(t, srv, provisioningRequest("quiet-1", "quiet", tmplNeverProvision, map[string]any{"clusterName": "edge-quiet-1"}))
	eventually(t, 30*time.Second, func() bool {
		u, ok := getPR(t, srv, "quiet-1")
		return ok && strings.HasPrefix(v1alpha1.StatusOf(u).Message, "Cluster resource creation ongoing (Provisioning")
	}, "never waited for the cluster")
	before := len(c.rec.Writes("/provisioningrequests/quiet-1"))
	time.Sleep(2 * time.Second) // ten passes at the 200ms safety net
	assert.Equal(t, before, len(c.rec.Writes("/provisioningrequests/quiet-1")), "passes that observed nothing new wrote")
	assert.GreaterOrEqual(t, c.rec.Count("GET", "/provisioningrequests"), 0)
}

func TestRelatedChangesWakeTheRequestLongBeforeTheRequeue(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	startChain(t, srv, "wake", func(c *Config) { c.Requeue = 10 * time.Minute }, nil)
	createPR(t, srv, provisioningRequest("wake-1", "wake", tmplOK, map[string]any{"clusterName": "edge-wake-1"}))
	// Rendering (200ms) and provisioning (400ms) end long before a 10-minute requeue: only the
	// PackageVariant's and the Cluster's own changes can have woken the request.
	waitState(t, srv, "wake-1", v1alpha1.StateFulfilled, 20*time.Second)
}

func TestSpecUpdateReDrivesAFulfilledRequest(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	startChain(t, srv, "update", nil, nil)
	createPR(t, srv, provisioningRequest("update-1", "update", tmplOK, map[string]any{"clusterName": "edge-update-1"}))
	waitState(t, srv, "update-1", v1alpha1.StateFulfilled, 30*time.Second)

	_, err := srv.AdminDynamic().Resource(v1alpha1.GVR).Patch(context.Background(), "update-1", types.MergePatchType,
		[]byte(`{"spec":{"templateVersion":"v2.0.0"}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	eventually(t, 30*time.Second, func() bool {
		pv, ok := getPV(t, srv, "update-1")
		v, _, _ := unstructured.NestedString(pv.Object, "spec", "upstream", "workspaceName")
		return ok && v == "v2.0.0"
	}, "the package variant was not moved to the new template version")
	eventually(t, 30*time.Second, func() bool {
		u, _ := getPR(t, srv, "update-1")
		_, has := u.Object["status"].(map[string]any)["extensions"]
		return v1alpha1.StatusOf(u).State == v1alpha1.StateFulfilled && has
	}, "never fulfilled again after the update")

	// clusterName is immutable once the package variant exists.
	_, err = srv.AdminDynamic().Resource(v1alpha1.GVR).Patch(context.Background(), "update-1", types.MergePatchType,
		[]byte(`{"spec":{"templateParameters":{"clusterName":"edge-other"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	u := waitState(t, srv, "update-1", v1alpha1.StateFailed, 30*time.Second)
	assert.Contains(t, v1alpha1.StatusOf(u).Message, `clusterName cannot change from "edge-update-1" to "edge-other"`)
}

// A fulfilled request the Python operator handled (its kopf annotations, no PackageVariant left) is not
// re-driven when this operator starts: it stays fulfilled with its status untouched.
func TestFulfilledRequestFromThePythonOperatorStaysUntouched(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	as := pythonimage.As{Name: "python-1", Label: "python"}
	o, err := pythonimage.Load(pythonimage.Fulfilled, as)
	require.NoError(t, err)
	o.PackageVariant, o.Cluster = nil, nil // removed by hand since
	_, err = o.Install(context.Background(), srv.AdminDynamic())
	require.NoError(t, err)
	before, _ := getPR(t, srv, "python-1")

	c := startChain(t, srv, "python", selecting(as), nil)
	// A request of the same selection created after the start, handled to the end: by then the operator
	// has had the captured one in its queue from its first listing, so the checks below are not vacuous.
	sentinel := provisioningRequest("sentinel-python", "python", tmplOK, map[string]any{"clusterName": "edge-sentinel-python"})
	sentinel.SetLabels(map[string]string{pythonimage.ScenarioLabel: "python"})
	createPR(t, srv, sentinel)
	waitState(t, srv, "sentinel-python", v1alpha1.StateFulfilled, 30*time.Second)
	eventually(t, 10*time.Second, func() bool { return c.rec.Count("GET", "") > 0 }, "the operator never started")
	after, _ := getPR(t, srv, "python-1")
	// It holds nothing (no PackageVariant left, no hosts): not even a finalizer is written.
	assert.Empty(t, after.GetFinalizers())
	assert.Empty(t, c.rec.Writes("/provisioningrequests/python-1"), "a request that holds nothing was written")
	assert.Equal(t, before.Object["status"], after.Object["status"], "status changed")
	assert.Equal(t, before.GetAnnotations(), after.GetAnnotations(), "kopf state changed")
	_, rendered := getPV(t, srv, "python-1")
	assert.False(t, rendered, "re-rendered a fulfilled request")
	assert.Empty(t, c.rec.Writes("/provisioningrequests/python-1/status"))
}
