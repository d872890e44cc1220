package handlers

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/framework"
	"github.com/o2ims-operator/o2ims-operator/tests/kopf140"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// Objects exactly as the released Python image (kopf 1.40.1) leaves them (kopf-observed.md): requests with
// or without its kopf records, no finalizer, and PackageVariants with neither of our annotations nor any
// label. Then this operator starts in its place.

// pythonRequest creates a request as the Python image left it: its annotations, and a status if it had
// written one.
func pythonRequest(t *testing.T, srv *kubeapi.Server, u *unstructured.Unstructured, ann map[string]string, status map[string]any) *unstructured.Unstructured {
	t.Helper()
	if ann != nil {
		u.SetAnnotations(ann)
	}
	created := createPR(t, srv, u)
	if status != nil {
		created.Object["status"] = status
		var err error
		created, err = srv.AdminDynamic().Resource(v1alpha1.GVR).UpdateStatus(context.Background(), created, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	return created
}

// pythonPackageVariant creates the PackageVariant the Python image makes for a request: name = the
// request's, namespace default, its spec, no labels, annotations or ownerReferences. It waits until the
// simulated Porch has rendered it, as it would have been while the Python image waited.
func pythonPackageVariant(t *testing.T, srv *kubeapi.Server, name string, spec map[string]any) *unstructured.Unstructured {
	t.Helper()
	pv := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "PackageVariant",
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec":     spec,
	}}
	_, err := srv.AdminDynamic().Resource(external.PackageVariantGVR).Namespace("default").Create(context.Background(), pv, metav1.CreateOptions{})
	require.NoError(t, err)
	var out *unstructured.Unstructured
	eventually(t, 15*time.Second, func() bool {
		out, _ = getPV(t, srv, name)
		_, ok := condition(out, "Ready")
		return ok
	}, "the world never rendered %s", name)
	return out
}

func pythonSpec(template, clusterName string, labels map[string]any) map[string]any {
	return kopf140.PackageVariantSpec("catalog-infra-capi", template, "v1.0.0", clusterName, labels)
}

func countEvents(evs []corev1.Event, reason string) int {
	n := 0
	for _, e := range evs {
		if e.Reason == reason {
			n += max(int(e.Count), 1)
		}
	}
	return n
}

