package handlers

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/tests/kopf140"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/pythonimage"
)

// The Python image's PackageVariant is recognised by the spec kopf recorded as handled (its diff-base)
// when the request's spec changed since; a request in flight has no such record, so only its current
// spec names it. Each case is a captured one with its spec edited after the image made the
// PackageVariant.
func TestThePythonImagesPackageVariantIsKnownByTheSpecItHandled(t *testing.T) {
	cfg, err := ConfigFromEnv(func(string) string { return "" })
	require.NoError(t, err)
	h := &Handlers{cfg: cfg}
	for s, want := range map[pythonimage.Scenario]bool{pythonimage.Fulfilled: true, pythonimage.Labels: false, pythonimage.NoLabels: false, pythonimage.Early: false} {
		o, err := pythonimage.Load(s, pythonimage.As{Name: "known-" + string(s), Label: "unit"})
		require.NoError(t, err)
		pr, pv := o.Request, o.PackageVariant
		// Times as the API server sets them: the PackageVariant after its request.
		pr.SetCreationTimestamp(metav1.NewTime(time.Unix(1000, 0)))
		pv.SetCreationTimestamp(metav1.NewTime(time.Unix(1001, 0)))
		spec, _, _ := unstructured.NestedMap(pr.Object, "spec")
		req, err := ParseRequest(spec, nil)
		require.NoError(t, err)
		require.True(t, h.madeByThePythonImage(pv, pr, req), "%s: unedited", s)

		edited := pr.DeepCopy()
		require.NoError(t, unstructured.SetNestedField(edited.Object, "v3.1.0", "spec", "templateVersion"))
		req.TemplateVersion = "v3.1.0"
		assert.Equal(t, want, h.madeByThePythonImage(pv, edited, req), "%s: edited", s)
		assert.Equal(t, want, h.isOurs(pv, edited), "%s: the release's view", s)

		labelled := pv.DeepCopy()
		labelled.SetLabels(map[string]string{"team": "x"})
		assert.False(t, h.madeByThePythonImage(labelled, edited, req), "%s: the image wrote no label", s)
	}
}

