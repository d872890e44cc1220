package handlers

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/world"
)

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
	done := waitState(t, srv, "old-capi-1", v1alpha1.StateFulfilled, 60*time.Second)
	cl, err := srv.AdminDynamic().Resource(external.ClusterGVR("v1beta1")).Namespace("default").Get(ctx, "edge-old-1", metav1.GetOptions{})
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
