package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

// privateLabel marks requests that the shared operator leaves alone (its selector is !privateLabel), so a
// test's own operator can handle them alone.
const privateLabel = "e2e-private"

// process is an operator binary a test started itself, without waiting for it to be ready: the tests of
// start, stop and missing permissions look at it while it is not.
type process struct {
	cmd       *exec.Cmd
	done      chan struct{}
	err       error
	Log       string
	NBIURL    string
	HealthURL string
}

// launchOptions shape a process. The zero value runs as the shipped ServiceAccount against the shared
// stack, handling only requests labelled privateLabel=Name, with the shared NetBox.
type launchOptions struct {
	Name       string // the privateLabel value it handles; names its files
	API        *kubeapi.Server
	Token      string // bearer token (default: the shipped ServiceAccount's)
	NetBoxURL  string // default: the shared simulator; "-" runs without the inventory
	Env        map[string]string
	Args       []string
	ShowOutput bool
}

func launch(t *testing.T, o launchOptions) *process {
	t.Helper()
	ctx := context.Background()
	api := o.API
	if api == nil {
		api = st.API
	}
	dir := t.TempDir()
	if o.Token == "" {
		tok, err := api.ServiceAccountToken(ctx, stack.OperatorNamespace, stack.ServiceAccount, "")
		require.NoError(t, err)
		o.Token = tok
	}
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(o.Token), 0o600))
	kubeconfig, err := api.WriteKubeconfig(filepath.Join(dir, "kubeconfig"), "", tokenFile)
	require.NoError(t, err)
	ports, err := kubeapi.FreePorts(2)
	require.NoError(t, err)
	p := &process{
		done:      make(chan struct{}),
		Log:       filepath.Join(dir, "operator.log"),
		NBIURL:    fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
		HealthURL: fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
	}
	env := map[string]string{
		"PATH": os.Getenv("PATH"), "HOME": os.Getenv("HOME"),
		"POD_NAMESPACE": stack.OperatorNamespace, "LOG_LEVEL": "INFO",
		"NBI_HOST": "127.0.0.1", "NBI_PORT": strconv.Itoa(ports[0]),
		"METAL3_NAMESPACE": stack.Metal3Namespace, "BMC_CREDENTIALS_NAMESPACE": stack.CredentialsNamespace,
		"PROVISIONING_REQUEST_SELECTOR": privateLabel + "=" + o.Name,
		"REQUEUE_INTERVAL":              "2",
	}
	switch o.NetBoxURL {
	case "-":
	case "":
		o.NetBoxURL = st.NetBoxURL
		fallthrough
	default:
		tf := filepath.Join(dir, "netbox-token")
		require.NoError(t, os.WriteFile(tf, []byte(st.NetBoxToken()), 0o600))
		env["NETBOX_URL"], env["NETBOX_ALLOW_HTTP"], env["NETBOX_TOKEN_FILE"] = o.NetBoxURL, "true", tf
	}
	for k, v := range o.Env {
		env[k] = v
	}
	args := append([]string{"--all-namespaces", "--kubeconfig=" + kubeconfig,
		fmt.Sprintf("--liveness=http://127.0.0.1:%d/healthz", ports[1]), "--log-format=console"}, o.Args...)
	logFile, err := os.Create(p.Log)
	require.NoError(t, err)
	p.cmd = exec.Command(binary, args...)
	for k, v := range env {
		p.cmd.Env = append(p.cmd.Env, k+"="+v)
	}
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	require.NoError(t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		if p.running() {
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
		if t.Failed() {
			t.Logf("operator %s log tail:\n%s", o.Name, stack.Tail(p.Log, 40))
		}
	})
	return p
}

func (p *process) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// get answers a GET of the health listener: code and body (0 when it does not answer).
func (p *process) get(path string) (int, string) {
	c := &http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get(p.HealthURL + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, b.String()
}

func (p *process) log() string {
	b, _ := os.ReadFile(p.Log)
	return string(b)
}

// sigterm signals the process and waits up to wait for it to exit; it answers how long that took and
// the exit error (nil for 0). A process still running after wait is killed and the test fails.
func (p *process) sigterm(t *testing.T, wait time.Duration) (time.Duration, error) {
	t.Helper()
	start := time.Now()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.done:
		return time.Since(start), p.err
	case <-time.After(wait):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		t.Fatalf("still running %s after SIGTERM:\n%s", wait, stack.Tail(p.Log, 30))
		return 0, nil
	}
}

// shippedGracePeriod is terminationGracePeriodSeconds of the shipped Deployment.
func shippedGracePeriod(t *testing.T) time.Duration {
	t.Helper()
	path, err := kubeapi.RepoFile("manifests/base/deployment.yaml")
	require.NoError(t, err)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "terminationGracePeriodSeconds:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			require.NoError(t, err)
			return time.Duration(n) * time.Second
		}
	}
	t.Fatal("manifests/base/deployment.yaml has no terminationGracePeriodSeconds")
	return 0
}

// lazy formats as what its function answers when printed: a failure message with the log as it is then.
type lazy func() string

func (l lazy) String() string { return l() }
