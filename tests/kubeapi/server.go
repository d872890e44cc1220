package kubeapi

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Identities the server knows from its static token file. The admin is in system:masters; the tester has
// no permissions until a test binds some, so RBAC decides what it may do.
const (
	AdminUser  = "admin"
	TesterUser = "tester"
)

// Options tune a server; the zero value is what most tests want.
type Options struct {
	// Dir holds data, certificates and logs; a temporary directory (removed on Stop) when empty.
	Dir string
	// Out receives the processes' combined output in addition to the log files (e.g. os.Stderr).
	Out io.Writer
	// ExtraTokens adds static tokens: user name → groups.
	ExtraTokens map[string][]string
	// Audit makes the API server log every request it answers (at level Metadata: who, verb, object,
	// status) to Dir/audit.log; AuditEvents reads it back.
	Audit bool
}

// Server is a running etcd + kube-apiserver pair bound to loopback.
type Server struct {
	Dir        string
	URL        string // https://127.0.0.1:<port>
	CAFile     string
	AdminToken string
	// TesterToken authenticates TesterUser, who has no permissions unless a test grants them.
	TesterToken string
	// Tokens holds every static token by user name (admin, tester and ExtraTokens).
	Tokens map[string]string

	opts      Options
	ownDir    bool
	etcdPort  int
	peerPort  int
	apiPort   int
	mu        sync.Mutex
	etcd      *process
	apiserver *process
}

type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	log  string
}

// Start builds (if needed) and starts etcd and kube-apiserver, and waits until the API server is ready.
func Start(ctx context.Context, opts Options) (*Server, error) {
	assets, err := Assets()
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, Dir: opts.Dir, Tokens: map[string]string{}}
	if s.Dir == "" {
		if s.Dir, err = os.MkdirTemp("", "kubeapi-"); err != nil {
			return nil, err
		}
		s.ownDir = true
	}
	if err := s.prepare(); err != nil {
		s.cleanupDir()
		return nil, err
	}
	// Free ports are picked by binding and releasing them; a collision with another process between the two
	// is rare but possible, so a failed start is retried on new ports.
	for attempt := 0; ; attempt++ {
		err = s.startAll(ctx, assets)
		if err == nil {
			return s, nil
		}
		s.stopProcesses()
		if attempt == 2 || ctx.Err() != nil {
			s.cleanupDir()
			return nil, err
		}
	}
}

func (s *Server) prepare() error {
	for _, d := range []string{"etcd", "certs"} {
		if err := os.MkdirAll(filepath.Join(s.Dir, d), 0o700); err != nil {
			return err
		}
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(filepath.Join(s.Dir, "sa.key"), keyPEM, 0o600); err != nil {
		return err
	}
	users := map[string][]string{AdminUser: {"system:masters"}, TesterUser: {"testers"}}
	for u, g := range s.opts.ExtraTokens {
		users[u] = g
	}
	var lines []string
	for user, groups := range users {
		tok := randomToken()
		s.Tokens[user] = tok
		lines = append(lines, fmt.Sprintf("%s,%s,%s-uid,%q", tok, user, user, strings.Join(groups, ",")))
	}
	s.AdminToken, s.TesterToken = s.Tokens[AdminUser], s.Tokens[TesterUser]
	if s.opts.Audit {
		if err := os.WriteFile(filepath.Join(s.Dir, "audit-policy.yaml"), []byte(auditPolicy), 0o600); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(s.Dir, "tokens.csv"), []byte(strings.Join(lines, "\n")+"\n"), 0o600)
}

func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *Server) startAll(ctx context.Context, assets string) error {
	ports, err := FreePorts(3)
	if err != nil {
		return err
	}
	s.etcdPort, s.peerPort, s.apiPort = ports[0], ports[1], ports[2]
	s.URL = fmt.Sprintf("https://127.0.0.1:%d", s.apiPort)
	s.CAFile = filepath.Join(s.Dir, "certs", "apiserver.crt")

	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", s.etcdPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", s.peerPort)
	s.etcd, err = s.spawn(filepath.Join(assets, "etcd"), "etcd.log",
		"--data-dir="+filepath.Join(s.Dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL, "--name=default", "--unsafe-no-fsync",
		"--log-level=warn")
	if err != nil {
		return err
	}
	if err := s.StartAPIServer(ctx); err != nil {
		return err
	}
	return nil
}

