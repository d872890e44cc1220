package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/o2ims-operator/o2ims-operator/subscriptions/smo"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
)

const invBase = "/o2ims-infrastructureInventory/v1"

// The operator binary with the shipped RBAC: a subscription made through the NBI (a ConfigMap), a
// request with a host through the NBI to FULFILLED, its infrastructureResourceIds (the CR's, read with
// kubectl, the same as the NBI's) resolving to inventory resources whose extensions name it, the claim
// and the release notified to the SMO.
func TestInventoryJoinAndNotificationsThroughTheBinary(t *testing.T) {
	smoRecv := smo.New()
	defer smoRecv.Close()
	code, _, body := call(t, http.MethodPost, operator.NBIURL+invBase+"/subscriptions",
		map[string]any{"callback": smoRecv.URL(), "filter": "(eq,objectType,resource)"})
	require.Equal(t, http.StatusCreated, code, string(body))
	var sub map[string]any
	require.NoError(t, json.Unmarshal(body, &sub))
	defer call(t, http.MethodDelete, operator.NBIURL+invBase+"/subscriptions/"+sub["subscriptionId"].(string), nil)
	// The replica that created it leads: it delivers to it at once.

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
	// One id everywhere: the CR, read as FOCOM reads it (the API server, here with the real kubectl),
	// records the id the NBI answers; the host's identity stays in status.extensions.hosts.
	kubectl := func(jsonpath string) string {
		out, err := st.KubectlRun(context.Background(), "get", "provisioningrequests.o2ims.provisioning.oran.org", "e2e-inv",
			"-o", "jsonpath="+jsonpath)
		require.NoError(t, err, out)
		lines := strings.Split(strings.TrimSpace(out), "\n") // kubectl may warn before its answer
		return strings.TrimSpace(lines[len(lines)-1])
	}
	assert.Equal(t, rid, kubectl("{.status.provisionedResourceSet.oCloudInfrastructureResourceIds[*]}"), "the CR's id is the NBI's")
	assert.Regexp(t, `^netbox-\d+$`, kubectl("{.status.extensions.hosts[*].id}"))

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

// SIGKILL between an administrator's change in NetBox and its delivery: the restarted operator
// notifies it (the subscription's ConfigMap holds what the SMO was last told).
func TestAChangeUndeliveredAtSIGKILLIsNotifiedAfterRestart(t *testing.T) {
	ctx := context.Background()
	smoRecv := smo.New()
	defer smoRecv.Close()
	code, _, body := call(t, http.MethodPost, operator.NBIURL+invBase+"/subscriptions",
		map[string]any{"callback": smoRecv.URL(), "filter": "(eq,postObjectState/extensions/status,offline)"})
	require.Equal(t, http.StatusCreated, code, string(body))
	var sub map[string]any
	require.NoError(t, json.Unmarshal(body, &sub))
	defer func() {
		call(t, http.MethodDelete, operator.NBIURL+invBase+"/subscriptions/"+sub["subscriptionId"].(string), nil)
	}()
	eventually(t, 10*time.Second, func() bool {
		cm, err := st.API.AdminClientset().CoreV1().ConfigMaps("o2ims").Get(ctx,
			"o2ims-inventory-subscription-"+sub["subscriptionId"].(string), metav1.GetOptions{})
		return err == nil && len(cm.BinaryData["progress.json.gz"]) > 0
	}, "the subscription's progress was never written")

	var free int32
	for _, d := range st.NetBox.Devices() {
		if d.Status == "staged" {
			free = d.ID
		}
	}
	require.NotZero(t, free)
	smoRecv.Fail(http.StatusServiceUnavailable)
	require.NoError(t, st.NetBox.SetStatus(free, "offline"))
	defer func() { _ = st.NetBox.SetStatus(free, "staged") }()
	eventually(t, 40*time.Second, func() bool { return smoRecv.Attempts() > 0 }, "the change was never tried (refresh interval 10 s)")

	operator.Kill()
	// Restarted as it was started (TestMain): with no selector it would handle the private requests of
	// every later test's own operator too.
	restarted, err := st.StartOperator(ctx, map[string]string{"PROVISIONING_REQUEST_SELECTOR": "!" + privateLabel})
	require.NoError(t, err)
	operator = restarted
	smoRecv.Fail(0)
	eventually(t, 60*time.Second, func() bool { return len(smoRecv.Notifications()) > 0 }, "never delivered after the restart")
	post := smoRecv.Notifications()[0].Body["postObjectState"].(map[string]any)
	assert.Equal(t, "netbox-"+strconv.Itoa(int(free)), post["extensions"].(map[string]any)["hostIdentity"])
}

// A NetBox token that cannot read sites (NetBox answers, the claims work): the operator is ready, and
// /readyz says the inventory cannot list and why; once NetBox lets it list, the line goes, no restart.
func TestReadyzSaysWhyTheInventoryCannotList(t *testing.T) {
	nb := netboxsim.New(netboxsim.Options{Tokens: []string{st.NetBoxToken()}})
	for _, f := range netboxsim.StandardFields() {
		nb.AddCustomField(f)
	}
	nb.InjectFault(netboxsim.Fault{Method: http.MethodGet, Route: netboxsim.RouteSites, Status: http.StatusForbidden, Count: 1 << 30,
		Body: `{"detail":"You do not have permission to perform this action."}`})
	srv := nb.Start()
	defer nb.Close()
	p := launch(t, launchOptions{Name: "cannot-list", NetBoxURL: srv.URL, Env: map[string]string{"INVENTORY_REFRESH_INTERVAL": "1"}})
	var body string
	eventually(t, 60*time.Second, func() bool {
		var c int
		c, body = p.get("/readyz")
		return c == http.StatusOK && strings.Contains(body, "degraded: inventory:")
	}, "/readyz never said the inventory cannot list: %s", lazy(func() string { return body }))
	assert.Regexp(t, `^ok\ndegraded: inventory: cannot list NetBox since \S+Z: listing sites: .*\(HTTP 403\).*; the inventory API answers 503 until one succeeds \(no view yet\)\n$`, body)
	code, _, b := call(t, http.MethodGet, p.NBIURL+invBase+"/resourcePools", nil)
	assert.Equal(t, http.StatusServiceUnavailable, code, string(b))

	nb.ClearFaults()
	eventually(t, 30*time.Second, func() bool { _, body = p.get("/readyz"); return body == "ok\n" },
		"the line stayed once the inventory could list: %s", lazy(func() string { return body }))
	code, _, b = call(t, http.MethodGet, p.NBIURL+invBase+"/resourcePools", nil)
	assert.Equal(t, http.StatusOK, code, string(b))
}
