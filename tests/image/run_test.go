package image

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

const nbiBase = "/O2ims_infrastructureProvisioning/v1/provisioningRequests"

// pythonArgs is the Python image's CMD, as its Deployment passes it.
var pythonArgs = []string{"kopf", "run", "/usr/o2ims/src/manager.py", "--all-namespaces"}

// variant is one way a pod starts the image.
type variant struct {
	name       string
	user       string   // --user; "" runs the image's USER
	wantUID    int      // the uid the operator then runs as
	entrypoint string   // --entrypoint (a pod's command:); "" keeps the image's
	args       []string // a pod's args: (after the entrypoint); nil keeps the image's CMD
	env        map[string]string
	// healthPort is where the arguments put the liveness listener (the image's CMD: 8080 on every address).
	healthPort int
	upstream   string // the UPSTREAM_PKG_REPO the PackageVariant must name
}

// Each variant in turn (one operator at a time handles the shared API server's requests): a request POSTed
// through the NBI reaches FULFILLED, /healthz answers a kubelet probe, SIGTERM exits 0 within the grace.
func TestTheImageRunsAsAPodRunsIt(t *testing.T) {
	need(t)
	shipped := shippedEnv(t)
	python := map[string]string{
		// The Python Deployment's transport setting (ignored, with a warning: the in-cluster config is used)
		// and its template repository (a non-default name here, so the PackageVariant shows it was read).
		"KUBERNETES_BASE_URL": "https://kubernetes.default.svc",
		"UPSTREAM_PKG_REPO":   "catalog-infra-capi-python",
		"POD_NAMESPACE":       stack.OperatorNamespace,
	}
	free, err := kubeapi.FreePorts(1)
	require.NoError(t, err)
	for _, v := range []variant{
		{name: "default-cmd", wantUID: 65535, env: shipped, healthPort: 8080, upstream: shipped["UPSTREAM_PKG_REPO"]},
		{name: "python-args", wantUID: 65535, args: pythonArgs, env: shipped, healthPort: 8080, upstream: shipped["UPSTREAM_PKG_REPO"]},
		{name: "kopf-command-as-root", user: "0", wantUID: 0, entrypoint: "kopf", args: pythonArgs[1:], env: python,
			healthPort: 8080, upstream: python["UPSTREAM_PKG_REPO"]},
		{name: "kopf-command-liveness", wantUID: 65535, entrypoint: "kopf",
			args: append(append([]string{}, pythonArgs[1:]...), fmt.Sprintf("--liveness=http://127.0.0.1:%d/healthz", free[0])),
			env:  python, healthPort: free[0], upstream: python["UPSTREAM_PKG_REPO"]},
	} {
		if !t.Run(v.name, func(t *testing.T) { runVariant(t, v) }) {
			return // the next would meet this one's container or port
		}
	}
}

