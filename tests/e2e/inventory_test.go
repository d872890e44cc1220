package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/nbi/inventory/smo"
)

const invBase = "/o2ims-infrastructureInventory/v1"

// The operator binary with the shipped RBAC: a subscription made through the NBI (a ConfigMap), a
// request with a host through the NBI to FULFILLED, its infrastructureResourceIds resolving to
// inventory resources whose extensions name it, the claim and the release notified to the SMO.
func TestInventoryJoinAndNotificationsThroughTheBinary(t *testing.T) {
	smoRecv := smo.New()
	defer smoRecv.Close()
	code, _, body := call(t, http.MethodPost, operator.NBIURL+invBase+"/subscriptions",
		map[string]any{"callback": smoRecv.URL(), "filter": "(eq,objectType,resource)"})
	require.Equal(t, http.StatusCreated, code, string(body))
	var sub map[string]any
	require.NoError(t, json.Unmarshal(body, &sub))
	defer call(t, http.MethodDelete, operator.NBIURL+invBase+"/subscriptions/"+sub["subscriptionId"].(string), nil)
	time.Sleep(6 * time.Second) // the leader's subscription poll (5 s) has seen it

	request := map[string]any{
		"provisioningRequestId": "e2e-inv", "name": "inventory", "description": "the join",
		"templateName": "nephio-workload-cluster", "templateVersion": "v3.0.0",
		"templateParameters": map[string]any{"clusterName": "edge-e2e-inv",
			"hosts": []any{map[string]any{"role": "control-plane", "count": 1, "selector": map[string]any{"cpu_cores": 32}}}},
	}
	code, _, body = call(t, http.MethodPost, operator.NBIURL+nbiBase, request)
	require.Equal(t, http.StatusCreated, code, string(body))
	var got info
	eventually(t, 60*time.Second, func() bool {
		_, _, b := call(t, http.MethodGet, operator.NBIURL+nbiBase+"/e2e-inv", nil)
		_ = json.Unmarshal(b, &got)
		return got.Status.Phase == "FULFILLED" || got.Status.Phase == "FAILED"
	}, "never fulfilled: %+v", &got)
	require.Equal(t, "FULFILLED", got.Status.Phase, got.Status.Message)
	require.Len(t, got.Set.Infra, 1)
	rid := got.Set.Infra[0]
	require.False(t, strings.HasPrefix(rid, "netbox-"), "answered as an inventory resource id: %s", rid)

	_, _, body = call(t, http.MethodGet, operator.NBIURL+invBase+"/resourcePools", nil)
	var pools []map[string]any
	require.NoError(t, json.Unmarshal(body, &pools), string(body))
	found := false
	for _, p := range pools {
		c, _, b := call(t, http.MethodGet, operator.NBIURL+invBase+"/resourcePools/"+p["resourcePoolId"].(string)+"/resources/"+rid, nil)
		if c != http.StatusOK {
			continue
		}
		var r map[string]any
		require.NoError(t, json.Unmarshal(b, &r))
		ext := r["extensions"].(map[string]any)
		assert.Equal(t, "e2e-inv", ext["provisioningRequestId"])
		assert.Equal(t, got.Reference, ext["provisioningRequestReference"])
		assert.Equal(t, "active", ext["status"])
		assert.NotContains(t, string(b), "redfish", "no BMC address")
		found = true
	}
	require.True(t, found, "resource %s is in no pool", rid)

	statusOf := func(n smo.Notification) string {
		post, _ := n.Body["postObjectState"].(map[string]any)
		if post == nil || post["resourceId"] != rid {
			return ""
		}
		return post["extensions"].(map[string]any)["status"].(string)
	}
	seen := func(status string) func() bool {
		return func() bool {
			for _, n := range smoRecv.Notifications() {
				if statusOf(n) == status {
					return true
				}
			}
			return false
		}
	}
	eventually(t, 30*time.Second, seen("active"), "the claim was never notified")

	code, _, _ = call(t, http.MethodDelete, operator.NBIURL+nbiBase+"/e2e-inv", nil)
	require.Equal(t, http.StatusAccepted, code)
	eventually(t, 60*time.Second, func() bool {
		c, _, _ := call(t, http.MethodGet, operator.NBIURL+nbiBase+"/e2e-inv", nil)
		return c == http.StatusNotFound
	}, "never gone")
	eventually(t, 30*time.Second, seen("staged"), "the release was never notified")

	log, _ := os.ReadFile(operator.Log)
	assert.NotContains(t, strings.ToLower(string(log)), "forbidden", "the shipped roles lacked a permission")
}
