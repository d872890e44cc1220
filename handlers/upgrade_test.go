package handlers

import (
	"context"
	"os"
	"slices"
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
	"github.com/o2ims-operator/o2ims-operator/tests/pythonimage"
)

// Objects exactly as the released Python image (kopf 1.40.1) left them on a real API server
// (testdata/reference/python-image-objects, through tests/pythonimage): requests with or without kopf's
// records, no finalizer, PackageVariants with neither of our annotations nor any label and always a
// pipeline.mutators list. Then this operator starts in its place.

// pythonObjects installs a captured scenario renamed for the test and waits until the simulated Porch has
// reported on its PackageVariant, as it had while the Python image waited.
func pythonObjects(t *testing.T, srv *kubeapi.Server, s pythonimage.Scenario, as pythonimage.As, edit ...func(*pythonimage.Objects)) pythonimage.Objects {
	t.Helper()
	o, err := pythonimage.Load(s, as)
	require.NoError(t, err)
	for _, e := range edit {
		e(&o)
	}
	live, err := o.Install(context.Background(), srv.AdminDynamic())
	require.NoError(t, err)
	if live.PackageVariant != nil {
		eventually(t, 15*time.Second, func() bool {
			pv, _ := getPV(t, srv, as.Name)
			_, ok := condition(pv, "Ready")
			if ok {
				live.PackageVariant = pv
			}
			return ok
		}, "the world never rendered %s", as.Name)
	}
	return live
}

