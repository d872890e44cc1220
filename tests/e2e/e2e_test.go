// Package e2e tests the operator binary as it is shipped: the manifests applied with the real kubectl, the
// binary running as the shipped ServiceAccount with only the shipped roles bound, driven through its
// northbound API, against the real API server, the NetBox simulator and the simulated world.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/world"
	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

var (
	st       *stack.Stack
	operator *stack.Operator
	binary   string
)

const nbiBase = "/O2ims_infrastructureProvisioning/v1/provisioningRequests"

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "o2ims-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "o2ims-operator")
	root, _ := kubeapi.RepoRoot()
	build := exec.Command(filepath.Join(root, "hack", "build.sh"), binary, "e2e")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the operator:", err)
		return 1
	}
	ctx := context.Background()
	st, err = stack.Start(ctx, stack.Options{
		Operator: binary, Dir: filepath.Join(dir, "stack"), Hosts: 6,
		World: world.Options{RenderDelay: 200 * time.Millisecond, ProvisionDelay: 400 * time.Millisecond,
			PorchFinalizer: true, DeleteDelay: 200 * time.Millisecond,
			RegisterDelay: 100 * time.Millisecond, InspectDelay: 100 * time.Millisecond, Metal3Finalizer: true},
		Env: map[string]string{"REQUEUE_INTERVAL": "2"},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the stack:", err)
		return 1
	}
	defer st.Stop()
	// The shared operator leaves requests labelled privateLabel to the operators tests start themselves.
	if operator, err = st.StartOperator(ctx, map[string]string{"PROVISIONING_REQUEST_SELECTOR": "!" + privateLabel}); err != nil {
		fmt.Fprintln(os.Stderr, "starting the operator:", err)
		return 1
	}
	return m.Run()
}

func call(t *testing.T, method, url string, body any) (int, http.Header, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, r)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

type info struct {
	Reference string `json:"provisioningRequestReference"`
	Status    struct {
		Phase   string `json:"provisioningPhase"`
		Message string `json:"message"`
	} `json:"status"`
	Set struct {
		Cluster string   `json:"nodeClusterId"`
		Infra   []string `json:"infrastructureResourceIds"`
	} `json:"provisionedResourceSet"`
}

