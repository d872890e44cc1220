package inventoryapi

import (
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
)

// The inventory reference's own examples, fields=name,extensions/country and
// exclude_fields=name,extensions/country, on every inventory collection (and the O-Cloud): where the
// type has a name the answer is 200, valid against the reference (every exchange of invEnv is checked),
// with fields answering the listed attributes plus those the reference requires, and exclude_fields
// leaving out what the reference allows to leave out (name is required everywhere: it stays). Where the
// type has no name the answer is a 400 that says so.
func TestInventorySelectorsReadAsTheInventoryReferenceWritesThem(t *testing.T) {
	se := newSubsEnv(t)
	ie := se.invEnv
	// A deployment manager: a fulfilled request and its Cluster.
	id := ie.ID("sel")
	ie.CreateDirect(id, nbitest.SimpleSpec("edge-sel"))
	ie.SetStatus(id, map[string]any{
		"provisioningStatus": map[string]any{"provisioningState": "fulfilled", "provisioningMessage": "ready",
			"provisioningUpdateTime": "2026-12-01T10:00:00Z"},
		"provisionedResourceSet": map[string]any{"oCloudNodeClusterId": "cluster-uid-s", "oCloudInfrastructureResourceIds": []any{"netbox-2"}},
	})
	ie.mu.Lock()
	ie.clusters["edge-sel"] = &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
		"metadata": map[string]any{"name": "edge-sel", "namespace": "default", "uid": "cluster-uid-s", "resourceVersion": "1"},
		"spec":     map[string]any{"controlPlaneEndpoint": map[string]any{"host": "10.0.0.1", "port": int64(6443)}},
	}}
	ie.mu.Unlock()
	ie.Eventually(nbitest.NamedPath(id), func(*nbitest.Exchange) bool {
		dms, err := ie.api.dms.List()
		require.NoError(t, err)
		return len(dms) == 1
	}, "the fulfilled request's deployment manager")
	se.subscribe("https://smo.example.com/smo", "(eq,objectType,resource)")

	fields := "?fields=" + url.QueryEscape("name,extensions/country")
	exclude := "?exclude_fields=" + url.QueryEscape("name,extensions/country")
	pool := ie.cfg.ResourcePoolID(1)
	for _, c := range []struct {
		path     string
		required []string // what the reference requires of the type (fields keeps these)
		noName   string   // the type, when it has no name (a 400)
	}{
		{path: invV1 + "/resourcePools", required: []string{"resourcePoolId", "name", "oCloudSiteId", "description"}},
		{path: invV1 + "/resourceTypes", required: []string{"resourceTypeId", "name", "description", "vendor", "model", "version", "resourceKind", "resourceClass", "extensions"}},
		{path: invV1 + "/deploymentManagers", required: []string{"deploymentManagerId", "name", "description", "oCloudId", "serviceUri", "supportedLocations", "capabilities", "capacity"}},
		{path: invV1 + "/oCloudSites", required: []string{"oCloudSiteId", "globalLocationId", "name", "description", "resourcePools", "extensions"}},
		{path: invV1 + "/locations", required: []string{"globalLocationId", "name", "description", "oCloudSiteIds", "extensions"}},
		{path: invV1 + "/resourcePools/" + pool + "/resources", noName: "Resource"},
		{path: invV1 + "/alarmDictionaries", noName: "AlarmDictionary"}, // a dictionary has no name

		{path: invV1 + "/subscriptions", noName: "Subscription"},
	} {
		for _, sel := range []string{fields, exclude} {
			x := ie.get(c.path + sel)
			if c.noName != "" {
				require.Equal(t, http.StatusBadRequest, x.Code(), c.path+sel)
				require.Contains(t, x.Object(t)["detail"], `"name" is not an attribute of `+c.noName, c.path+sel)
				continue
			}
			require.Equal(t, http.StatusOK, x.Code(), "%s: %s", c.path+sel, x.Body)
			full := ie.get(c.path).Items(t)
			items := x.Items(t)
			require.Len(t, items, len(full), c.path)
			for i, item := range items {
				require.Equal(t, full[i]["name"], item["name"], "%s: name is required: it stays", c.path+sel)
				if sel == fields {
					for k := range item {
						require.True(t, k == "name" || k == "extensions" || slices.Contains(c.required, k),
							"%s: %q is neither listed nor required", c.path+sel, k)
					}
					for _, k := range c.required {
						require.Contains(t, item, k, "%s: required", c.path+sel)
					}
					if ext, ok := item["extensions"].(map[string]any); ok {
						for k := range ext {
							require.Equal(t, "country", k, "%s: only the listed member of extensions", c.path+sel)
						}
					}
				} else {
					want := map[string]any{}
					for k, v := range full[i] {
						want[k] = v
					}
					require.Equal(t, len(want), len(item), "%s: nothing else left out", c.path+sel)
				}
			}
		}
	}
	// The O-Cloud, one object: the same reading.
	o := ie.get(invV1 + fields).Object(t)
	require.ElementsMatch(t, []string{"oCloudId", "globalCloudId", "name", "description", "serviceUri", "extensions"}, keys(o))
	require.Empty(t, o["extensions"], "the O-Cloud's extensions have no country: only what is listed")
	require.Contains(t, ie.get(invV1+exclude).Object(t), "name")

	// A simple attribute inside extensions, and an optional simple attribute, are left out when excluded,
	// and answered alone (with what is required) when listed.
	res := invV1 + "/resourcePools/" + pool + "/resources"
	for _, r := range ie.get(res + "?exclude_fields=extensions/status").Items(t) {
		require.NotContains(t, r["extensions"], "status")
		require.Contains(t, r["extensions"], "netboxId")
	}
	for _, r := range ie.get(res + "?fields=extensions/status,resourceTypeId").Items(t) {
		require.Equal(t, []string{"status"}, keys(r["extensions"].(map[string]any)))
		require.Contains(t, r, "tags", "required")
	}
	// Both together, as the inventory reference allows: exclude_fields wins.
	for _, r := range ie.get(res + "?fields=extensions/status,extensions/netboxId&exclude_fields=extensions/status").Items(t) {
		require.Equal(t, []string{"netboxId"}, keys(r["extensions"].(map[string]any)))
	}
	subs := se.get(invV1 + "/subscriptions?exclude_fields=filter").Items(t)
	require.Len(t, subs, 1)
	require.NotContains(t, subs[0], "filter", "optional: left out")
	require.Contains(t, subs[0], "callback")
	subs = se.get(invV1 + "/subscriptions?fields=callback").Items(t)
	require.ElementsMatch(t, []string{"subscriptionId", "callback"}, keys(subs[0]), "consumerSubscriptionId and filter are optional")
	// A path the type does not have is still a 400.
	x := ie.get(invV1 + "/resourcePools?fields=nme")
	require.Equal(t, http.StatusBadRequest, x.Code())
	require.Contains(t, x.Object(t)["detail"], `"nme" is not an attribute of ResourcePool`)
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