// selecting is a startChain option: the requests of the test's renamed scenarios.
func selecting(as pythonimage.As, more ...func(*Config)) func(*Config) {
	return func(c *Config) {
		c.Selector = as.Selector()
		for _, m := range more {
			m(c)
		}
	}
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

// The image swapped with requests in flight: each carries on on the PackageVariant the Python image made
// (same uid, same spec, no second POST) to fulfilled, the fulfilled one stays as it is, and deleting any
// of them removes the Python image's PackageVariant (it would have orphaned it).
func TestUpgradeFromThePythonImageFulfilsItsRequestsInFlight(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	const label = "upgrade"
	live := map[pythonimage.Scenario]pythonimage.Objects{}
	as := func(s pythonimage.Scenario) pythonimage.As {
		return pythonimage.As{Name: "upg-" + string(s), Label: label}
	}
	for _, s := range pythonimage.All {
		live[s] = pythonObjects(t, srv, s, as(s))
	}
	fulfilledBefore, _ := getPR(t, srv, as(pythonimage.Fulfilled).Name)

	c := startChain(t, srv, label, selecting(as(pythonimage.Fulfilled)), nil)
	inFlight := []pythonimage.Scenario{pythonimage.Labels, pythonimage.NoLabels, pythonimage.Early}
	for _, s := range inFlight {
		done := waitState(t, srv, as(s).Name, v1alpha1.StateFulfilled, 60*time.Second)
		assert.Equal(t, "Cluster resource created", v1alpha1.StatusOf(done).Message, s)
		cl, err := srv.AdminDynamic().Resource(external.ClusterGVR("v1beta2")).Namespace("default").Get(context.Background(), as(s).ClusterName(), metav1.GetOptions{})
		require.NoError(t, err)
		id, _, _ := unstructured.NestedString(done.Object, "status", "provisionedResourceSet", "oCloudNodeClusterId")
		assert.Equal(t, string(cl.GetUID()), id, s)
		if live[s].Cluster != nil {
			assert.Equal(t, live[s].Cluster.GetUID(), cl.GetUID(), "%s: the Python image's Cluster was replaced", s)
		}

		name, want := as(s).Name, live[s]
		pv, ok := getPV(t, srv, name)
		require.True(t, ok)
		assert.Equal(t, want.PackageVariant.GetUID(), pv.GetUID(), "%s: the Python image's package variant was replaced", s)
		assert.Equal(t, want.PackageVariant.Object["spec"], pv.Object["spec"], "%s: its spec was changed", s)
		assert.Equal(t, string(want.Request.GetUID()), pv.GetAnnotations()[AnnotationRequestUID], s)
		assert.Equal(t, as(s).ClusterName(), pv.GetAnnotations()[AnnotationDownstream], s)
		assert.Equal(t, LabelOwnerValue, pv.GetLabels()[LabelOwner], s)
		require.Len(t, pv.GetOwnerReferences(), 1, s)
		assert.Equal(t, want.Request.GetUID(), pv.GetOwnerReferences()[0].UID, s)
		eventually(t, 10*time.Second, func() bool {
			return hasEvent(eventsOf(t, srv, name), corev1.EventTypeNormal, EventAdopted, "the Python image created it for this request")
		}, "%s: no adoption event", s)
	}
	assert.Zero(t, c.rec.Count("POST", "/packagevariants"), "a package variant was created beside the Python image's")

	// The fulfilled one is left alone: its status (the Python image's ids and time), its PackageVariant.
	fulfilled, _ := getPR(t, srv, as(pythonimage.Fulfilled).Name)
	assert.Equal(t, fulfilledBefore.Object["status"], fulfilled.Object["status"], "a fulfilled request's status was rewritten")
	assert.Empty(t, c.rec.Writes("/provisioningrequests/"+as(pythonimage.Fulfilled).Name+"/status"))
	assert.Empty(t, c.rec.Writes("/packagevariants/"+as(pythonimage.Fulfilled).Name), "a fulfilled request's package variant was touched")
	pv, _ := getPV(t, srv, as(pythonimage.Fulfilled).Name)
	assert.Empty(t, pv.GetAnnotations(), "a fulfilled request's package variant was adopted")

	// Adopted once: a restart finds them ours and says nothing more.
	c.stop(t)
	again := startChain(t, srv, label, selecting(as(pythonimage.Fulfilled)), nil)
	time.Sleep(time.Second)
	assert.Empty(t, again.rec.Writes("/packagevariants"), "the restarted operator touched a package variant")
	for _, s := range inFlight {
		assert.Equal(t, 1, countEvents(eventsOf(t, srv, as(s).Name), EventAdopted), "%s: adopted more than once", s)
	}

	// The Python image's records are purged with the cause, the diff-base written as kopf writes it.
	u, _ := getPR(t, srv, as(pythonimage.Labels).Name)
	r := kopf140.Read(u)
	assert.Empty(t, r.Problems)
	assert.Empty(t, r.Records, "kopf records left behind")
	assert.True(t, r.SeesNoChange(u), "the Python image would see a change")

	// Deleting each removes the Python image's PackageVariant: adopted or only recognised.
	for _, s := range pythonimage.All {
		require.NoError(t, srv.AdminDynamic().Resource(v1alpha1.GVR).Delete(context.Background(), as(s).Name, metav1.DeleteOptions{}))
	}
	for _, s := range pythonimage.All {
		eventually(t, 30*time.Second, func() bool { _, ok := getPR(t, srv, as(s).Name); return !ok }, "%s: request never went away", s)
		eventually(t, 30*time.Second, func() bool { _, ok := getPV(t, srv, as(s).Name); return !ok }, "%s: the Python image's package variant outlived its request", s)
		assert.Equal(t, 1, again.rec.Count("DELETE", "/packagevariants/"+as(s).Name), s)
	}
}

// The budget is CREATION_TIMEOUT from the request's creationTimestamp, however long the Python image had
// it: the upgrade grants no fresh one.
func TestUpgradeKeepsTheBudgetFromCreationTimestamp(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	as := pythonimage.As{Name: "upg-budget", Label: "upgrade-budget", Template: tmplNeverProvision}
	pr := pythonObjects(t, srv, pythonimage.NoLabels, as).Request
	created := pr.GetCreationTimestamp().Time
	const budget = 6 * time.Second
	for time.Since(created) < 4*time.Second {
		time.Sleep(100 * time.Millisecond) // the Python image's time with it
	}
	start := time.Now()
	startChain(t, srv, as.Label, selecting(as, func(c *Config) { c.CreationTimeout = budget; c.Requeue = 300 * time.Millisecond }), nil)
	failed := waitState(t, srv, as.Name, v1alpha1.StateFailed, 60*time.Second)
	assert.Contains(t, v1alpha1.StatusOf(failed).Message, "timed out after 6s")
	updated, err := time.Parse(time.RFC3339, v1alpha1.StatusOf(failed).UpdateTime)
	require.NoError(t, err)
	assert.False(t, updated.Before(created.Truncate(time.Second).Add(budget)), "failed before its budget was spent")
	assert.True(t, updated.Before(start.Add(budget-time.Second)), "the upgrade granted a fresh budget: failed at %s, started at %s", updated, start)
	pv, _ := getPV(t, srv, as.Name)
	assert.Equal(t, string(pr.GetUID()), pv.GetAnnotations()[AnnotationRequestUID], "adopted on the way")
}

// Anything without our annotations that is not exactly the Python image's PackageVariant for this request
// stays foreign: the request fails with a conflict and the PackageVariant is never touched. Each case is
// the captured one with one thing changed.
func TestPackageVariantsNotMadeByThePythonImageForTheRequestStayForeign(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	const label = "upgrade-foreign"
	spec := func(o *pythonimage.Objects) map[string]any { return o.PackageVariant.Object["spec"].(map[string]any) }
	cases := map[string]struct {
		scenario pythonimage.Scenario
		edit     func(*pythonimage.Objects)
	}{
		"upf-other-cluster": {pythonimage.NoLabels, func(o *pythonimage.Objects) {
			spec(o)["downstream"].(map[string]any)["package"] = "edge-someone-else"
		}},
		"upf-other-version": {pythonimage.NoLabels, func(o *pythonimage.Objects) {
			spec(o)["upstream"].(map[string]any)["workspaceName"] = "v9.9.9"
		}},
		"upf-other-labels": {pythonimage.Labels, func(o *pythonimage.Objects) {
			spec(o)["pipeline"].(map[string]any)["mutators"].([]any)[0].(map[string]any)["configMap"] = map[string]any{"site": "elsewhere"}
		}},
		"upf-labels-lost": {pythonimage.Labels, func(o *pythonimage.Objects) {
			spec(o)["pipeline"] = map[string]any{"mutators": []any{}}
		}},
		"upf-downstream": {pythonimage.NoLabels, func(o *pythonimage.Objects) {
			o.PackageVariant.SetAnnotations(map[string]string{AnnotationDownstream: o.PackageVariant.Object["spec"].(map[string]any)["downstream"].(map[string]any)["package"].(string)})
		}},
	}
	before := map[string]*unstructured.Unstructured{}
	for name, tc := range cases {
		before[name] = pythonObjects(t, srv, tc.scenario, pythonimage.As{Name: name, Label: label}, tc.edit, func(o *pythonimage.Objects) { o.Cluster = nil }).PackageVariant
	}
	// A leftover of an earlier request of that name (the Python image never deleted them): older than the
	// request, so made for another one.
	older, err := pythonimage.Load(pythonimage.NoLabels, pythonimage.As{Name: "upf-older", Label: label})
	require.NoError(t, err)
	pvOnly := older
	pvOnly.Request, pvOnly.Cluster = nil, nil
	_, err = pvOnly.Install(context.Background(), srv.AdminDynamic())
	require.NoError(t, err)
	time.Sleep(1100 * time.Millisecond) // creationTimestamps have second precision
	older.PackageVariant, older.Cluster = nil, nil
	_, err = older.Install(context.Background(), srv.AdminDynamic())
	require.NoError(t, err)
	eventually(t, 15*time.Second, func() bool {
		pv, _ := getPV(t, srv, "upf-older")
		_, ok := condition(pv, "Ready")
		before["upf-older"] = pv
		return ok
	}, "the world never rendered upf-older")

	c := startChain(t, srv, label, selecting(pythonimage.As{Label: label}), nil)
	for name, pv := range before {
		u := waitState(t, srv, name, v1alpha1.StateFailed, 60*time.Second)
		assert.Equal(t, "Provisioning request creation failed; reason: package variant default/"+name+" already exists and belongs to another request", v1alpha1.StatusOf(u).Message)
		after, _ := getPV(t, srv, name)
		assert.Empty(t, c.rec.Writes("/packagevariants/"+name), "%s: a foreign package variant was written", name)
		assert.Equal(t, pv.GetAnnotations(), after.GetAnnotations(), name)
		assert.Equal(t, pv.Object["spec"], after.Object["spec"], name)
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
	// Taken over from the Python image mid-flight and handled here mid-way (waiting on its Cluster).
	py := pythonimage.As{Name: "rb-python", Label: label, Template: tmplNeverProvision}
	taken := pythonObjects(t, srv, pythonimage.NoLabels, py).Request
	pyAnn := taken.GetAnnotations()
	t0 := kopf140.Read(taken).Records["create_fn"].Started
	require.False(t, t0.IsZero(), "the capture has no create_fn record")
	// Started here and left mid-way; fulfilled here, labels and all.
	ours := provisioningRequest("rb-ours", label, tmplNeverProvision, map[string]any{"clusterName": "edge-rb-ours"})
	done := provisioningRequest("rb-done", label, tmplOK, map[string]any{"clusterName": "edge-rb-done", "labels": map[string]any{"site": "lab-3"}})
	done.Object["spec"].(map[string]any)["description"] = "Café <lab> & co"
	for _, u := range []*unstructured.Unstructured{ours, done} {
		u.SetLabels(map[string]string{pythonimage.ScenarioLabel: label})
		createPR(t, srv, u)
	}

	c := startChain(t, srv, label, selecting(py), nil)
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
	assert.Equal(t, t0, rec.Started, "started kept")
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
	// The finalizer rides along the pass's metadata write, which follows its status write: a delete sent
	// between the two wins the race and leaves the PackageVariant to the garbage collector through its
	// ownerReference (this test's API server runs none). Deleting once the finalizer is there is the
	// release this test is about.
	eventually(t, 10*time.Second, func() bool {
		got, _ := getPR(t, srv, "owner-uid-1")
		return slices.Contains(got.GetFinalizers(), Finalizer)
	}, "the finalizer never rode along a write")
	pv, _ := getPV(t, srv, "owner-uid-1")
	require.True(t, ownerRefTo(pv, u), "our package variant names no owner for the garbage collector")

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
	as := pythonimage.As{Name: "upd-1", Label: "upgrade-delete"}
	pv := pythonObjects(t, srv, pythonimage.Fulfilled, as).PackageVariant

	c := startChain(t, srv, as.Label, selecting(as, func(c *Config) { c.Requeue = 500 * time.Millisecond }), nil)
	eventually(t, 20*time.Second, func() bool {
		got, _ := getPR(t, srv, as.Name)
		return len(got.GetFinalizers()) == 1
	}, "the finalizer was never added")
	time.Sleep(500 * time.Millisecond)
	assert.Empty(t, c.rec.Writes("/packagevariants/"+as.Name), "a fulfilled request's package variant was touched")
	still, _ := getPV(t, srv, as.Name)
	assert.Equal(t, pv.Object["spec"], still.Object["spec"])
	assert.Empty(t, still.GetAnnotations(), "a fulfilled request's package variant was adopted")

	require.NoError(t, srv.AdminDynamic().Resource(v1alpha1.GVR).Delete(context.Background(), as.Name, metav1.DeleteOptions{}))
	eventually(t, 30*time.Second, func() bool { _, ok := getPR(t, srv, as.Name); return !ok }, "request never went away")
	assert.Equal(t, 1, c.rec.Count("DELETE", "/packagevariants/"+as.Name))
	_, left := getPV(t, srv, as.Name)
	assert.False(t, left, "the Python image's package variant outlived its request")
}

// shippedRoleHandlers are Handlers whose client runs as service account sa (in namespace sa), bound in
// "default" to manifests/base/rbac/chain.yaml's Role rules only.
func shippedRoleHandlers(t *testing.T, srv *kubeapi.Server, sa string) *Handlers {
	t.Helper()
	ctx := context.Background()
	raw, err := os.ReadFile("../manifests/base/rbac/chain.yaml")
	require.NoError(t, err)
	var role rbacv1.Role
	require.NoError(t, yaml.Unmarshal([]byte(strings.Split(string(raw), "\n---")[0]), &role))
	require.Equal(t, "Role", role.Kind)
	role.ObjectMeta = metav1.ObjectMeta{Name: sa + "-chain", Namespace: "default"}
	_, err = srv.AdminClientset().RbacV1().Roles("default").Create(ctx, &role, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = srv.AdminClientset().RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: sa + "-chain", Namespace: "default"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: sa + "-chain"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: sa}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	token, err := srv.ServiceAccountToken(ctx, sa, sa, "")
	require.NoError(t, err)
	clients, err := framework.NewClients(srv.ConfigForToken(token), framework.DefaultClientOptions())
	require.NoError(t, err)
	cfg, err := ConfigFromEnv(func(string) string { return "" })
	require.NoError(t, err)
	return New(cfg, "v1beta2", clients, nil, prometheus.NewRegistry())
}

// Adopting needs no more than the shipped role grants on PackageVariants (get, update): run as a service
// account bound to manifests/base/rbac/chain.yaml's rules only.
func TestAdoptionNeedsNoMoreThanTheShippedRole(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	ctx := context.Background()
	h := shippedRoleHandlers(t, srv, "adopt-check")

	live := pythonObjects(t, srv, pythonimage.NoLabels, pythonimage.As{Name: "adopt-rbac", Label: "adopt-rbac"})
	pr, pv := live.Request, live.PackageVariant
	spec, _, _ := unstructured.NestedMap(pr.Object, "spec")
	req, err := ParseRequest(spec, nil)
	require.NoError(t, err)
	require.True(t, h.madeByThePythonImage(pv, pr, req))
	// The simulated Porch may still write the PackageVariant's status after we read it; adopt then meets a
	// conflict and waits (a status write, hence the Patch), and the next try reads it again.
	var adopted *unstructured.Unstructured
	for try := 0; adopted == nil && try < 5; try++ {
		cause := &framework.Cause{Object: pr, Logger: zaptest.NewLogger(t),
			Patch: &framework.Patch{Status: map[string]any{}, Labels: map[string]*string{}, Annotations: map[string]*string{}}}
		if try > 0 {
			pv, _ = getPV(t, srv, pv.GetName())
		}
		adopted, err = h.adopt(ctx, cause, pv, req)
		if adopted == nil {
			var wait *framework.TemporaryError
			require.ErrorAs(t, err, &wait, "the shipped role cannot adopt")
		}
	}
	require.NotNil(t, adopted)
	assert.Equal(t, pv.GetUID(), adopted.GetUID())
	assert.Equal(t, string(pr.GetUID()), adopted.GetAnnotations()[AnnotationRequestUID])
	assert.True(t, h.isOurs(adopted, pr))
}

// For the same request this operator writes the spec the image wrote (one PackageVariant shape, so a
// rollback and an adoption find what they expect), and a spec without a pipeline, as this operator wrote
// before, renders alike and is not rewritten for that alone.
func TestOurPackageVariantSpecIsThePythonImages(t *testing.T) {
	cfg, err := ConfigFromEnv(func(string) string { return "" })
	require.NoError(t, err)
	h := &Handlers{cfg: cfg}
	for _, s := range pythonimage.All {
		o, err := pythonimage.Load(s, pythonimage.As{Name: "spec-" + string(s), Label: "unit"})
		require.NoError(t, err)
		spec, _, _ := unstructured.NestedMap(o.Request.Object, "spec")
		req, err := ParseRequest(spec, nil)
		require.NoError(t, err)
		assert.Equal(t, o.PackageVariant.Object["spec"], h.packageVariantSpec(req), s)
	}
	noLabels := h.packageVariantSpec(Request{TemplateName: "t", TemplateVersion: "v1", ClusterName: "c"})
	before := map[string]any{}
	for k, v := range noLabels {
		if k != "pipeline" {
			before[k] = v
		}
	}
	assert.True(t, rendersAlike(before, noLabels), "no pipeline and an empty one render alike")
	withLabels := h.packageVariantSpec(Request{TemplateName: "t", TemplateVersion: "v1", ClusterName: "c", Labels: map[string]string{"a": "b"}})
	assert.False(t, rendersAlike(before, withLabels))
	assert.False(t, rendersAlike(noLabels, withLabels))
}