// listed answers the NBI's whole list, id → phase, following its pages.
func listed(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	next := operator.NBIURL + nbiBase
	for next != "" {
		code, hdr, b := call(t, http.MethodGet, next, nil)
		require.Equal(t, http.StatusOK, code, string(b))
		var page struct {
			Items []struct {
				Data struct {
					ID string `json:"provisioningRequestId"`
				} `json:"provisioningRequestData"`
				info
			} `json:"items"`
		}
		require.NoError(t, json.Unmarshal(b, &page))
		for _, it := range page.Items {
			out[it.Data.ID] = it.Status.Phase
		}
		next = ""
		if link := hdr.Get("Link"); link != "" {
			next = operator.NBIURL + strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`)
		}
	}
	return out
}

// eventually is the shared kubeapi.Eventually under this package's short name.
var eventually = kubeapi.Eventually

// The binary, as the shipped ServiceAccount with only the shipped roles, takes a request with hosts from
// the NBI to FULFILLED and through deletion.
func TestShippedRBACCarriesARequestWithHostsFromTheNBIToFulfilledAndThroughDeletion(t *testing.T) {
	ctx := context.Background()
	request := map[string]any{
		"provisioningRequestId": "e2e-1", "name": "e2e", "description": "through the NBI",
		"templateName": "nephio-workload-cluster", "templateVersion": "v3.0.0",
		"templateParameters": map[string]any{
			"clusterName": "edge-e2e-1", "labels": map[string]any{"site": "lab"},
			"hosts": []any{
				map[string]any{"role": "control-plane", "count": 1, "selector": map[string]any{"cpu_cores": 32}},
				map[string]any{"role": "worker", "count": 1, "selector": map[string]any{"cpu_cores": 16}},
			},
		},
	}
	code, _, body := call(t, http.MethodPost, operator.NBIURL+nbiBase, request)
	require.Equal(t, http.StatusCreated, code, string(body))

	var got info
	eventually(t, 60*time.Second, func() bool {
		_, _, b := call(t, http.MethodGet, operator.NBIURL+nbiBase+"/e2e-1", nil)
		_ = json.Unmarshal(b, &got)
		return got.Status.Phase == "FULFILLED" || got.Status.Phase == "FAILED"
	}, "never fulfilled: %+v", &got)
	require.Equal(t, "FULFILLED", got.Status.Phase, got.Status.Message)
	assert.Len(t, got.Set.Infra, 2)
	assert.NotEmpty(t, got.Set.Cluster)
	// The list keeps its id order between pages until the cache changes; it answers the request as the
	// named GET does, not as it was when the order was last sorted.
	var phases map[string]string
	eventually(t, 10*time.Second, func() bool { phases = listed(t); return phases["e2e-1"] == "FULFILLED" },
		"the list never answered the request as fulfilled: %v", &phases)

	out, err := st.KubectlRun(ctx, "get", "provisioningrequests")
	require.NoError(t, err, out)
	header := strings.Fields(strings.SplitN(out, "\n", 2)[0])
	assert.Equal(t, []string{"NAME", "STATE", "CLUSTER", "TEMPLATE", "AGE"}, header)
	assert.Regexp(t, `e2e-1\s+fulfilled\s+edge-e2e-1\s+nephio-workload-cluster`, out)
	out, err = st.KubectlRun(ctx, "get", "provisioningrequests", "-o", "wide")
	require.NoError(t, err, out)
	assert.Contains(t, out, "MESSAGE")
	assert.Contains(t, out, "Cluster resource created")

	code, hdr, body := call(t, http.MethodDelete, operator.NBIURL+nbiBase+"/e2e-1", nil)
	require.Equal(t, http.StatusAccepted, code, string(body))
	assert.Equal(t, nbiBase+"/e2e-1", hdr.Get("Location"))
	eventually(t, 60*time.Second, func() bool {
		c, _, _ := call(t, http.MethodGet, operator.NBIURL+nbiBase+"/e2e-1", nil)
		return c == http.StatusNotFound
	}, "never gone")
	eventually(t, 10*time.Second, func() bool { phases = listed(t); _, in := phases["e2e-1"]; return !in },
		"the list still answers the deleted request: %v", &phases)
	for _, d := range st.NetBox.Devices() {
		assert.Equal(t, "staged", d.Status, "device %d back in the pool", d.ID)
		assert.Nil(t, d.Custom["o2ims_request_uid"], "device %d unowned", d.ID)
	}
	bmhs, err := st.API.AdminDynamic().Resource(external.BareMetalHostGVR).
		Namespace(stack.Metal3Namespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, bmhs.Items)
	secrets, err := st.API.AdminClientset().CoreV1().Secrets(stack.Metal3Namespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, secrets.Items)
	_, err = st.API.AdminDynamic().Resource(external.PackageVariantGVR).
		Namespace("default").Get(ctx, "e2e-1", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the package variant outlived its request")

	log, _ := os.ReadFile(operator.Log)
	assert.NotContains(t, strings.ToLower(string(log)), "forbidden", "the shipped roles lacked a permission")
}

// The shipped roles are no wider than the chain, the NBI and the inventory need.
func TestShippedRolesAreNotWiderThanNeeded(t *testing.T) {
	ctx := context.Background()
	sa := "system:serviceaccount:" + stack.OperatorNamespace + ":" + stack.ServiceAccount
	can := func(args ...string) string {
		out, _ := st.KubectlRun(ctx, append([]string{"auth", "can-i", "--as=" + sa}, args...)...)
		lines := strings.Split(strings.TrimSpace(out), "\n") // kubectl may warn before its answer
		return strings.TrimSpace(lines[len(lines)-1])
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"list", "secrets", "--all-namespaces"}, "no"},
		{[]string{"get", "secrets", "-n", "kube-system"}, "no"},
		{[]string{"get", "secrets", "-n", stack.CredentialsNamespace}, "no"},
		{[]string{"list", "secrets", "-n", stack.CredentialsNamespace}, "yes"},
		{[]string{"delete", "secrets", "-n", stack.CredentialsNamespace}, "no"},
		{[]string{"create", "secrets", "-n", stack.Metal3Namespace}, "yes"},
		{[]string{"list", "secrets", "-n", stack.Metal3Namespace}, "no"},
		{[]string{"create", "packagevariants.config.porch.kpt.dev", "-n", "default"}, "yes"},
		{[]string{"create", "packagevariants.config.porch.kpt.dev", "-n", "kube-system"}, "no"},
		{[]string{"update", "clusters.cluster.x-k8s.io", "-n", "default"}, "no"},
		{[]string{"create", "baremetalhosts.metal3.io", "-n", "default"}, "no"},
		{[]string{"create", "provisioningrequests.o2ims.provisioning.oran.org"}, "yes"},
		{[]string{"patch", "provisioningrequests.o2ims.provisioning.oran.org", "--subresource=status"}, "yes"},
		{[]string{"create", "tokenreviews.authentication.k8s.io"}, "no"},
		{[]string{"create", "pods", "-n", "default"}, "no"},
		{[]string{"update", "leases.coordination.k8s.io", "-n", stack.OperatorNamespace}, "yes"},
		{[]string{"update", "leases.coordination.k8s.io", "-n", "kube-system"}, "no"},
	} {
		assert.Equal(t, c.want, can(c.args...), "can-i %v", c.args)
	}
}

// The metrics exposition is valid for Prometheus: client_golang's promlint, the linter `promtool check
// metrics` runs, in process (so no prometheus package is needed for it).
func TestMetricsExpositionPassesPromlint(t *testing.T) {
	code, _, body := call(t, http.MethodGet, operator.HealthURL+"/metrics", nil)
	require.Equal(t, http.StatusOK, code)
	for _, name := range []string{"o2ims_provisioning_requests", "o2ims_handler_runs_total", "workqueue_depth",
		"rest_client_requests_total", "o2ims_nbi_requests_total", "o2ims_hosts_claimed", "o2ims_netbox_request_duration_seconds"} {
		assert.Contains(t, string(body), name)
	}
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	require.NoError(t, err, "the exposition does not parse")
	assert.Empty(t, problems, "promlint")
}

func TestHealthzAnswersKopfStyleProbes(t *testing.T) {
	code, _, body := call(t, http.MethodGet, operator.HealthURL+"/healthz", nil)
	require.Equal(t, http.StatusOK, code)
	var probes map[string]any
	require.NoError(t, json.Unmarshal(body, &probes))
	assert.Contains(t, probes, "now")
	assert.Contains(t, probes, "northbound")
	code, _, _ = call(t, http.MethodGet, operator.HealthURL+"/readyz", nil)
	assert.Equal(t, http.StatusOK, code)
}

// SIGTERM: stop taking work, finish, run cleanup, exit 0 inside the Deployment's 5 s grace period.
func TestSIGTERMStopsCleanlyWithinTheGracePeriod(t *testing.T) {
	ctx := context.Background()
	op, err := st.StartOperator(ctx, map[string]string{"PROVISIONING_REQUEST_SELECTOR": "e2e=sigterm"})
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, op.Cmd().Process.Signal(syscall.SIGTERM))
	select {
	case <-op.Done():
	case <-time.After(5 * time.Second):
		op.Kill()
		t.Fatal("still running 5s after SIGTERM")
	}
	assert.NoError(t, op.Err(), "exit 0 on SIGTERM")
	t.Logf("stopped %s after SIGTERM", time.Since(start).Round(time.Millisecond))
	log, _ := os.ReadFile(op.Log)
	assert.Contains(t, string(log), "stop_northbound")
}

// A port already in use stops the operator (non-zero) with a line naming the port, instead of leaving it
// running without its API.
func TestNorthboundPortInUseStopsTheOperator(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	port := fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
	_, err = st.StartOperator(context.Background(), map[string]string{"NBI_PORT": port})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exited")
	assert.Contains(t, err.Error(), "127.0.0.1:"+port)
}

// A bad value stops the binary at start with one clear line naming the variable.
func TestBadConfigurationStopsWithOneLine(t *testing.T) {
	for env, want := range map[string]string{
		"CREATION_TIMEOUT=-5":        "CREATION_TIMEOUT must be a positive integer",
		"CLUSTER_PROVISIONER=kamaji": `CLUSTER_PROVISIONER "kamaji" is not supported`,
		"NBI_PORT=http":              "NBI_PORT",
		"NETBOX_URL=ftp://netbox":    "NETBOX_URL",
		"LOG_LEVEL=chatty":           "LOG_LEVEL",
	} {
		cmd := exec.Command(binary, "--kubeconfig", st.AdminKubeconfig)
		cmd.Env = []string{env}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, env)
		assert.Equal(t, 1, exit.ExitCode(), env)
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		assert.Len(t, lines, 1, "%s: one line, got %q", env, stderr.String())
		assert.Contains(t, lines[0], want, env)
	}
}

// NetBox older than 4.6 has no ETags, so conditional claims are impossible: the startup check stops the
// operator with one line saying so, before it watches anything.
func TestNetBoxTooOldStopsTheOperatorAtStart(t *testing.T) {
	st.NetBox.SetVersion("4.5.10")
	defer st.NetBox.SetVersion("4.6.8")
	_, err := st.StartOperator(context.Background(), map[string]string{"PROVISIONING_REQUEST_SELECTOR": "e2e=netbox-old"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `startup activity "netbox" failed`)
	assert.Contains(t, err.Error(), "4.5.10")
}