func TestUpgradeFromThePythonImageFulfilsItsRequestsInFlight(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	const label = "upgrade"
	t0 := time.Now().Add(-30 * time.Second) // the Python image's first pass, a while ago
	progressing := map[string]any{"provisioningStatus": map[string]any{
		"provisioningState": "progressing", "provisioningMessage": "Cluster resource creation ongoing",
		"provisioningUpdateTime": t0.UTC().Format(time.RFC3339),
	}}
	labels := map[string]any{"site": "lab-3"}

	// With its kopf records, a status and its PackageVariant (with the labels mutator).
	withRecords := pythonRequest(t, srv, provisioningRequest("upg-records", label, tmplOK, map[string]any{"clusterName": "edge-upg-records", "labels": labels}),
		kopf140.MidFlightAnnotations(t0), progressing)
	pvRecords := pythonPackageVariant(t, srv, "upg-records", pythonSpec(tmplOK, "edge-upg-records", labels))
	// Killed before kopf persisted anything (3 of 5 in the observation), its PackageVariant made.
	bare := pythonRequest(t, srv, provisioningRequest("upg-bare-pv", label, tmplOK, map[string]any{"clusterName": "edge-upg-bare-pv"}), nil, nil)
	pvBare := pythonPackageVariant(t, srv, "upg-bare-pv", pythonSpec(tmplOK, "edge-upg-bare-pv", nil))
	// Killed before anything at all: no records, no PackageVariant.
	nothing := pythonRequest(t, srv, provisioningRequest("upg-nothing", label, tmplOK, map[string]any{"clusterName": "edge-upg-nothing"}), nil, nil)

	c := startChain(t, srv, label, nil, nil)
	for _, pr := range []*unstructured.Unstructured{withRecords, bare, nothing} {
		done := waitState(t, srv, pr.GetName(), v1alpha1.StateFulfilled, 60*time.Second)
		assert.Equal(t, "Cluster resource created", v1alpha1.StatusOf(done).Message)
		cl, err := srv.AdminDynamic().Resource(external.ClusterGVR("v1beta2")).Namespace("default").Get(context.Background(), "edge-"+pr.GetName(), metav1.GetOptions{})
		require.NoError(t, err)
		id, _, _ := unstructured.NestedString(done.Object, "status", "provisionedResourceSet", "oCloudNodeClusterId")
		assert.Equal(t, string(cl.GetUID()), id)
	}

	for _, tc := range []struct {
		pr, pv *unstructured.Unstructured
	}{{withRecords, pvRecords}, {bare, pvBare}} {
		name := tc.pr.GetName()
		pv, ok := getPV(t, srv, name)
		require.True(t, ok)
		assert.Equal(t, tc.pv.GetUID(), pv.GetUID(), "%s: the Python image's package variant was replaced", name)
		assert.Equal(t, tc.pv.Object["spec"], pv.Object["spec"], "%s: its spec was changed", name)
		assert.Equal(t, string(tc.pr.GetUID()), pv.GetAnnotations()[AnnotationRequestUID], name)
		assert.Equal(t, "edge-"+name, pv.GetAnnotations()[AnnotationDownstream], name)
		assert.Equal(t, LabelOwnerValue, pv.GetLabels()[LabelOwner], name)
		require.Len(t, pv.GetOwnerReferences(), 1, name)
		assert.Equal(t, tc.pr.GetUID(), pv.GetOwnerReferences()[0].UID, name)
		eventually(t, 10*time.Second, func() bool {
			return hasEvent(eventsOf(t, srv, name), corev1.EventTypeNormal, EventAdopted, "the Python image created it for this request")
		}, "%s: no adoption event", name)
	}
	assert.Zero(t, c.rec.Count("POST", "/packagevariants")-1, "only the request without a package variant got one created")
	_, created := getPV(t, srv, "upg-nothing")
	assert.True(t, created)

	// Adopted once: a restart finds them ours and says nothing more.
	c.stop(t)
	again := startChain(t, srv, label, nil, nil)
	time.Sleep(time.Second)
	assert.Empty(t, again.rec.Writes("/packagevariants"), "the restarted operator touched a package variant")
	for _, name := range []string{"upg-records", "upg-bare-pv"} {
		assert.Equal(t, 1, countEvents(eventsOf(t, srv, name), EventAdopted), "%s: adopted more than once", name)
	}

	// The Python image's records are purged with the cause, the diff-base written as kopf writes it.
	u, _ := getPR(t, srv, "upg-records")
	r := kopf140.Read(u)
	assert.Empty(t, r.Problems)
	assert.Empty(t, r.Records, "kopf records left behind")
	assert.True(t, r.SeesNoChange(u), "the Python image would see a change")
}

// The budget is CREATION_TIMEOUT from the request's creationTimestamp, however long the Python image had
// it: the upgrade grants no fresh one.
func TestUpgradeKeepsTheBudgetFromCreationTimestamp(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	const label = "upgrade-budget"
	pr := pythonRequest(t, srv, provisioningRequest("upg-budget", label, tmplNeverProvision, map[string]any{"clusterName": "edge-upg-budget"}),
		kopf140.MidFlightAnnotations(time.Now().Add(-20*time.Second)), nil)
	pythonPackageVariant(t, srv, "upg-budget", pythonSpec(tmplNeverProvision, "edge-upg-budget", nil))
	created := pr.GetCreationTimestamp().Time
	const budget = 6 * time.Second
	for time.Since(created) < 4*time.Second {
		time.Sleep(100 * time.Millisecond) // the Python image's time with it
	}
	start := time.Now()
	startChain(t, srv, label, func(c *Config) { c.CreationTimeout = budget; c.Requeue = 300 * time.Millisecond }, nil)
	failed := waitState(t, srv, "upg-budget", v1alpha1.StateFailed, 60*time.Second)
	assert.Contains(t, v1alpha1.StatusOf(failed).Message, "timed out after 6s")
	updated, err := time.Parse(time.RFC3339, v1alpha1.StatusOf(failed).UpdateTime)
	require.NoError(t, err)
	assert.False(t, updated.Before(created.Truncate(time.Second).Add(budget)), "failed before its budget was spent")
	assert.True(t, updated.Before(start.Add(budget-time.Second)), "the upgrade granted a fresh budget: failed at %s, started at %s", updated, start)
	pv, _ := getPV(t, srv, "upg-budget")
	assert.Equal(t, string(pr.GetUID()), pv.GetAnnotations()[AnnotationRequestUID], "adopted on the way")
}

