package inventoryapi

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/uuid"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/inventory"
	"github.com/o2ims-operator/o2ims-operator/nbi/provisioning"
	"github.com/o2ims-operator/o2ims-operator/netbox"
	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
)

// The join: a request's infrastructureResourceIds (the CR records netbox-<id>) answer as inventory
// resource ids, each resolves to a resource whose extensions name the request, and the fulfilled
// request's Cluster is a deployment manager holding those hosts. The claim shows in the view at once,
// through the NetBox client's write observer, with no refresh.
func TestInfrastructureResourceIdsResolveToResourcesNamingTheRequest(t *testing.T) {
	ie := newInvEnv(t, seedSix)
	ctx := context.Background()
	id := ie.ID("joined")
	created := ie.CreateDirect(id, nbitest.SimpleSpec("edge-joined"))
	uid := string(created.GetUID())
	ie.WaitCached(id)

	refreshes := ie.sim.Calls(http.MethodGet, "devices")
	for _, dev := range []int32{2, 3} {
		d, err := ie.nb.Claims.GetDevice(ctx, dev)
		require.NoError(t, err)
		res, err := ie.nb.Claims.Claim(ctx, d, uid)
		require.NoError(t, err)
		require.Equal(t, netbox.Claimed, res)
	}
	ie.SetStatus(id, map[string]any{
		"provisioningStatus": map[string]any{"provisioningState": "fulfilled", "provisioningMessage": "ready",
			"provisioningUpdateTime": "2026-12-01T10:00:00Z"},
		"provisionedResourceSet": map[string]any{"oCloudNodeClusterId": "cluster-uid-1",
			"oCloudInfrastructureResourceIds": []any{"netbox-2", "netbox-3"}},
	})
	ie.mu.Lock()
	ie.clusters["edge-joined"] = &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
		"metadata": map[string]any{"name": "edge-joined", "namespace": "default", "uid": "cluster-uid-1"},
		"spec":     map[string]any{"controlPlaneEndpoint": map[string]any{"host": "10.1.2.3", "port": int64(6443)}},
	}}
	ie.mu.Unlock()

	x := ie.Eventually(nbitest.NamedPath(id), func(x *nbitest.Exchange) bool {
		return x.Code() == http.StatusOK && info(t, x).Status.ProvisioningPhase == provisioning.PhaseFulfilled
	}, "fulfilled")
	ids := info(t, x).ProvisionedResourceSet.InfrastructureResourceIDs
	require.Equal(t, []string{ie.cfg.ResourceID(2), ie.cfg.ResourceID(3)}, ids, "mapped when answering")
	// The provisioning list answers the same ids, and filters on them.
	l := nbitest.Decode[provisioning.ProvisioningRequestList](t, ie.Do(http.MethodGet, nbitest.CollectionPath+"?filter=(eq,provisionedResourceSet/infrastructureResourceIds,"+ids[0]+")", nil))
	require.Len(t, l.Items, 1)

	pool := ie.cfg.ResourcePoolID(1)
	for _, rid := range ids {
		r := ie.get(invV1 + "/resourcePools/" + pool + "/resources/" + rid)
		require.Equal(t, http.StatusOK, r.Code(), string(r.Body))
		ext := r.Object(t)["extensions"].(map[string]any)
		require.Equal(t, "active", ext["status"])
		require.Equal(t, uid, ext["provisioningRequestReference"])
		require.Equal(t, id, ext["provisioningRequestId"])
	}
	require.Equal(t, refreshes, ie.sim.Calls(http.MethodGet, "devices"), "the claims showed without any listing")

	dms := ie.get(invV1 + "/deploymentManagers").Items(t)
	require.Len(t, dms, 1)
	dm := dms[0]
	require.Equal(t, ie.cfg.DeploymentManagerID("cluster-uid-1"), dm["deploymentManagerId"])
	require.Equal(t, "https://10.1.2.3:6443", dm["serviceUri"])
	require.Equal(t, ie.cfg.OCloudID.String(), dm["oCloudId"])
	require.EqualValues(t, 2, dm["capacity"].(map[string]any)["hosts"])
	require.Equal(t, []any{ids[0], ids[1]}, dm["extensions"].(map[string]any)["infrastructureResourceIds"])
	got := ie.get(invV1 + "/deploymentManagers/" + dm["deploymentManagerId"].(string))
	require.Equal(t, http.StatusOK, got.Code())
	require.Equal(t, dm, got.Object(t))

	// Release and quarantine show at once too.
	res, err := ie.nb.Claims.Release(ctx, 3, uid)
	require.NoError(t, err)
	require.Equal(t, netbox.Released, res)
	d, err := ie.nb.Claims.GetDevice(ctx, 4)
	require.NoError(t, err)
	require.NoError(t, ie.nb.Claims.Quarantine(ctx, d, netbox.ReasonCredentialsMissing, "no BMC credentials Secret"))
	r := ie.get(invV1 + "/resourcePools/" + pool + "/resources/" + ie.cfg.ResourceID(3)).Object(t)
	require.Equal(t, "staged", r["extensions"].(map[string]any)["status"])
	require.NotContains(t, r["extensions"], "provisioningRequestReference")
	r = ie.get(invV1 + "/resourcePools/" + pool + "/resources/" + ie.cfg.ResourceID(4)).Object(t)
	require.Equal(t, "failed", r["extensions"].(map[string]any)["status"])
	require.Equal(t, refreshes, ie.sim.Calls(http.MethodGet, "devices"))
}

