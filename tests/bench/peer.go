package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

// peerDir is the controller-runtime peer's module (tests/bench/peer), built by the bench.
const peerDir = "tests/bench/peer"

// contender is a controller under the side-by-side load: the operator or its controller-runtime peer.
type contender struct {
	name    string
	pid     int
	metrics string // its /metrics URL
	stop    func()
}

// buildPeer builds the peer into dir (its own module: the module proxy or cache provides controller-runtime).
func buildPeer(ctx context.Context, root, dir string) (string, error) {
	bin := filepath.Join(dir, "o2ims-bench-peer")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	cmd.Dir = filepath.Join(root, peerDir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the controller-runtime peer: %w\n%s", err, out)
	}
	return bin, nil
}

// startPeer runs the peer as the operator runs: the shipped ServiceAccount's identity, handling only the
// requests of run, at the same client limits; it answers once its caches are synced.
func startPeer(ctx context.Context, st *stack.Stack, bin, run string, args []string) (*contender, error) {
	tok, err := st.API.ServiceAccountToken(ctx, stack.OperatorNamespace, stack.ServiceAccount, "")
	if err != nil {
		return nil, err
	}
	tokenFile := filepath.Join(st.Dir, "peer-token")
	if err := os.WriteFile(tokenFile, []byte(tok), 0o600); err != nil {
		return nil, err
	}
	kubeconfig, err := st.API.WriteKubeconfig(filepath.Join(st.Dir, "peer-kubeconfig"), "", tokenFile)
	if err != nil {
		return nil, err
	}
	ports, err := kubeapi.FreePorts(2)
	if err != nil {
		return nil, err
	}
	metrics, probes := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	log, err := os.OpenFile(filepath.Join(st.Dir, "peer.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, append([]string{"--kubeconfig=" + kubeconfig, "--metrics-bind-address=" + metrics,
		"--health-probe-bind-address=" + probes, "--workers=8"}, args...)...)
	cmd.Env = append(os.Environ(), "PROVISIONING_REQUEST_SELECTOR="+runLabel+"="+run)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); log.Close(); close(done) }()
	c := &contender{name: "controller-runtime peer", pid: cmd.Process.Pid, metrics: "http://" + metrics + "/metrics",
		stop: func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		}}
	if err := waitHTTP(ctx, "http://"+probes+"/readyz", done, 60*time.Second); err != nil {
		c.stop()
		return nil, fmt.Errorf("the peer: %w; %s", err, firstErrors(filepath.Join(st.Dir, "peer.log"), 3))
	}
	return c, nil
}

// firstErrors are the first n error lines of a log (or its end when it has none).
func firstErrors(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, `"level":"error"`) || strings.Contains(l, "panic") {
			if out = append(out, l); len(out) == n {
				break
			}
		}
	}
	if len(out) == 0 {
		return "its log ends: " + stack.Tail(path, 3)
	}
	return "its log: " + strings.Join(out, " / ")
}

// waitHTTP waits until url answers 200, the process ends or the timeout passes.
func waitHTTP(ctx context.Context, url string, done <-chan struct{}, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-done:
			return fmt.Errorf("exited before it was ready")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("not ready within %s", timeout)
}

// ours is the operator as a contender.
func ours(op *stack.Operator) *contender {
	return &contender{name: "o2ims-operator", pid: op.Pid(), metrics: op.HealthURL + "/metrics",
		stop: func() { _ = op.Stop(5 * time.Second) }}
}