// A request the Python image fulfilled, edited under this operator: its PackageVariant (same uid) is
// adopted and moved to the new spec, the request is fulfilled again on it, the image's random ids are
// replaced by the real ones (never one without the other), kopf 1.40.1 can still carry the request on
// after a rollback, and deleting the request deletes the PackageVariant.
func TestAPythonFulfilledRequestIsAdoptedOnItsFirstChange(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	as := pythonimage.As{Name: "adp-edit", Label: "adopt-edit"}
	live := pythonObjects(t, srv, pythonimage.Fulfilled, as)
	imageIDs := v1alpha1.ResourceSetOf(live.Request)
	require.NotEmpty(t, imageIDs.NodeClusterID)

	c := startChain(t, srv, as.Label, selecting(as, func(c *Config) { c.Requeue = 500 * time.Millisecond }), nil)
	eventually(t, 20*time.Second, func() bool {
		got, _ := getPR(t, srv, as.Name)
		return len(got.GetFinalizers()) == 1
	}, "the finalizer was never added")
	patchPR(t, srv, as.Name, `{"spec":{"templateVersion":"v3.1.0"}}`)

	eventually(t, 30*time.Second, func() bool {
		pv, ok := getPV(t, srv, as.Name)
		v, _, _ := unstructured.NestedString(pv.Object, "spec", "upstream", "workspaceName")
		return ok && v == "v3.1.0"
	}, "the package variant was not moved to the new template version")
	eventually(t, 30*time.Second, func() bool {
		u, _ := getPR(t, srv, as.Name)
		_, ours := u.Object["status"].(map[string]any)["extensions"]
		return v1alpha1.StatusOf(u).State == v1alpha1.StateFulfilled && ours
	}, "never fulfilled again after the change")

	pv, _ := getPV(t, srv, as.Name)
	assert.Equal(t, live.PackageVariant.GetUID(), pv.GetUID(), "the Python image's package variant was replaced")
	assert.Equal(t, string(live.Request.GetUID()), pv.GetAnnotations()[AnnotationRequestUID])
	assert.Equal(t, as.ClusterName(), pv.GetAnnotations()[AnnotationDownstream])
	require.Len(t, pv.GetOwnerReferences(), 1)
	assert.Equal(t, 1, countEvents(eventsOf(t, srv, as.Name), EventAdopted))
	assert.Zero(t, c.rec.Count("POST", "/packagevariants"), "a package variant was created beside the Python image's")

	cl, err := srv.AdminDynamic().Resource(external.ClusterGVR("v1beta2")).Namespace("default").Get(context.Background(), as.ClusterName(), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, live.Cluster.GetUID(), cl.GetUID(), "the Python image's Cluster was replaced")
	u, _ := getPR(t, srv, as.Name)
	assert.Equal(t, v1alpha1.ProvisionedResourceSet{NodeClusterID: string(cl.GetUID()), InfrastructureResourceIDs: []string{}}, v1alpha1.ResourceSetOf(u))
	// Replaced in one write: every status write that carries the set carries both real ids, none the image's.
	sets := 0
	for _, body := range c.rec.Bodies("PATCH", "/provisioningrequests/"+as.Name+"/status") {
		var p struct {
			Status map[string]json.RawMessage `json:"status"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &p))
		raw, ok := p.Status[v1alpha1.FieldProvisionedResourceSet]
		if !ok {
			continue
		}
		sets++
		var set map[string]any
		require.NoError(t, json.Unmarshal(raw, &set))
		assert.Equal(t, map[string]any{"oCloudNodeClusterId": string(cl.GetUID()), "oCloudInfrastructureResourceIds": []any{}}, set, body)
	}
	assert.Positive(t, sets, "the ids were never written")

	// Rolled back now: kopf 1.40.1 reads what we left, sees no change and carries the request on (its
	// create_fn finds the PackageVariant by name and does not create another).
	eventually(t, 10*time.Second, func() bool {
		u, _ = getPR(t, srv, as.Name)
		return kopf140.Read(u).SeesNoChange(u)
	}, "the change's diff-base was never written")
	c.stop(t)
	u, _ = getPR(t, srv, as.Name)
	r := kopf140.Read(u)
	assert.Empty(t, r.Problems, "kopf 1.40.1 cannot read what we left")
	assert.True(t, r.SeesNoChange(u), "kopf 1.40.1 would see a change")
	d := kopf140.Decide(u, true)
	assert.Equal(t, kopf140.ReasonResume, d.Final().Reason)
	assert.True(t, d.Final().RunsCreateFn, "the Python image would not carry on with it")

	again := startChain(t, srv, as.Label, selecting(as, func(c *Config) { c.Requeue = 500 * time.Millisecond }), nil)
	deletePR(t, srv, as.Name)
	eventually(t, 30*time.Second, func() bool { _, ok := getPR(t, srv, as.Name); return !ok }, "request never went away")
	eventually(t, 30*time.Second, func() bool { _, ok := getPV(t, srv, as.Name); return !ok }, "the adopted package variant outlived its request")
	assert.Equal(t, 1, again.rec.Count("DELETE", "/packagevariants/"+as.Name))
}

// Edited and then deleted while no operator handled the edit: the release still knows the Python image's
// PackageVariant by the spec the image handled, and deletes it.
func TestAPythonRequestEditedThenDeletedTakesItsPackageVariantAlong(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	as := pythonimage.As{Name: "adp-del", Label: "adopt-del"}
	pythonObjects(t, srv, pythonimage.Fulfilled, as)
	c := startChain(t, srv, as.Label, selecting(as), nil)
	eventually(t, 20*time.Second, func() bool {
		got, _ := getPR(t, srv, as.Name)
		return len(got.GetFinalizers()) == 1
	}, "the finalizer was never added")
	c.stop(t)

	patchPR(t, srv, as.Name, `{"spec":{"templateVersion":"v3.1.0"}}`)
	deletePR(t, srv, as.Name)
	again := startChain(t, srv, as.Label, selecting(as, func(c *Config) { c.Requeue = 500 * time.Millisecond }), nil)
	eventually(t, 30*time.Second, func() bool { _, ok := getPR(t, srv, as.Name); return !ok }, "request never went away")
	assert.Equal(t, 1, again.rec.Count("DELETE", "/packagevariants/"+as.Name))
	_, left := getPV(t, srv, as.Name)
	assert.False(t, left, "the Python image's package variant outlived its request")
}