// Anything without our annotations that is not exactly the Python image's PackageVariant for this request
// stays foreign: the request fails with a conflict and the PackageVariant is never touched.
func TestPackageVariantsNotMadeByThePythonImageForTheRequestStayForeign(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	const label = "upgrade-foreign"
	// A leftover of an earlier request of that name (the Python image never deleted them): older.
	older := pythonPackageVariant(t, srv, "upf-older", pythonSpec(tmplOK, "edge-upf-older", nil))
	time.Sleep(1100 * time.Millisecond) // creationTimestamps have second precision
	cases := map[string]struct {
		pvSpec map[string]any
		ann    map[string]any
	}{
		"upf-other-cluster": {pvSpec: pythonSpec(tmplOK, "edge-someone-else", nil)},
		"upf-other-version": {pvSpec: kopf140.PackageVariantSpec("catalog-infra-capi", tmplOK, "v9.9.9", "edge-upf-other-version", nil)},
		"upf-other-labels":  {pvSpec: pythonSpec(tmplOK, "edge-upf-other-labels", map[string]any{"site": "elsewhere"})},
		"upf-downstream":    {pvSpec: pythonSpec(tmplOK, "edge-upf-downstream", nil), ann: map[string]any{AnnotationDownstream: "edge-upf-downstream"}},
	}
	before := map[string]*unstructured.Unstructured{"upf-older": older}
	for name, tc := range cases {
		createPR(t, srv, provisioningRequest(name, label, tmplOK, map[string]any{"clusterName": "edge-" + name}))
		pv := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "PackageVariant",
			"metadata": map[string]any{"name": name, "namespace": "default"}, "spec": tc.pvSpec,
		}}
		if tc.ann != nil {
			pv.Object["metadata"].(map[string]any)["annotations"] = tc.ann
		}
		_, err := srv.AdminDynamic().Resource(external.PackageVariantGVR).Namespace("default").Create(context.Background(), pv, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	createPR(t, srv, provisioningRequest("upf-older", label, tmplOK, map[string]any{"clusterName": "edge-upf-older"}))
	for name := range cases {
		eventually(t, 15*time.Second, func() bool {
			pv, _ := getPV(t, srv, name)
			_, ok := condition(pv, "Ready")
			before[name] = pv
			return ok
		}, "the world never rendered %s", name)
	}

	startChain(t, srv, label, nil, nil)
	for name, pv := range before {
		u := waitState(t, srv, name, v1alpha1.StateFailed, 60*time.Second)
		assert.Equal(t, "Provisioning request creation failed; reason: package variant default/"+name+" already exists and belongs to another request", v1alpha1.StatusOf(u).Message)
		after, _ := getPV(t, srv, name)
		assert.Equal(t, pv.GetResourceVersion(), after.GetResourceVersion(), "%s: a foreign package variant was modified", name)
		assert.Empty(t, after.GetAnnotations()[AnnotationRequestUID], name)
		assert.False(t, hasEvent(eventsOf(t, srv, name), corev1.EventTypeNormal, EventAdopted, ""), "%s: adopted", name)
	}
}

