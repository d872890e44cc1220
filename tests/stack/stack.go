// Package stack assembles the whole system on one machine: a real kube-apiserver with the shipped
// manifests applied by the real kubectl, the NetBox simulator, the simulated Porch/CAPI/Metal3 world, and
// the operator binary running as the shipped ServiceAccount. `make run-local`, the end-to-end tests, the
// chaos tests and the benchmarks all stand on it.
package stack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/world"
)

// Namespaces and names of the shipped manifests (manifests/base and the inventory component).
const (
	OperatorNamespace    = "o2ims"
	ServiceAccount       = "o2ims-operator"
	Metal3Namespace      = "metal3"
	CredentialsNamespace = "o2ims-bmc-credentials"
	netboxToken          = "0123456789abcdef0123456789abcdef01234567"
)

// Options shape a stack.
type Options struct {
	// Operator is the operator binary (make build).
	Operator string
	// Dir keeps state and logs; a temporary directory when empty.
	Dir string
	// Progress receives one line per step (nil: silent).
	Progress io.Writer
	// World tunes the simulated Porch/CAPI/Metal3.
	World world.Options
	// Hosts seeds that many free NetBox devices (with credentials Secrets); 0 runs without NetBox.
	Hosts int
	// Env adds operator environment; Args replace its arguments.
	Env  map[string]string
	Args []string
	// AsAdmin runs the operator as system:masters instead of the shipped ServiceAccount.
	AsAdmin bool
	// Logger for the in-process simulators.
	Logger *zap.Logger
}

// Stack is a running system.
type Stack struct {
	opts            Options
	Dir             string
	API             *kubeapi.Server
	Kubectl         string
	AdminKubeconfig string
	NetBox          *netboxsim.Server
	NetBoxURL       string
	World           *world.World
	// Operator is the first operator started; every one started is stopped by Stop.
	Operator   *Operator
	ownDir     bool
	netboxStop func()
	mu         sync.Mutex
	operators  []*Operator
}

func (s *Stack) progress(format string, args ...any) {
	if s.opts.Progress != nil {
		fmt.Fprintf(s.opts.Progress, format+"\n", args...)
	}
}

// Start brings everything up but the operator (StartOperator).
func Start(ctx context.Context, opts Options) (*Stack, error) {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	s := &Stack{opts: opts, Dir: opts.Dir}
	if s.Dir == "" {
		d, err := os.MkdirTemp("", "o2ims-stack-")
		if err != nil {
			return nil, err
		}
		s.Dir, s.ownDir = d, true
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			s.Stop()
		}
	}()

	assets, err := kubeapi.Assets()
	if err != nil {
		return nil, err
	}
	s.Kubectl = filepath.Join(assets, "kubectl")
	s.progress("starting etcd and kube-apiserver v1.37.2 on loopback")
	if s.API, err = kubeapi.Start(ctx, kubeapi.Options{Dir: filepath.Join(s.Dir, "kube")}); err != nil {
		return nil, err
	}
	if s.AdminKubeconfig, err = s.API.WriteKubeconfig(filepath.Join(s.Dir, "kubeconfig"), "", ""); err != nil {
		return nil, err
	}
	s.progress("installing the upstream CRDs (Porch PackageVariant, CAPI Cluster, Metal3 BareMetalHost)")
	var crds []string
	for _, n := range []string{kubeapi.PackageVariantCRD, kubeapi.ClusterCRD, kubeapi.BareMetalHostCRD, kubeapi.HardwareDataCRD} {
		p, err := kubeapi.ReferenceCRD(n)
		if err != nil {
			return nil, err
		}
		crds = append(crds, p)
	}
	if err := s.API.InstallCRDs(ctx, crds...); err != nil {
		return nil, err
	}
	// The administrator's part (docs/deploying.md): the namespaces the operator works in but does not own.
	s.progress("creating the namespaces %s and %s, as the administrator does", Metal3Namespace, CredentialsNamespace)
	for _, ns := range []string{Metal3Namespace, CredentialsNamespace} {
		if err := s.API.EnsureNamespace(ctx, ns); err != nil {
			return nil, err
		}
	}
	s.progress("applying the shipped manifests: kubectl apply -k of manifests/crd, manifests/base and the inventory component")
	site := filepath.Join(s.Dir, "site")
	if err := kubeapi.WriteKustomization(site, true, "inventory"); err != nil {
		return nil, err
	}
	if out, err := s.KubectlRun(ctx, "apply", "-k", site); err != nil {
		return nil, fmt.Errorf("kubectl apply -k %s: %w\n%s", site, err, out)
	}
	crd, err := kubeapi.RepoFile(kubeapi.ProvisioningRequestCRD)
	if err != nil {
		return nil, err
	}
	if err := s.API.InstallCRDs(ctx, crd); err != nil { // waits until served
		return nil, err
	}

	if opts.Hosts > 0 {
		if err := s.startNetBox(ctx, opts.Hosts); err != nil {
			return nil, err
		}
	}
	s.progress("starting the simulated world (Porch, Cluster API, Metal3)")
	wopts := opts.World
	wopts.Dynamic, wopts.Logger = s.API.AdminDynamic(), opts.Logger.Named("world")
	if wopts.Metal3Namespace == "" {
		wopts.Metal3Namespace = Metal3Namespace
	}
	if s.World, err = world.Start(ctx, wopts); err != nil {
		return nil, err
	}
	ok = true
	return s, nil
}

