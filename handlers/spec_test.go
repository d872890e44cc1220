package handlers

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/world"
)

func TestParseRequestChecksShapesNotGoTypes(t *testing.T) {
	reserved := map[string]bool{"o2ims_request_uid": true}
	good := map[string]any{
		"templateName": "edge", "templateVersion": "v1",
		"templateParameters": map[string]any{
			"clusterName": "edge-1", "labels": map[string]any{"site": "a"},
			"hosts": []any{
				map[string]any{"role": "control-plane", "count": float64(1), "selector": map[string]any{"cpu_cores": float64(16), "gpu": "a100", "smt": true}},
				map[string]any{"role": "worker", "count": int64(2)},
			},
		},
	}
	r, err := ParseRequest(good, reserved)
	require.NoError(t, err)
	assert.Equal(t, Request{
		TemplateName: "edge", TemplateVersion: "v1", ClusterName: "edge-1", Labels: map[string]string{"site": "a"},
		Hosts: []HostRequest{
			{Role: "control-plane", Count: 1, Selector: map[string]any{"cpu_cores": int64(16), "gpu": "a100", "smt": true}},
			{Role: "worker", Count: 2, Selector: map[string]any{}},
		},
	}, r)
	assert.Equal(t, 3, r.Total())

	bad := map[string]struct {
		mutate func(m map[string]any)
		reason string
	}{
		"no templateName":          {func(m map[string]any) { delete(m, "templateName") }, "templateName is missing"},
		"numeric templateName":     {func(m map[string]any) { m["templateName"] = 3.0 }, "templateName must be a string, got a number"},
		"empty version":            {func(m map[string]any) { m["templateVersion"] = " " }, "templateVersion is empty"},
		"no parameters":            {func(m map[string]any) { delete(m, "templateParameters") }, "templateParameters is missing"},
		"parameters list":          {func(m map[string]any) { m["templateParameters"] = []any{} }, "templateParameters must be an object, got a list"},
		"no clusterName":           {func(m map[string]any) { delete(params(m), "clusterName") }, "clusterName is missing in template parameters"},
		"bad clusterName":          {func(m map[string]any) { params(m)["clusterName"] = "-x-" }, `clusterName "-x-" is not a valid name`},
		"labels string":            {func(m map[string]any) { params(m)["labels"] = "a=b" }, "labels must be an object, got a string"},
		"label key":                {func(m map[string]any) { params(m)["labels"] = map[string]any{"bad key": "v"} }, `labels key "bad key" is not a valid label key`},
		"hosts object":             {func(m map[string]any) { params(m)["hosts"] = map[string]any{} }, "hosts must be a list, got an object"},
		"hosts empty":              {func(m map[string]any) { params(m)["hosts"] = []any{} }, "hosts must not be empty"},
		"duplicate role":           {func(m map[string]any) { hosts(m)[1].(map[string]any)["role"] = "control-plane" }, `hosts[1].role "control-plane" is used twice`},
		"role not a label":         {func(m map[string]any) { hosts(m)[0].(map[string]any)["role"] = "Control_Plane" }, "is not a DNS-1123 label"},
		"zero count":               {func(m map[string]any) { hosts(m)[0].(map[string]any)["count"] = 0.0 }, "hosts[0].count must be at least 1, got 0"},
		"fractional count":         {func(m map[string]any) { hosts(m)[0].(map[string]any)["count"] = 1.5 }, "hosts[0].count must be a whole number"},
		"missing count":            {func(m map[string]any) { delete(hosts(m)[0].(map[string]any), "count") }, "hosts[0].count is missing"},
		"list selector value":      {func(m map[string]any) { sel(m)["gpu"] = []any{"a"} }, "hosts[0].selector.gpu must be a string, boolean or whole number, got a list"},
		"float selector value":     {func(m map[string]any) { sel(m)["cpu_cores"] = 1.5 }, "must be a string, boolean or whole number, got 1.5"},
		"reserved selector key":    {func(m map[string]any) { sel(m)["o2ims_request_uid"] = "x" }, `selector key "o2ims_request_uid" is reserved`},
		"unknown host field":       {func(m map[string]any) { hosts(m)[0].(map[string]any)["size"] = "xl" }, `hosts[0] has an unknown field "size"`},
		"host entry not an object": {func(m map[string]any) { params(m)["hosts"] = []any{"worker"} }, "hosts[0] must be an object, got a string"},
	}
	for name, tc := range bad {
		t.Run(name, func(t *testing.T) {
			spec := runtimeCopy(good)
			tc.mutate(spec)
			_, err := ParseRequest(spec, reserved)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.reason)
		})
	}
}

func params(m map[string]any) map[string]any { return m["templateParameters"].(map[string]any) }
func hosts(m map[string]any) []any           { return params(m)["hosts"].([]any) }
func sel(m map[string]any) map[string]any {
	return hosts(m)[0].(map[string]any)["selector"].(map[string]any)
}

func runtimeCopy(m map[string]any) map[string]any {
	return (&unstructured.Unstructured{Object: m}).DeepCopy().Object
}