// Rolled back to: what this operator leaves on requests is readable by kopf 1.40.1 (aware times, known
// handler ids and keys, records and diff-base it parses), so the Python image carries on with them.
func TestRollbackToThePythonImageFindsStateItCanRead(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	const label = "rollback"
	t0 := time.Now().Add(-30 * time.Second)
	pyAnn := kopf140.MidFlightAnnotations(t0)
	// Taken over from the Python image mid-flight and handled here mid-way (waiting on its Cluster).
	pythonRequest(t, srv, provisioningRequest("rb-python", label, tmplNeverProvision, map[string]any{"clusterName": "edge-rb-python"}), pyAnn, nil)
	pythonPackageVariant(t, srv, "rb-python", pythonSpec(tmplNeverProvision, "edge-rb-python", nil))
	// Started here and left mid-way.
	createPR(t, srv, provisioningRequest("rb-ours", label, tmplNeverProvision, map[string]any{"clusterName": "edge-rb-ours"}))
	// Fulfilled here, labels and all.
	done := provisioningRequest("rb-done", label, tmplOK, map[string]any{"clusterName": "edge-rb-done", "labels": map[string]any{"site": "lab-3"}})
	done.Object["spec"].(map[string]any)["description"] = "Café <lab> & co"
	createPR(t, srv, done)

	c := startChain(t, srv, label, nil, nil)
	key := kopf140.Prefix + "/create_fn"
	eventually(t, 60*time.Second, func() bool {
		u, ok := getPR(t, srv, "rb-python")
		return ok && strings.HasPrefix(v1alpha1.StatusOf(u).Message, "Cluster resource creation ongoing") &&
			kopf140.Read(u).Records["create_fn"].Retries >= 3
	}, "rb-python never waited on its cluster with its record rewritten")
	eventually(t, 60*time.Second, func() bool {
		u, ok := getPR(t, srv, "rb-ours")
		return ok && strings.HasPrefix(v1alpha1.StatusOf(u).Message, "Cluster resource creation ongoing")
	}, "rb-ours never waited on its cluster")
	waitState(t, srv, "rb-done", v1alpha1.StateFulfilled, 60*time.Second)
	c.stop(t)
	now := time.Now()

	for _, name := range []string{"rb-python", "rb-ours", "rb-done"} {
		u, _ := getPR(t, srv, name)
		r := kopf140.Read(u)
		assert.Empty(t, r.Problems, "%s: kopf 1.40.1 cannot read what we left", name)
		if name == "rb-done" {
			assert.True(t, r.SeesNoChange(u), "rb-done: kopf 1.40.1 would see a change")
		}
	}

	// kopf 1.40.1's cause rules at the rolled-back image's start: every request runs create_fn again —
	// those in flight as a create (no diff-base), the fulfilled one as a resume — after kopf removed the
	// finalizer where one was added (the fulfilled one's came with its diff-base; rb-python's before its
	// Python PackageVariant, which carried no ownerReference, was adopted); deleted under the Python image,
	// a request goes at once.
	for name, want := range map[string]struct {
		reason    string
		finalizer bool
	}{"rb-python": {kopf140.ReasonCreate, true}, "rb-ours": {kopf140.ReasonCreate, false}, "rb-done": {kopf140.ReasonResume, true}} {
		u, _ := getPR(t, srv, name)
		d := kopf140.Decide(u, true)
		assert.Equal(t, want.finalizer, d.RemovesFinalizer, "%s: finalizer", name)
		assert.Equal(t, want.reason, d.Final().Reason, name)
		assert.True(t, d.Final().RunsCreateFn, "%s: the Python image would not carry on with it", name)
		gone := u.DeepCopy()
		now := metav1.Now()
		gone.SetDeletionTimestamp(&now)
		assert.True(t, kopf140.Decide(gone, true).Gone || !want.finalizer, "%s: a deletion under the Python image is held", name)
	}

	u, _ := getPR(t, srv, "rb-python")
	ann := u.GetAnnotations()
	r := kopf140.Read(u)
	rec := r.Records["create_fn"]
	assert.GreaterOrEqual(t, rec.Retries, 3, "the Python image's count carried on")
	assert.Equal(t, t0.UTC().Truncate(time.Microsecond), rec.Started, "started kept")
	assert.False(t, rec.Sleeping(now.Add(2*time.Minute)), "its delay is a real time kopf can compare")
	assert.Contains(t, ann[key], `"subrefs":["create_fn/create_fn.<locals>.check_c_status","create_fn/create_fn.<locals>.sub_creation","create_fn/create_fn.<locals>.sub_validations"]}`,
		"subrefs not as kopf writes them")
	for k, v := range pyAnn {
		if k != key {
			assert.Equal(t, v, ann[k], "%s: a sub-handler record was changed", k)
		}
	}
}

