package handlers

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/framework"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// The Cluster a package renders is found as Porch reads a package (YAML files, local-config skipped), by
// group, kind, name and namespace; the live Cluster carries it when it holds every field it sets.
func TestTheRenderedClusterIsFoundAndComparedAsTheAPIServerHoldsIt(t *testing.T) {
	const kptfile = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: edge-1\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n"
	local := "apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata:\n  name: edge-1\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\nspec:\n  paused: true\n"
	other := "apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata:\n  name: edge-2\nspec:\n  paused: true\n"
	elsewhere := "apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata:\n  name: edge-1\n  namespace: other\nspec:\n  paused: true\n"
	wrongGroup := "apiVersion: example.com/v1\nkind: Cluster\nmetadata:\n  name: edge-1\nspec:\n  paused: true\n"
	cluster := "apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata:\n  name: edge-1\n  namespace: default\n" +
		"spec:\n  clusterNetwork:\n    apiServerPort: 6443\n    serviceDomain: a.local\n    pods:\n      cidrBlocks: [192.168.0.0/16]\n  paused: false\n  topology: {}\n"
	resources := map[string]any{
		"Kptfile":   kptfile + "---\n" + cluster, // never parsed: not a .yaml file
		"a.yaml":    local + "---\n" + other,
		"b.yml":     elsewhere + "\n---\n" + wrongGroup,
		"c.YAML":    "kind: ConfigMap\n---\n" + cluster,
		"d.yaml":    "{not yaml",
		"README.md": "# edge-1\n",
	}
	cl := findCluster(resources, "edge-1", "default")
	require.NotNil(t, cl)
	assert.Equal(t, "a.local", nested(cl, "spec", "clusterNetwork", "serviceDomain"))
	assert.Equal(t, int64(6443), nested(cl, "spec", "clusterNetwork", "apiServerPort"), "integers decode as the API machinery's")
	assert.Nil(t, findCluster(map[string]any{"a.yaml": local, "Kptfile": cluster}, "edge-1", "default"))

	live := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"clusterNetwork": map[string]any{"apiServerPort": int64(6443), "serviceDomain": "a.local",
			"pods": map[string]any{"cidrBlocks": []any{"192.168.0.0/16"}}},
		"controlPlaneEndpoint": map[string]any{"host": "10.0.0.1", "port": int64(6443)}, // set by CAPI, not rendered
	}}}
	assert.Empty(t, notCarried(cl, live), "zero values are carried by an absent field; extra live fields are CAPI's")
	live.Object["spec"].(map[string]any)["clusterNetwork"].(map[string]any)["serviceDomain"] = "b.local"
	live.Object["spec"].(map[string]any)["clusterNetwork"].(map[string]any)["pods"] = map[string]any{"cidrBlocks": []any{"192.168.0.0/16", "10.0.0.0/8"}}
	assert.Equal(t, "spec.clusterNetwork.pods.cidrBlocks, spec.clusterNetwork.serviceDomain", notCarried(cl, live))
	delete(live.Object, "spec")
	assert.Equal(t, "spec", notCarried(cl, live))
}

// A rendered Cluster of another version than the watched one is compared with the live Cluster read at
// that version, and the watched (cached) Cluster counts only once it holds the generation compared.
func TestARenderedClusterOfAnotherVersionIsComparedAtThatVersion(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	ctx := context.Background()
	clients, err := framework.NewClients(srv.AdminConfig(), framework.DefaultClientOptions())
	require.NoError(t, err)
	cfg, err := ConfigFromEnv(func(string) string { return "" })
	require.NoError(t, err)
	h := New(cfg, "v1beta2", clients, nil, prometheus.NewRegistry())
	gvr := external.ClusterGVR("v1beta2")
	cl := &unstructured.Unstructured{Object: map[string]any{"apiVersion": gvr.GroupVersion().String(), "kind": external.ClusterKind,
		"spec": map[string]any{"clusterNetwork": map[string]any{"serviceDomain": "a.local", "apiServerPort": int64(6443)}}}}
	cl.SetName("edge-versions-1")
	cl.SetNamespace("default")
	cached, err := srv.AdminDynamic().Resource(gvr).Namespace("default").Create(ctx, cl, metav1.CreateOptions{})
	require.NoError(t, err)
	rendered := findCluster(map[string]any{"cluster.yaml": "apiVersion: cluster.x-k8s.io/v1beta1\nkind: Cluster\nmetadata:\n  name: edge-versions-1\n" +
		"spec:\n  clusterNetwork:\n    serviceDomain: a.local\n    apiServerPort: 6443\n"}, "edge-versions-1", "default")
	require.NotNil(t, rendered)
	c := &framework.Cause{Object: cached, Logger: zaptest.NewLogger(t)}

	differs, behind, err := h.porch.clusterCarries(ctx, c, rendered, cached)
	require.NoError(t, err)
	assert.Empty(t, differs)
	assert.Zero(t, behind)

	stale := cached.DeepCopy()
	stale.SetGeneration(cached.GetGeneration() - 1)
	_, behind, err = h.porch.clusterCarries(ctx, c, rendered, stale)
	require.NoError(t, err)
	assert.Equal(t, cached.GetGeneration(), behind, "a cache behind the generation compared is not believed")

	require.NoError(t, unstructured.SetNestedField(rendered.Object, "b.local", "spec", "clusterNetwork", "serviceDomain"))
	differs, _, err = h.porch.clusterCarries(ctx, c, rendered, cached)
	require.NoError(t, err)
	assert.Equal(t, "spec.clusterNetwork.serviceDomain", differs)
}
