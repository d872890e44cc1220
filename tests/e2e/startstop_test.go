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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/netbox/netboxsim"
)

// While the operator waits for an unavailable NetBox at start (up to two minutes), the shipped liveness
// probe must not kill it: /healthz answers 200 throughout, /readyz 503 saying what it waits for. Once
// NetBox answers, it becomes ready. (It used to answer 500 on /healthz until the NBI started, after the
// NetBox check: the shipped probe restarted it after about 60 s.)
func TestNetBoxUnavailableAtStartKeepsLivenessUpAndSaysWhyInReadyz(t *testing.T) {
	nb := netboxsim.New(netboxsim.Options{Tokens: []string{st.NetBoxToken()}})
	for _, f := range netboxsim.StandardFields() {
		nb.AddCustomField(f)
	}
	srv := nb.Start()
	defer nb.Close()
	nb.InjectFault(netboxsim.Fault{Method: http.MethodGet, Route: netboxsim.RouteStatus, Status: http.StatusServiceUnavailable, Count: 1 << 20})

	p := launch(t, launchOptions{Name: "netbox-down", NetBoxURL: srv.URL})
	eventually(t, 30*time.Second, func() bool {
		_, body := p.get("/readyz")
		return strings.Contains(body, `startup activity "netbox": NetBox is not answering yet`)
	}, "/readyz never said it waits for NetBox:\n%s", lazy(p.log))
	// Watched for a while, across the probes' 10 s result cache: alive every time, never ready.
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
		code, body := p.get("/healthz")
		require.Equal(t, http.StatusOK, code, "liveness while waiting for NetBox: %s", body)
		code, body = p.get("/readyz")
		require.Equal(t, http.StatusServiceUnavailable, code)
		require.Contains(t, body, "not ready: startup activity \"netbox\": NetBox is not answering yet")
		require.True(t, p.running())
	}
	_, body := p.get("/healthz")
	assert.Contains(t, body, "not started yet", "the NBI probe says it is starting, not failing")

	nb.ClearFaults()
	eventually(t, 60*time.Second, func() bool { c, _ := p.get("/readyz"); return c == http.StatusOK }, "never ready once NetBox answered")
	code, _ := p.get("/healthz")
	assert.Equal(t, http.StatusOK, code)
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
	p := launch(t, launchOptions{Name: name, Args: []string{fmt.Sprintf("--workers=%d", n)}})
	eventually(t, 90*time.Second, func() bool { c, _ := p.get("/readyz"); return c == http.StatusOK }, "never ready")

	// Every device search takes longer than the whole grace period.
	st.NetBox.SetLatency(http.MethodGet, netboxsim.RouteDevices, 30*time.Second)
	defer st.NetBox.SetLatency(http.MethodGet, netboxsim.RouteDevices, 0)
	before := st.NetBox.Calls(http.MethodGet, netboxsim.RouteDevices)
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
					"hosts": []any{map[string]any{"role": "worker", "count": int64(1), "selector": map[string]any{"cpu_cores": int64(16)}}}}},
		}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		// Nothing was claimed (no search ever answered): the requests go without their finalizers.
		for _, id := range names {
			_, _ = dyn.Patch(context.Background(), id, "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			_ = dyn.Delete(context.Background(), id, metav1.DeleteOptions{})
		}
	})
	eventually(t, 60*time.Second, func() bool { return st.NetBox.Calls(http.MethodGet, netboxsim.RouteDevices)-before >= n },
		"the %d passes never reached NetBox (%d did)", n, st.NetBox.Calls(http.MethodGet, netboxsim.RouteDevices)-before)

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
