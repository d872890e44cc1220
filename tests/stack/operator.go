package stack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// Operator is the operator binary running as a child process.
type Operator struct {
	cmd        *exec.Cmd
	done       chan struct{}
	err        error
	Log        string
	NBIURL     string
	HealthURL  string
	Kubeconfig string
	TokenFile  string
	stopOnce   sync.Once
	cancelRot  context.CancelFunc
	killed     bool // ended by Kill: its exit status says nothing about the operator
}

// StartOperator runs the operator binary as the shipped ServiceAccount (its token in a file the stack
// rotates, as the kubelet does) and waits until it is ready.
func (s *Stack) StartOperator(ctx context.Context, extraEnv map[string]string) (*Operator, error) {
	return s.StartOperatorWith(ctx, extraEnv, nil)
}

// StartOperatorWith is StartOperator with arguments added after the stack's (e.g. --leader-elect).
func (s *Stack) StartOperatorWith(ctx context.Context, extraEnv map[string]string, extraArgs []string) (*Operator, error) {
	if s.opts.Operator == "" {
		return nil, errors.New("stack: Options.Operator (the binary) is required")
	}
	ports, err := kubeapi.FreePorts(2)
	if err != nil {
		return nil, err
	}
	o := &Operator{
		done:      make(chan struct{}),
		Log:       filepath.Join(s.Dir, "operator.log"),
		NBIURL:    fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
		HealthURL: fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		TokenFile: filepath.Join(s.Dir, "operator-token"),
	}
	if s.opts.AsAdmin {
		if err := os.WriteFile(o.TokenFile, []byte(s.API.AdminToken), 0o600); err != nil {
			return nil, err
		}
	} else if err := s.writeServiceAccountToken(ctx, o.TokenFile); err != nil {
		return nil, err
	}
	if o.Kubeconfig, err = s.API.WriteKubeconfig(filepath.Join(s.Dir, "operator-kubeconfig"), "", o.TokenFile); err != nil {
		return nil, err
	}
	env := map[string]string{
		"PATH": os.Getenv("PATH"), "HOME": os.Getenv("HOME"),
		"POD_NAMESPACE": OperatorNamespace, "LOG_LEVEL": "INFO",
		"NBI_HOST": "127.0.0.1", "NBI_PORT": strconv.Itoa(ports[0]),
		"METAL3_NAMESPACE": Metal3Namespace, "BMC_CREDENTIALS_NAMESPACE": CredentialsNamespace,
		// The simulated Porch renders an updated spec at once; the production 30 s would only slow re-drives.
		"RENDER_SETTLE": "1",
	}
	if s.NetBox != nil {
		env["NETBOX_URL"] = s.NetBoxURL
		env["NETBOX_ALLOW_HTTP"] = "true"
		env["NETBOX_TOKEN_FILE"] = filepath.Join(s.Dir, "netbox-token")
		// The tests' SMO receivers listen on loopback, which the callback policy refuses by default; the
		// operator's own listeners and the API server stay refused (their exact endpoints).
		env["CALLBACK_ALLOW_CIDRS"] = "127.0.0.0/8"
	}
	for k, v := range s.opts.Env {
		env[k] = v
	}
	for k, v := range extraEnv {
		env[k] = v
	}
	args := append([]string{
		"--all-namespaces", "--kubeconfig=" + o.Kubeconfig,
		fmt.Sprintf("--liveness=http://127.0.0.1:%d/healthz", ports[1]), "--log-format=console",
	}, s.opts.Args...)
	args = append(args, extraArgs...)
	logFile, err := os.OpenFile(o.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	o.cmd = exec.Command(s.opts.Operator, args...)
	o.cmd.Env = envList(env)
	o.cmd.Stdout, o.cmd.Stderr = logFile, logFile
	// The operator dies with us (no process left behind), but in a process group of its own so a signal
	// to it is not a signal to us.
	o.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := o.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting the operator: %w", err)
	}
	go func() {
		o.err = o.cmd.Wait()
		logFile.Close()
		close(o.done)
	}()
	rotCtx, cancel := context.WithCancel(context.Background())
	o.cancelRot = cancel
	if !s.opts.AsAdmin {
		go s.rotateToken(rotCtx, o.TokenFile)
	}
	if err := o.waitReady(ctx, 90*time.Second); err != nil {
		_ = o.Stop(time.Second)
		return nil, err
	}
	s.mu.Lock()
	if s.Operator == nil {
		s.Operator = o
	}
	s.operators = append(s.operators, o)
	s.mu.Unlock()
	return o, nil
}

func (s *Stack) writeServiceAccountToken(ctx context.Context, path string) error {
	tok, err := s.API.ServiceAccountToken(ctx, OperatorNamespace, ServiceAccount, "")
	if err != nil {
		return fmt.Errorf("token for %s/%s: %w", OperatorNamespace, ServiceAccount, err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(tok), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path) // atomic, as the kubelet swaps projected tokens
}

// rotateToken replaces the token well before it expires, as the kubelet does for projected tokens.
func (s *Stack) rotateToken(ctx context.Context, path string) {
	t := time.NewTicker(20 * time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = s.writeServiceAccountToken(ctx, path)
		}
	}
}

func (o *Operator) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	for {
		select {
		case <-o.done:
			return fmt.Errorf("the operator exited (%v) before it was ready:\n%s", o.err, Tail(o.Log, 30))
		default:
		}
		if resp, err := client.Get(o.HealthURL + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the operator was not ready within %s:\n%s", timeout, Tail(o.Log, 30))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop sends SIGTERM and waits up to timeout (then SIGKILL). It returns the process's exit error.
func (o *Operator) Stop(timeout time.Duration) error {
	o.stopOnce.Do(func() {
		if o.cancelRot != nil {
			o.cancelRot()
		}
		_ = o.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-o.done:
		case <-time.After(timeout):
			_ = syscall.Kill(-o.cmd.Process.Pid, syscall.SIGKILL)
			<-o.done
		}
	})
	return o.err
}

// Kill ends the operator with SIGKILL, as a node failure or the OOM killer would.
func (o *Operator) Kill() {
	o.stopOnce.Do(func() {
		if o.cancelRot != nil {
			o.cancelRot()
		}
		o.killed = true
		_ = syscall.Kill(-o.cmd.Process.Pid, syscall.SIGKILL)
		<-o.done
	})
}

// Done is closed when the process has exited; Err is its exit error then.
func (o *Operator) Done() <-chan struct{} { return o.done }

// Err is the process's exit error (nil for exit 0), valid once Done is closed.
func (o *Operator) Err() error { return o.err }

// Pid is the operator's process id.
func (o *Operator) Pid() int { return o.cmd.Process.Pid }

// Cmd is the running command (tests signal it).
func (o *Operator) Cmd() *exec.Cmd { return o.cmd }
