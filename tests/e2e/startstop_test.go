package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

// NetBox down is degraded, never down. NetBox answers 503 from before the start for longer than every
// bound the operator puts on it (the startup check's attempt, NETBOX_TIMEOUT=1 here; the background check's
// backoff cap, 15 s; the old startup patience was 2 minutes, after which the process exited 1 and a
// Deployment crash-looped): meanwhile the operator is ready and alive, a request without hosts is
// fulfilled, a request with hosts waits saying since when NetBox is unreachable, /readyz and
// o2ims_netbox_usable say NetBox is down, the NBI answers and the inventory refuses with 503 and
// Retry-After. Then NetBox answers and the request with hosts is fulfilled by the same process.
func TestNetBoxDownAtStartIsDegradedNeverDown(t *testing.T) {
	ctx := context.Background()
	const name, outageFor = "netbox-down", 25 * time.Second
	nb := netboxsim.New(netboxsim.Options{Tokens: []string{st.NetBoxToken()}})
	for _, f := range netboxsim.StandardFields() {
		nb.AddCustomField(f)
	}
	nb.AddCustomField(netboxsim.CustomField{Name: "cpu_cores", Type: "integer", FilterLogic: netboxsim.FilterExact})
	// An id of its own: the shared simulator's hosts (and their BareMetalHosts, netbox-<id>) are 1…6.
	const device = 9101
	nb.AddDevice(netboxsim.Device{ID: device, Name: "outage-host", Status: "staged", Site: "edge-lab", Custom: map[string]any{
		"o2ims_managed": true, "o2ims_bmc_address": "redfish-virtualmedia+https://10.30.0.1/redfish/v1/Systems/1",
		"o2ims_boot_mac": "52:54:00:bb:00:01", "cpu_cores": 64,
	}})
	secrets := st.API.AdminClientset().CoreV1().Secrets(stack.CredentialsNamespace)
	_, err := secrets.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bmc-outage-host", Labels: map[string]string{fmt.Sprintf("o2ims.provisioning.oran.org/netbox-device-%d", device): "true"}},
		Data:       map[string][]byte{"username": []byte("admin"), "password": []byte("lab-password")},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = secrets.Delete(context.Background(), "bmc-outage-host", metav1.DeleteOptions{}) })
	nb.SetOutage(http.StatusServiceUnavailable)
	srv := nb.Start()
	defer nb.Close()

	started := time.Now()
	p := launch(t, launchOptions{Name: name, NetBoxURL: srv.URL, Env: map[string]string{"NETBOX_TIMEOUT": "1", "CREATION_TIMEOUT": "900"}})
	eventually(t, 60*time.Second, func() bool { c, _ := p.get("/readyz"); return c == http.StatusOK }, "never ready while NetBox is down:\n%s", lazy(p.log))
	_, body := p.get("/readyz")
	assert.Regexp(t, `^ok\ndegraded: netbox: NetBox unreachable since \S+Z \(HTTP 503\); requests with hosts wait\n$`, body)

	dyn := st.API.AdminDynamic().Resource(v1alpha1.GVR)
	create := func(id string, hosts []any) {
		params := map[string]any{"clusterName": id}
		if hosts != nil {
			params["hosts"] = hosts
		}
		_, err := dyn.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "o2ims.provisioning.oran.org/v1alpha1", "kind": "ProvisioningRequest",
			"metadata": map[string]any{"name": id, "labels": map[string]any{privateLabel: name}},
			"spec": map[string]any{"name": id, "description": "", "templateName": "nephio-workload-cluster", "templateVersion": "v3.0.0",
				"templateParameters": params},
		}}, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = dyn.Delete(context.Background(), id, metav1.DeleteOptions{}) })
	}
	status := func(id string) v1alpha1.ProvisioningStatus {
		u, err := dyn.Get(ctx, id, metav1.GetOptions{})
		if err != nil {
			return v1alpha1.ProvisioningStatus{Message: err.Error()}
		}
		return v1alpha1.StatusOf(u)
	}
	create("e2e-nbdown-plain", nil)
	create("e2e-nbdown-hosts", []any{map[string]any{"role": "worker", "count": int64(1), "selector": map[string]any{"cpu_cores": int64(64)}}})

	var s v1alpha1.ProvisioningStatus
	eventually(t, 60*time.Second, func() bool { s = status("e2e-nbdown-plain"); return s.State == v1alpha1.StateFulfilled },
		"the request without hosts was not fulfilled while NetBox is down: %+v", &s)
	eventually(t, 30*time.Second, func() bool {
		s = status("e2e-nbdown-hosts")
		return strings.Contains(s.Message, "NetBox unreachable since")
	}, "the request with hosts never named the outage: %+v", &s)
	assert.Equal(t, v1alpha1.StateProgressing, s.State)
	assert.Regexp(t, `^Hosts are being prepared: NetBox unreachable since \S+Z \(HTTP 503\); waiting$`, s.Message)
	waiting := s

	code, _, b := call(t, http.MethodGet, p.NBIURL+nbiBase+"/e2e-nbdown-plain", nil)
	assert.Equal(t, http.StatusOK, code, "the NBI answers: %s", b)
	code, hdr, b := call(t, http.MethodGet, p.NBIURL+"/o2ims-infrastructureInventory/v1/resourcePools", nil)
	assert.Equal(t, http.StatusServiceUnavailable, code, "no inventory view before NetBox answered: %s", b)
	assert.NotEmpty(t, hdr.Get("Retry-After"))
	_, metrics := p.get("/metrics")
	assert.Contains(t, metrics, "\no2ims_netbox_usable 0\n")
	assert.Contains(t, metrics, "\no2ims_netbox_up 0\n")
	assert.Contains(t, metrics, "\no2ims_operator_ready 1\n")

	// The outage outlasts every bound; the process stays, alive and ready, and the request keeps waiting
	// with the same message (nothing is written while nothing changes).
	for time.Since(started) < outageFor {
		require.True(t, p.running(), "the operator exited while NetBox was down:\n%s", p.log())
		code, body := p.get("/healthz")
		require.Equal(t, http.StatusOK, code, "liveness while NetBox is down: %s", body)
		code, _ = p.get("/readyz")
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, waiting, status("e2e-nbdown-hosts"))
		time.Sleep(time.Second)
	}
	t.Logf("NetBox answered 503 for %s from before the start; the request with hosts waited with %q", time.Since(started).Round(time.Second), waiting.Message)

	nb.SetOutage(0)
	eventually(t, 90*time.Second, func() bool { s = status("e2e-nbdown-hosts"); return s.State == v1alpha1.StateFulfilled },
		"the request with hosts was not fulfilled once NetBox answered: %+v", &s)
	require.True(t, p.running())
	eventually(t, 30*time.Second, func() bool { _, body := p.get("/readyz"); return body == "ok\n" }, "/readyz still says NetBox is down")
	_, metrics = p.get("/metrics")
	assert.Contains(t, metrics, "\no2ims_netbox_usable 1\n")
	eventually(t, 30*time.Second, func() bool {
		c, _, _ := call(t, http.MethodGet, p.NBIURL+"/o2ims-infrastructureInventory/v1/resourcePools", nil)
		return c == http.StatusOK
	}, "the inventory never read NetBox")
	log := p.log()
	assert.Equal(t, 1, strings.Count(log, "caches synced; ready"), "one process, never restarted")
	assert.Contains(t, log, "NetBox is unreachable at start; starting without it")
	assert.Contains(t, log, "NetBox answers and passed its check")

	// The host goes back to the pool on deletion, as ever.
	require.NoError(t, dyn.Delete(ctx, "e2e-nbdown-hosts", metav1.DeleteOptions{}))
	eventually(t, 60*time.Second, func() bool {
		_, err := dyn.Get(ctx, "e2e-nbdown-hosts", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, "the request with hosts was never released")
	assert.Equal(t, "staged", nb.Devices()[0].Status)
	took, err := p.sigterm(t, 10*time.Second)
	require.NoError(t, err, "exit 0")
	t.Logf("stopped %s after SIGTERM", took.Round(time.Millisecond))
}

// SIGTERM with many passes in flight against a slow NetBox, and an NBI request still being received,
// exits 0 inside the shipped terminationGracePeriodSeconds: the drain, the NBI's shutdown and the health
// listener share one deadline (their budgets used to add up to about 8 s over a 5 s grace).
func TestSIGTERMWithPassesInFlightAgainstASlowNetBoxExitsInsideTheGracePeriod(t *testing.T) {
	ctx := context.Background()
	grace := shippedGracePeriod(t)
	const n = 40
	name := "sigterm-busy"
	// A free host per request, of a kind no other test asks for (ids of their own), in the pool before
	// the operator starts: its view lists them at once and every request gets a candidate.
	for i := 0; i < n; i++ {
		id := int32(9201 + i)
		st.NetBox.AddDevice(netboxsim.Device{ID: id, Name: fmt.Sprintf("busy-host-%02d", i), Status: "staged", Site: "edge-lab", Custom: map[string]any{
			"o2ims_managed": true, "o2ims_bmc_address": fmt.Sprintf("redfish-virtualmedia+https://10.40.0.%d/redfish/v1/Systems/1", i+1),
			"o2ims_boot_mac": fmt.Sprintf("52:54:00:cc:00:%02x", i), "cpu_cores": 24,
		}})
		t.Cleanup(func() { st.NetBox.DeleteDevice(id) })
	}
	p := launch(t, launchOptions{Name: name, Args: []string{fmt.Sprintf("--workers=%d", n)}})
	eventually(t, 90*time.Second, func() bool { c, _ := p.get("/readyz"); return c == http.StatusOK }, "never ready")

	// Every claim's read of its candidate takes longer than the whole grace period (hosts are chosen
	// from the operator's view of the pool; the claim reads NetBox).
	st.NetBox.SetLatency(http.MethodGet, netboxsim.RouteDevice, 30*time.Second)
	defer st.NetBox.SetLatency(http.MethodGet, netboxsim.RouteDevice, 0)
	before := st.NetBox.Calls(http.MethodGet, netboxsim.RouteDevice)
	dyn := st.API.AdminDynamic().Resource(v1alpha1.GVR)
	var names []string
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("e2e-busy-%02d", i)
		names = append(names, id)
		_, err := dyn.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "o2ims.provisioning.oran.org/v1alpha1", "kind": "ProvisioningRequest",
			"metadata": map[string]any{"name": id, "labels": map[string]any{privateLabel: name}},
			"spec": map[string]any{"name": id, "description": "", "templateName": "nephio-workload-cluster", "templateVersion": "v3.0.0",
				"templateParameters": map[string]any{"clusterName": id,
					"hosts": []any{map[string]any{"role": "worker", "count": int64(1), "selector": map[string]any{"cpu_cores": int64(24)}}}}},
		}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		// Nothing was claimed (no claim's read ever answered): the requests go without their finalizers.
		for _, id := range names {
			_, _ = dyn.Patch(context.Background(), id, "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			_ = dyn.Delete(context.Background(), id, metav1.DeleteOptions{})
		}
	})
	eventually(t, 60*time.Second, func() bool { return st.NetBox.Calls(http.MethodGet, netboxsim.RouteDevice)-before >= n },
		"the %d passes never reached NetBox (%d did)", n, st.NetBox.Calls(http.MethodGet, netboxsim.RouteDevice)-before)

	// An NBI POST whose body is still arriving: the NBI's shutdown waits for it as long as it may.
	conn, err := net.Dial("tcp", strings.TrimPrefix(p.NBIURL, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"provisioningRequestId\":", nbiBase)
	require.NoError(t, err)
	time.Sleep(300 * time.Millisecond) // the server is now reading the body

	took, err := p.sigterm(t, grace+10*time.Second)
	require.NoError(t, err, "exit 0:\n%s", p.log())
	t.Logf("SIGTERM with %d passes in flight against a slow NetBox and one NBI request in flight: exited 0 after %s (grace %s)",
		n, took.Round(time.Millisecond), grace)
	assert.Less(t, took, grace, "inside the shipped grace period")
	log := p.log()
	assert.Contains(t, log, "passes still running at the drain deadline; cancelling them", "passes were in flight")
	_ = conn.SetReadDeadline(time.Now().Add(time.Second))
	_, _ = io.Copy(io.Discard, conn)
}
