package inventoryapi

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/inventory"
	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
)

// The deployment managers are asked for on every notifier poll: an unchanged request and Cluster give
// the entry made before (not encoded again), and a new version of either gives a new entry that says
// what changed, in the API and to the notifier.
func TestDeploymentManagersAreMadeAgainOnlyWhenTheirRequestOrClusterChanges(t *testing.T) {
	ie := newInvEnv(t, seedSix)
	id := ie.ID("memo")
	ie.CreateDirect(id, nbitest.SimpleSpec("edge-memo"))
	fulfilled := func(ids ...any) map[string]any {
		return map[string]any{
			"provisioningStatus": map[string]any{"provisioningState": "fulfilled", "provisioningMessage": "ready",
				"provisioningUpdateTime": "2026-12-01T10:00:00Z"},
			"provisionedResourceSet": map[string]any{"oCloudNodeClusterId": "cluster-uid-m", "oCloudInfrastructureResourceIds": ids},
		}
	}
	ie.SetStatus(id, fulfilled("netbox-2"))
	setCluster := func(rv, host string) {
		ie.mu.Lock()
		defer ie.mu.Unlock()
		ie.clusters["edge-memo"] = &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
			"metadata": map[string]any{"name": "edge-memo", "namespace": "default", "uid": "cluster-uid-m", "resourceVersion": rv},
			"spec":     map[string]any{"controlPlaneEndpoint": map[string]any{"host": host, "port": int64(6443)}},
		}}
	}
	setCluster("10", "10.0.0.1")
	var first []*inventory.Entry
	ie.Eventually(nbitest.NamedPath(id), func(*nbitest.Exchange) bool {
		dms, err := ie.api.dms.List()
		require.NoError(t, err)
		first = dms
		return len(dms) == 1
	}, "the fulfilled request's deployment manager")

	again, err := ie.api.dms.List()
	require.NoError(t, err)
	require.Len(t, again, 1)
	assert.Same(t, first[0], again[0], "nothing changed: the same entry, not encoded again")

	setCluster("11", "10.0.0.2")
	moved, err := ie.api.dms.List()
	require.NoError(t, err)
	require.Len(t, moved, 1)
	assert.NotSame(t, first[0], moved[0])
	assert.Equal(t, "https://10.0.0.2:6443", moved[0].Attrs["serviceUri"], "a new Cluster version is read")
	dm := ie.get(invV1 + "/deploymentManagers/" + moved[0].ID).Object(t)
	assert.Equal(t, "https://10.0.0.2:6443", dm["serviceUri"])

	ie.SetStatus(id, fulfilled("netbox-2", "netbox-3"))
	ie.Eventually(invV1+"/deploymentManagers/"+moved[0].ID, func(x *nbitest.Exchange) bool {
		return x.Code() == http.StatusOK && x.Object(t)["capacity"].(map[string]any)["hosts"] == float64(2)
	}, "a new request version is read")
}

// A Cluster with no spec yet (or one that is not an object) is a deployment manager without a
// serviceUri, not a panic of the notifier's poll.
func TestADeploymentManagerOfAClusterWithoutSpecHasNoEndpoint(t *testing.T) {
	d := &DeploymentManagers{}
	pr := nbitest.PRObject("edge-nospec", map[string]any{"templateParameters": map[string]any{"clusterName": "edge-nospec"}}, nil)
	for _, spec := range []any{nil, "not an object"} {
		cl := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
			"metadata": map[string]any{"name": "edge-nospec", "namespace": "default", "uid": "cluster-uid-n"}}}
		if spec != nil {
			cl.Object["spec"] = spec
		}
		e := d.entry(pr, cl)
		assert.Equal(t, "", e.Attrs["serviceUri"])
		assert.Equal(t, "edge-nospec", e.Attrs["name"])
	}
}