// StartAPIServer (re)starts kube-apiserver on the same port and etcd; chaos tests stop and restart it
// while etcd keeps the data.
func (s *Server) StartAPIServer(ctx context.Context) error {
	assets, err := Assets()
	if err != nil {
		return err
	}
	args := []string{
		fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", s.etcdPort),
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", s.apiPort),
		"--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none",
		"--cert-dir=" + filepath.Join(s.Dir, "certs"),
		"--token-auth-file=" + filepath.Join(s.Dir, "tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-account-issuer=" + s.URL,
		"--service-account-key-file=" + filepath.Join(s.Dir, "sa.key"),
		"--service-account-signing-key-file=" + filepath.Join(s.Dir, "sa.key"),
		"--service-cluster-ip-range=10.0.0.0/24",
		"--enable-priority-and-fairness=false",
		"-v=0",
	}
	if s.opts.Audit {
		args = append(args, "--audit-policy-file="+filepath.Join(s.Dir, "audit-policy.yaml"),
			"--audit-log-path="+s.AuditLog(), "--audit-log-format=json", "--audit-log-mode=blocking")
	}
	s.mu.Lock()
	s.apiserver, err = s.spawn(filepath.Join(assets, "kube-apiserver"), "kube-apiserver.log", args...)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.waitReady(ctx)
}

// StopAPIServer stops kube-apiserver only (etcd keeps running).
func (s *Server) StopAPIServer() {
	s.mu.Lock()
	p := s.apiserver
	s.apiserver = nil
	s.mu.Unlock()
	p.stop()
}

func (s *Server) spawn(bin, logName string, args ...string) (*process, error) {
	logPath := filepath.Join(s.Dir, logName)
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	var out io.Writer = f
	if s.opts.Out != nil {
		out = io.MultiWriter(f, s.opts.Out)
	}
	cmd.Stdout, cmd.Stderr = out, out
	// Pdeathsig: if the test binary dies, the kernel kills the servers too, so no process is left behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", filepath.Base(bin), err)
	}
	p := &process{cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *process) stop() {
	if p == nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (s *Server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // only probing readiness; the real clients verify the CA
	}}
	var last string
	for {
		s.mu.Lock()
		api, etcd := s.apiserver, s.etcd
		s.mu.Unlock()
		if etcd.exited() {
			return fmt.Errorf("etcd exited: %v\n%s", etcd.err, tail(etcd.log))
		}
		if api.exited() {
			return fmt.Errorf("kube-apiserver exited: %v\n%s", api.err, tail(api.log))
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+s.AdminToken)
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				_, err := os.Stat(s.CAFile)
				if err == nil {
					return s.waitDefaultNamespace(ctx)
				}
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, body)
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver not ready (%s): %w\n%s", last, ctx.Err(), tail(api.log))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitDefaultNamespace waits for the bootstrap controller to create "default", where tests put namespaced
// objects first.
func (s *Server) waitDefaultNamespace(ctx context.Context) error {
	cs := kubernetes.NewForConfigOrDie(s.AdminConfig())
	for {
		if _, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("namespace default never appeared: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// FreePorts picks n free loopback ports (bound and released: another process could take one in between,
// which callers survive by retrying).
func FreePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Stop stops both processes and removes a temporary directory.
func (s *Server) Stop() {
	s.stopProcesses()
	s.cleanupDir()
}

func (s *Server) stopProcesses() {
	s.mu.Lock()
	api, etcd := s.apiserver, s.etcd
	s.apiserver, s.etcd = nil, nil
	s.mu.Unlock()
	api.stop()
	etcd.stop()
}

func (s *Server) cleanupDir() {
	if s.ownDir {
		_ = os.RemoveAll(s.Dir)
	}
}

// ConfigForToken is a client config for the server authenticated by a bearer token.
func (s *Server) ConfigForToken(token string) *rest.Config {
	return &rest.Config{
		Host:            s.URL,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAFile: s.CAFile},
		QPS:             500,
		Burst:           1000,
		// Tests and simulators use deprecated APIs on purpose (CAPI v1beta1); the warnings are noise.
		WarningHandler: rest.NoWarnings{},
	}
}

// AdminConfig is a client config for the system:masters admin.
func (s *Server) AdminConfig() *rest.Config { return s.ConfigForToken(s.AdminToken) }

// AdminDynamic is a dynamic client for the admin.
func (s *Server) AdminDynamic() dynamic.Interface { return dynamic.NewForConfigOrDie(s.AdminConfig()) }

// AdminClientset is a typed client for the admin.
func (s *Server) AdminClientset() kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(s.AdminConfig())
}

// WriteKubeconfig writes a kubeconfig for the given token (the admin's when empty) and returns its path.
// A token file is referenced rather than inlined when tokenFile is set, so tests can rotate it.
func (s *Server) WriteKubeconfig(path, token, tokenFile string) (string, error) {
	if path == "" {
		path = filepath.Join(s.Dir, "kubeconfig")
	}
	if token == "" && tokenFile == "" {
		token = s.AdminToken
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubeapi"] = &clientcmdapi.Cluster{Server: s.URL, CertificateAuthority: s.CAFile}
	cfg.AuthInfos["user"] = &clientcmdapi.AuthInfo{Token: token, TokenFile: tokenFile}
	cfg.Contexts["kubeapi"] = &clientcmdapi.Context{Cluster: "kubeapi", AuthInfo: "user"}
	cfg.CurrentContext = "kubeapi"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", err
	}
	return path, nil
}

// Running reports whether both processes are alive.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.etcd != nil && s.apiserver != nil && !s.etcd.exited() && !s.apiserver.exited()
}

// PIDs lists the process ids (for tests that check nothing is left behind).
func (s *Server) PIDs() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var pids []int
	for _, p := range []*process{s.etcd, s.apiserver} {
		if p != nil {
			pids = append(pids, p.cmd.Process.Pid)
		}
	}
	return pids
}