// ApplyManifests runs the real `kubectl apply -k <dir>` (relative to the repository) as the admin.
func (s *Stack) ApplyManifests(ctx context.Context, dir string) error {
	path, err := kubeapi.RepoFile(dir)
	if err != nil {
		return err
	}
	out, err := s.KubectlRun(ctx, "apply", "-k", path)
	if err != nil {
		return fmt.Errorf("kubectl apply -k %s: %w\n%s", dir, err, out)
	}
	return nil
}

// KubectlRun runs the real kubectl with the admin kubeconfig.
func (s *Stack) KubectlRun(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, s.Kubectl, append([]string{"--kubeconfig", s.AdminKubeconfig}, args...)...)
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	return b.String(), err
}

func (s *Stack) startNetBox(ctx context.Context, n int) error {
	s.progress("starting the NetBox 4.6 simulator with %d free hosts and their BMC credentials", n)
	s.NetBox = netboxsim.New(netboxsim.Options{Tokens: []string{netboxToken}})
	for _, f := range netboxsim.StandardFields() {
		s.NetBox.AddCustomField(f)
	}
	s.NetBox.AddCustomField(netboxsim.CustomField{Name: "cpu_cores", Type: "integer", FilterLogic: "exact", Label: "CPU cores"})
	s.NetBox.AddCustomField(netboxsim.CustomField{Name: "rack", Type: "text", FilterLogic: "exact", Label: "Rack"})
	ts := s.NetBox.Start()
	s.NetBoxURL = ts.URL
	s.netboxStop = s.NetBox.Close
	cs := s.API.AdminClientset()
	for i := 0; i < n; i++ {
		cores := 16
		if i%3 == 0 {
			cores = 32
		}
		id := s.NetBox.AddDevice(netboxsim.Device{Name: fmt.Sprintf("server-%02d", i+1), Status: "staged", Site: "edge-lab", Custom: map[string]any{
			"o2ims_managed":     true,
			"o2ims_bmc_address": fmt.Sprintf("redfish-virtualmedia+https://10.20.0.%d/redfish/v1/Systems/1", i+10),
			"o2ims_boot_mac":    fmt.Sprintf("52:54:00:aa:%02x:%02x", i/256, i%256),
			"cpu_cores":         cores,
			"rack":              fmt.Sprintf("r%d", i%4+1),
		}})
		_, err := cs.CoreV1().Secrets(CredentialsNamespace).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Name:   fmt.Sprintf("bmc-server-%02d", i+1),
				Labels: map[string]string{fmt.Sprintf("o2ims.provisioning.oran.org/netbox-device-%d", id): "true"},
			},
			Data: map[string][]byte{"username": []byte("admin"), "password": []byte("lab-password")},
		}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(s.Dir, "netbox-token"), []byte(netboxToken), 0o600)
}

// NetBoxToken is the simulator's API token.
func (s *Stack) NetBoxToken() string { return netboxToken }

// Stop stops the operator and everything else, leaving no process behind. It reports an operator that
// did not exit 0 on SIGTERM within its grace (one that a test killed on purpose is not reported).
func (s *Stack) Stop() error {
	s.mu.Lock()
	ops := s.operators
	s.mu.Unlock()
	var errs []error
	for _, o := range ops {
		if err := o.Stop(5 * time.Second); err != nil && !o.killed {
			errs = append(errs, fmt.Errorf("operator (log %s): %w", o.Log, err))
		}
	}
	if s.World != nil {
		s.World.Stop()
	}
	if s.netboxStop != nil {
		s.netboxStop()
	}
	if s.API != nil {
		s.API.Stop()
	}
	if s.ownDir {
		_ = os.RemoveAll(s.Dir)
	}
	return errors.Join(errs...)
}

func envList(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}