func runVariant(t *testing.T, v variant) {
	ctx := context.Background()
	ports, err := kubeapi.FreePorts(1)
	require.NoError(t, err)
	nbiPort := ports[0]
	if v.healthPort == 8080 {
		// The image's CMD binds 8080 on every address; with the host's network it must be free here.
		l, err := net.Listen("tcp", ":8080")
		require.NoError(t, err, "port 8080 is in use on this machine: the image's default liveness listener needs it")
		l.Close()
	}
	apiURL, err := url.Parse(st.API.URL)
	require.NoError(t, err)

	name := "o2ims-image-test-" + v.name + "-" + randomHex(4)
	env := map[string]string{}
	for k, val := range v.env {
		env[k] = val
	}
	env["NBI_HOST"], env["NBI_PORT"] = "127.0.0.1", strconv.Itoa(nbiPort)
	// In-cluster configuration only: the service address and the mounted token and CA. Nothing else tells
	// the binary where the API server is (no kubeconfig, no --kubeconfig).
	env["KUBERNETES_SERVICE_HOST"], env["KUBERNETES_SERVICE_PORT"] = apiURL.Hostname(), apiURL.Port()
	args := []string{"run", "-d", "--name", name,
		// The host's network (the API server listens on loopback); loopback is then shared with this test.
		"--network", "host",
		// The shipped Deployment's securityContext: readOnlyRootFilesystem (without podman's tmpfs on
		// /tmp, /run: a pod has none), capabilities drop ALL, allowPrivilegeEscalation false.
		"--read-only", "--read-only-tmpfs=false", "--cap-drop=all", "--security-opt", "no-new-privileges",
		"-v", saDir + ":/var/run/secrets/kubernetes.io/serviceaccount:ro"}
	args = append(args, ulimits()...)
	for k, val := range env {
		args = append(args, "-e", k+"="+val)
	}
	if v.user != "" {
		args = append(args, "--user", v.user)
	}
	if v.entrypoint != "" {
		args = append(args, "--entrypoint", v.entrypoint)
	}
	args = append(args, image)
	args = append(args, v.args...)
	t.Cleanup(func() { _, _, _ = podman("rm", "-f", "-t", "0", name) })
	_, stderr, err := podman(args...)
	require.NoError(t, err, "podman run: %s", stderr)
	logs := func() string { o, e, _ := podman("logs", name); return o + e }

	health := fmt.Sprintf("http://127.0.0.1:%d", v.healthPort)
	nbi := fmt.Sprintf("http://127.0.0.1:%d", nbiPort)
	kubeapi.Eventually(t, 90*time.Second, func() bool {
		require.True(t, running(t, name), "the container exited before it was ready:\n%s", logs())
		code, _ := probe(health + "/readyz")
		return code == http.StatusOK
	}, "never ready:\n%s", lazy(logs))

	// Who it runs as, read from the host: the image's USER, or the pod's runAsUser.
	pid, _, err := podman("inspect", "-f", "{{.State.Pid}}", name)
	require.NoError(t, err)
	status, err := os.ReadFile(filepath.Join("/proc", strings.TrimSpace(pid), "status"))
	require.NoError(t, err)
	uid := fmt.Sprint(v.wantUID)
	assert.Regexp(t, `(?m)^Uid:\s+`+uid+`\s+`+uid+`\s+`+uid+`\s+`+uid+`$`, string(status))
	assert.Regexp(t, `(?m)^CapEff:\s+0+$`, string(status), "no capabilities")

	// A request through the NBI, to FULFILLED (the simulated Porch renders, CAPI provisions).
	id := "image-" + v.name
	body, _ := json.Marshal(map[string]any{
		"provisioningRequestId": id, "name": id, "description": "the image as a pod",
		"templateName": "nephio-workload-cluster", "templateVersion": "v3.0.0",
		"templateParameters": map[string]any{"clusterName": "edge-" + id},
	})
	resp, err := http.Post(nbi+nbiBase, "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(answer))
	var phase, message string
	kubeapi.Eventually(t, 60*time.Second, func() bool {
		resp, err := http.Get(nbi + nbiBase + "/" + id)
		require.NoError(t, err)
		defer resp.Body.Close()
		var info struct {
			Status struct {
				Phase   string `json:"provisioningPhase"`
				Message string `json:"message"`
			} `json:"status"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&info)
		phase, message = info.Status.Phase, info.Status.Message
		return phase == "FULFILLED" || phase == "FAILED"
	}, "request %s never fulfilled (%s):\n%s", id, lazy(func() string { return phase + ": " + message }), lazy(logs))
	require.Equal(t, "FULFILLED", phase, message)
	pv, err := st.API.AdminDynamic().Resource(external.PackageVariantGVR).Namespace("default").Get(ctx, id, metav1.GetOptions{})
	require.NoError(t, err)
	repo, _, _ := unstructured.NestedString(pv.Object, "spec", "upstream", "repo")
	assert.Equal(t, v.upstream, repo, "UPSTREAM_PKG_REPO")

	// The liveness probe, as the kubelet sends it: success is 200-399.
	code, answerText := probe(health + "/healthz")
	assert.True(t, code >= 200 && code < 400, "/healthz answered %d: %s", code, answerText)

	if v.env["KUBERNETES_BASE_URL"] != "" {
		assert.Contains(t, logs(), "KUBERNETES_BASE_URL is the Python image's transport setting and is ignored")
	}

	// SIGTERM, then SIGKILL after the Deployment's 5 s grace: it must exit 0 before that.
	start := time.Now()
	_, stderr, err = podman("stop", "-t", "5", name)
	took := time.Since(start)
	require.NoError(t, err, stderr)
	exit, _, err := podman("inspect", "-f", "{{.State.ExitCode}}", name)
	require.NoError(t, err)
	assert.Equal(t, "0", strings.TrimSpace(exit), "exit code after SIGTERM:\n%s", logs())
	assert.Less(t, took, 5*time.Second, "stopped within the grace period")
	assert.Contains(t, logs(), `"stopped"`, "the operator logged its clean stop")
	t.Logf("%s: fulfilled %s; SIGTERM to exit %s in %s", v.name, id, strings.TrimSpace(exit), took.Round(time.Millisecond))
}

// shippedEnv is the environment manifests/base/deployment.yaml gives the container (the downward API's
// namespace resolved as the kubelet would).
func shippedEnv(t *testing.T) map[string]string {
	b, err := os.ReadFile(filepath.Join(root, "manifests", "base", "deployment.yaml"))
	require.NoError(t, err)
	var d appsv1.Deployment
	require.NoError(t, yaml.UnmarshalStrict(b, &d))
	env := map[string]string{}
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			env[e.Name] = d.Namespace
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.podIP":
			// No pod here, so no pod IP: the operator runs as it does before the kubelet fills it.
		case e.ValueFrom != nil:
			t.Fatalf("the shipped Deployment sets %s from a source this test does not resolve", e.Name)
		default:
			env[e.Name] = e.Value
		}
	}
	require.NotEmpty(t, env["UPSTREAM_PKG_REPO"])
	return env
}

// probe is a kubelet HTTP probe: a GET with the kubelet's user agent and a 5 s timeout (the shipped
// timeoutSeconds), redirects not followed.
func probe(u string) (int, string) {
	client := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("User-Agent", "kube-probe/1.37")
	req.Header.Set("Accept", "*/*")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func running(t *testing.T, name string) bool {
	out, stderr, err := podman("inspect", "-f", "{{.State.Running}}", name)
	require.NoError(t, err, stderr)
	return strings.TrimSpace(out) == "true"
}

// lazy defers an expensive message argument until it is printed.
type lazy func() string

func (l lazy) String() string { return l() }

// Wrong arguments, in the image as a Deployment passes them: one line on stderr naming what is wrong and
// exit 2 (the issue: `kopf run …` as args used to exit 2 with nothing on stdout or stderr). --version
// answers on stdout, through the kopf link too.
func TestTheImageSaysWhatIsWrongWithItsArguments(t *testing.T) {
	need(t)
	base := append([]string{"run", "--rm", "--network", "none", "--read-only", "--cap-drop=all"}, ulimits()...)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{image, "kopf", "run", "/usr/o2ims/src/manager.py", "--all-namespace"}, "o2ims-operator: unknown flag: --all-namespace (see --help)\n"},
		{[]string{"--entrypoint", "kopf", image, "run", "/usr/o2ims/src/manager.py", "--all-namespaces", "extra"}, `o2ims-operator: unexpected argument "extra": only flags are taken (and, as kopf did, "run FILE.py" first)` + "\n"},
		{[]string{"--entrypoint", "kopf", image, "serve"}, `o2ims-operator: kopf: only "kopf run FILE.py [flags]" is supported, got "serve" after "kopf"` + "\n"},
	} {
		stdout, stderr, err := podman(append(base, c.args...)...)
		require.Error(t, err, "%v", c.args)
		assert.Equal(t, 2, exitCode(err), "%v: %s", c.args, stderr)
		assert.Empty(t, stdout, "%v", c.args)
		assert.Equal(t, c.want, stderr, "%v", c.args)
	}
	for _, args := range [][]string{
		{image, "--version"},
		{"--entrypoint", "kopf", image, "run", "/usr/o2ims/src/manager.py", "--version"},
	} {
		stdout, stderr, err := podman(append(base, args...)...)
		require.NoError(t, err, "%v: %s", args, stderr)
		assert.Empty(t, stderr, "%v", args)
		assert.Regexp(t, `^o2ims-operator `+imageVersion+` go1\.\S+ linux/\w+( .*)?\n$`, stdout, "%v", args)
	}
}

func exitCode(err error) int {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	return -1
}