// Ownership of our PackageVariant is the request uid alone: after a refused clusterName change the
// request names another cluster, and its deletion still removes the PackageVariant it owns.
func TestDeletionAfterARefusedClusterNameChangeRemovesOurPackageVariant(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	c := startChain(t, srv, "owner-uid", func(c *Config) { c.Requeue = 500 * time.Millisecond }, nil)
	createPR(t, srv, provisioningRequest("owner-uid-1", "owner-uid", tmplOK, map[string]any{"clusterName": "edge-owner-uid-1"}))
	waitState(t, srv, "owner-uid-1", v1alpha1.StateFulfilled, 30*time.Second)
	_, err := srv.AdminDynamic().Resource(v1alpha1.GVR).Patch(context.Background(), "owner-uid-1", types.MergePatchType,
		[]byte(`{"spec":{"templateParameters":{"clusterName":"edge-owner-uid-other"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	u := waitState(t, srv, "owner-uid-1", v1alpha1.StateFailed, 30*time.Second)
	require.Contains(t, v1alpha1.StatusOf(u).Message, "clusterName cannot change")

	require.NoError(t, srv.AdminDynamic().Resource(v1alpha1.GVR).Delete(context.Background(), "owner-uid-1", metav1.DeleteOptions{}))
	eventually(t, 30*time.Second, func() bool { _, ok := getPR(t, srv, "owner-uid-1"); return !ok }, "request never went away")
	assert.Equal(t, 1, c.rec.Count("DELETE", "/packagevariants/owner-uid-1"), "the operator did not delete its own package variant")
	_, left := getPV(t, srv, "owner-uid-1")
	assert.False(t, left, "our package variant outlived the request")
}

// A fulfilled request of the Python image is left alone, its PackageVariant not adopted; deleting the
// request deletes that PackageVariant by the same rule (the Python image would have orphaned it).
func TestDeletingAFulfilledPythonRequestRemovesThePythonImagesPackageVariant(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	const label = "upgrade-delete"
	u := provisioningRequest("upd-1", label, tmplOK, map[string]any{"clusterName": "edge-upd-1"})
	pythonRequest(t, srv, u, kopf140.FulfilledAnnotations(u.Object["spec"].(map[string]any), map[string]string{"test": label}), map[string]any{
		"provisioningStatus": map[string]any{"provisioningState": "fulfilled", "provisioningMessage": "Cluster resource created", "provisioningUpdateTime": "2026-12-01T08:50:02Z"},
	})
	pv := pythonPackageVariant(t, srv, "upd-1", pythonSpec(tmplOK, "edge-upd-1", nil))

	c := startChain(t, srv, label, func(c *Config) { c.Requeue = 500 * time.Millisecond }, nil)
	eventually(t, 20*time.Second, func() bool {
		got, _ := getPR(t, srv, "upd-1")
		return len(got.GetFinalizers()) == 1
	}, "the finalizer was never added")
	time.Sleep(500 * time.Millisecond)
	still, _ := getPV(t, srv, "upd-1")
	assert.Equal(t, pv.GetResourceVersion(), still.GetResourceVersion(), "a fulfilled request's package variant was touched")

	require.NoError(t, srv.AdminDynamic().Resource(v1alpha1.GVR).Delete(context.Background(), "upd-1", metav1.DeleteOptions{}))
	eventually(t, 30*time.Second, func() bool { _, ok := getPR(t, srv, "upd-1"); return !ok }, "request never went away")
	assert.Equal(t, 1, c.rec.Count("DELETE", "/packagevariants/upd-1"))
	_, left := getPV(t, srv, "upd-1")
	assert.False(t, left, "the Python image's package variant outlived its request")
}

// Adopting needs no more than the shipped role grants on PackageVariants (get, update): run as a service
// account bound to manifests/base/rbac/chain.yaml's rules only.
func TestAdoptionNeedsNoMoreThanTheShippedRole(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	ctx := context.Background()
	raw, err := os.ReadFile("../manifests/base/rbac/chain.yaml")
	require.NoError(t, err)
	var role rbacv1.Role
	require.NoError(t, yaml.Unmarshal([]byte(strings.Split(string(raw), "\n---")[0]), &role))
	require.Equal(t, "Role", role.Kind)
	role.ObjectMeta = metav1.ObjectMeta{Name: "adopt-check-chain", Namespace: "default"}
	_, err = srv.AdminClientset().RbacV1().Roles("default").Create(ctx, &role, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = srv.AdminClientset().RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "adopt-check-chain", Namespace: "default"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "adopt-check-chain"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "adopt-check", Namespace: "adopt-check"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	token, err := srv.ServiceAccountToken(ctx, "adopt-check", "adopt-check", "")
	require.NoError(t, err)
	clients, err := framework.NewClients(srv.ConfigForToken(token), framework.DefaultClientOptions())
	require.NoError(t, err)
	cfg, err := ConfigFromEnv(func(string) string { return "" })
	require.NoError(t, err)
	h := New(cfg, "v1beta2", clients, nil, prometheus.NewRegistry())

	pr := createPR(t, srv, provisioningRequest("adopt-rbac", "adopt-rbac", tmplOK, map[string]any{"clusterName": "edge-adopt-rbac"}))
	pv := pythonPackageVariant(t, srv, "adopt-rbac", pythonSpec(tmplOK, "edge-adopt-rbac", nil))
	spec, _, _ := unstructured.NestedMap(pr.Object, "spec")
	req, err := ParseRequest(spec, nil)
	require.NoError(t, err)
	require.True(t, h.madeByThePythonImage(pv, pr, req))
	cause := &framework.Cause{Object: pr, Logger: zaptest.NewLogger(t)}
	adopted, err := h.adopt(ctx, cause, pv, req)
	require.NoError(t, err, "the shipped role cannot adopt")
	require.NotNil(t, adopted)
	assert.Equal(t, pv.GetUID(), adopted.GetUID())
	assert.Equal(t, string(pr.GetUID()), adopted.GetAnnotations()[AnnotationRequestUID])
	assert.True(t, h.isOurs(adopted, pr))
}