func TestConfigFromEnvKeepsThePythonDefaultsAndRejectsBadValues(t *testing.T) {
	cfg, err := ConfigFromEnv(func(string) string { return "" })
	require.NoError(t, err)
	assert.Equal(t, "catalog-infra-capi", cfg.UpstreamRepo)
	assert.Equal(t, "mgmt", cfg.DownstreamRepo)
	assert.Equal(t, "capi", cfg.Provisioner)
	assert.Equal(t, 1800*time.Second, cfg.CreationTimeout)
	assert.Equal(t, 10*time.Second, cfg.Requeue)

	env := func(k, v string) func(string) string {
		return func(key string) string {
			if key == k {
				return v
			}
			return ""
		}
	}
	for k, v := range map[string]string{
		"CLUSTER_PROVISIONER": "crossplane", "CREATION_TIMEOUT": "0", "REQUEUE_INTERVAL": "ten",
		"CLUSTER_API_VERSION": "v1", "UPSTREAM_PKG_REPO": "a/b", "PROVISIONING_REQUEST_SELECTOR": "a in (",
	} {
		_, err := ConfigFromEnv(env(k, v))
		require.Error(t, err, k)
		assert.Contains(t, err.Error(), k, "the one line names the variable")
	}
	cfg, err = ConfigFromEnv(env("CREATION_TIMEOUT", "60"))
	require.NoError(t, err)
	assert.Equal(t, time.Minute, cfg.CreationTimeout)
}

func TestClusterViews(t *testing.T) {
	cl := func(status map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"status": status}}
	}
	available := map[string]any{"type": "Available", "status": "True", "reason": "Available", "message": ""}
	notAvailable := map[string]any{"type": "Available", "status": "False", "reason": "NotAvailable", "message": "* ControlPlaneAvailable: no"}

	v := viewCluster(cl(map[string]any{"phase": "Provisioned", "conditions": []any{notAvailable}}), "v1beta2")
	assert.False(t, v.provisioned, "v1beta2: phase Provisioned is not enough; Available decides")
	assert.Equal(t, "Available=False NotAvailable: * ControlPlaneAvailable: no", v.detail)
	v = viewCluster(cl(map[string]any{"phase": "Provisioned", "conditions": []any{map[string]any{"type": "X"}, available}}), "v1beta2")
	assert.True(t, v.provisioned, "found by type, wherever it is")
	v = viewCluster(cl(map[string]any{"phase": "Provisioning"}), "v1beta2")
	assert.Equal(t, clusterView{phase: "Provisioning", detail: "Available not reported yet"}, v)

	assert.True(t, viewCluster(cl(map[string]any{"phase": "Provisioned"}), "v1beta1").provisioned, "v1beta1: the Python operator's rule")
	assert.False(t, viewCluster(cl(map[string]any{"phase": "Provisioning", "conditions": []any{available}}), "v1beta1").provisioned)
	v = viewCluster(cl(map[string]any{"phase": "Failed", "failureReason": "Bad", "failureMessage": "no machines"}), "v1beta1")
	assert.True(t, v.failed)
	assert.Equal(t, "Bad: no machines", v.detail)
	v = viewCluster(cl(map[string]any{"phase": "Failed", "deprecated": map[string]any{"v1beta1": map[string]any{"failureMessage": "gone"}}}), "v1beta2")
	assert.True(t, v.failed)
	assert.Equal(t, "gone", v.detail)
	assert.Equal(t, "no phase yet", viewCluster(cl(nil), "v1beta2").phase)
}

// CAPI as Nephio's Python operator reads it: a cluster that serves only v1beta1.
func TestChainWithAV1beta1OnlyClusterAPI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := kubeapi.Start(ctx, kubeapi.Options{})
	require.NoError(t, err)
	defer srv.Stop()
	own, _ := kubeapi.RepoFile(kubeapi.ProvisioningRequestCRD)
	pv, _ := kubeapi.ReferenceCRD(kubeapi.PackageVariantCRD)
	v1beta1, _ := kubeapi.ReferenceCRD(kubeapi.ClusterV1beta1OnlyCRD)
	require.NoError(t, srv.InstallCRDs(ctx, own, pv, v1beta1))
	opts := worldOptions
	opts.Dynamic, opts.ClusterVersion = srv.AdminDynamic(), "v1beta1"
	w, err := world.Start(ctx, opts)
	require.NoError(t, err)
	defer w.Stop()

	c := startChain(t, srv, "v1beta1", nil, nil)
	defer c.stop(t)
	createPR(t, srv, provisioningRequest("old-capi-1", "v1beta1", tmplOK, map[string]any{"clusterName": "edge-old-1"}))
	done := waitState(t, srv, "old-capi-1", StateFulfilled, 60*time.Second)
	cl, err := srv.AdminDynamic().Resource(ClusterGVR("v1beta1")).Namespace("default").Get(ctx, "edge-old-1", metav1.GetOptions{})
	require.NoError(t, err)
	id, _, _ := unstructured.NestedString(done.Object, "status", "provisionedResourceSet", "oCloudNodeClusterId")
	assert.Equal(t, string(cl.GetUID()), id)

	disc := srv.AdminClientset().Discovery()
	v, err := DetectClusterVersion(disc, "")
	require.NoError(t, err)
	assert.Equal(t, "v1beta1", v)
	_, err = DetectClusterVersion(disc, "v1beta2")
	assert.ErrorContains(t, err, "cluster.x-k8s.io/v1beta2 is not served")
}

func TestClusterVersionDetectionOnTheUpstreamCRD(t *testing.T) {
	disc := kubeapi.Shared(t).AdminClientset().Discovery()
	v, err := DetectClusterVersion(disc, "")
	require.NoError(t, err)
	assert.Equal(t, "v1beta2", v, "CAPI ≥ 1.11 stores v1beta2")
	v, err = DetectClusterVersion(disc, "v1beta1")
	require.NoError(t, err)
	assert.Equal(t, "v1beta1", v, "an explicit choice of a served version is kept")
}