// Ids are derived, not drawn: another view of the same NetBox with the same O-Cloud id (another
// replica, a restart) answers byte-identical objects; another O-Cloud id gives other ids.
func TestInventoryIdsAreStableAcrossViews(t *testing.T) {
	ie := newInvEnv(t, seedSix)
	other := func(cfg inventory.Config) *inventory.Snapshot {
		v := inventory.NewView(cfg, nil)
		r, err := inventory.NewRefresher(v, ie.nb.Search, nil, nil)
		require.NoError(t, err)
		require.NoError(t, r.Refresh(context.Background(), true))
		return v.Snapshot()
	}
	mine := ie.view.Snapshot()
	same := other(ie.cfg)
	require.Equal(t, entryJSON(mine.Pools), entryJSON(same.Pools))
	require.Equal(t, entryJSON(mine.Types), entryJSON(same.Types))
	for pool, list := range mine.Resources {
		require.Equal(t, entryJSON(list), entryJSON(same.Resources[pool]))
	}
	cfg := ie.cfg
	cfg.OCloudID = uuid.MustParse("262c8f17-52b5-4614-9e56-812ae21fa8a7")
	diff := other(cfg)
	require.Len(t, diff.Pools, 2)
	for i := range diff.Pools {
		require.NotEqual(t, mine.Pools[i].ID, diff.Pools[i].ID)
	}
}

func entryJSON(entries []*inventory.Entry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = string(e.JSON)
	}
	return out
}

// A NetBox token that cannot read sites: every refresh fails, so the inventory has no view. The
// provisioning API still answers a request's resource ids — computed, never looked up, whether the CR
// records them as resource ids or (not rewritten yet) as netbox-<id> — the refresher says why the
// inventory cannot list (the operator's /readyz line), and once a refresh succeeds each id resolves.
func TestResourceIdsAnswerWhileTheInventoryCannotList(t *testing.T) {
	ie := newInvEnv(t, seedSix)
	ctx := context.Background()
	id := ie.ID("cannotlist")
	ie.CreateDirect(id, nbitest.SimpleSpec("edge-cannotlist"))
	ie.WaitCached(id)
	want := []string{ie.cfg.ResourceID(2), ie.cfg.ResourceID(3)}
	ie.SetStatus(id, map[string]any{
		"provisioningStatus": map[string]any{"provisioningState": "fulfilled", "provisioningMessage": "ready",
			"provisioningUpdateTime": "2026-12-01T10:00:00Z"},
		"provisionedResourceSet": map[string]any{"oCloudNodeClusterId": "cluster-uid-1",
			"oCloudInfrastructureResourceIds": []any{want[0], "netbox-3"}},
	})

	ie.sim.InjectFault(netboxsim.Fault{Method: http.MethodGet, Route: netboxsim.RouteSites, Status: http.StatusForbidden, Count: 1000,
		Body: `{"detail":"You do not have permission to perform this action."}`})
	view := inventory.NewView(ie.cfg, nil)
	refresher, err := inventory.NewRefresher(view, ie.nb.Search, nil, nil)
	require.NoError(t, err)
	require.Empty(t, refresher.Degraded(), "nothing to say before a refresh")
	require.Error(t, refresher.Refresh(ctx, true))
	why := refresher.Degraded()
	require.Contains(t, why, "cannot list NetBox since ")
	require.Contains(t, why, "listing sites: ")
	require.Contains(t, why, "403")
	require.Contains(t, why, "the inventory API answers 503 until one succeeds (no view yet)")
	require.NotContains(t, why, invToken)

	fresh := serveView(t, ie, view)
	x := fresh.Eventually(nbitest.NamedPath(id), func(x *nbitest.Exchange) bool {
		return x.Code() == http.StatusOK && info(t, x).Status.ProvisioningPhase == provisioning.PhaseFulfilled
	}, "fulfilled")
	require.Equal(t, want, info(t, x).ProvisionedResourceSet.InfrastructureResourceIDs, "computed without a view")
	pool := invV1 + "/resourcePools/" + ie.cfg.ResourcePoolID(1) + "/resources/"
	require.Equal(t, http.StatusServiceUnavailable, fresh.get(pool+want[0]).Code(), "no view: no resource yet")

	ie.sim.ClearFaults()
	require.NoError(t, refresher.Refresh(ctx, true))
	require.Empty(t, refresher.Degraded(), "said no more once a refresh succeeds")
	for _, rid := range want {
		r := fresh.get(pool + rid)
		require.Equal(t, http.StatusOK, r.Code(), string(r.Body))
	}

	ie.sim.InjectFault(netboxsim.Fault{Method: http.MethodGet, Route: netboxsim.RouteDeviceTypes, Status: http.StatusForbidden, Count: 1000})
	require.Error(t, refresher.Refresh(ctx, false))
	require.Contains(t, refresher.Degraded(), "the inventory API answers its view of ")
}

// NetBox down is said once, by the NetBox client's own /readyz line: the inventory's line is for what
// only it meets (a listing refused).
func TestTheInventoryLineLeavesAnOutageToNetBox(t *testing.T) {
	ie := newInvEnv(t, seedSix)
	refresher, err := inventory.NewRefresher(inventory.NewView(ie.cfg, nil), ie.nb.Search, nil, nil)
	require.NoError(t, err)
	ie.sim.InjectFault(netboxsim.Fault{Method: http.MethodGet, Route: netboxsim.RouteSites, Status: http.StatusBadGateway, Count: 1000})
	require.Error(t, refresher.Refresh(context.Background(), true))
	require.Empty(t, refresher.Degraded())
}

// info decodes an answer of the provisioning API.
func info(t testing.TB, x *nbitest.Exchange) provisioning.ProvisioningRequestInfo {
	t.Helper()
	return nbitest.Decode[provisioning.ProvisioningRequestInfo](t, x)
}
