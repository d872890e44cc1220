// Package image builds the OCI image as `make image` does (hack/image.sh, Debian's podman, no registry)
// and runs it as a pod runs it: in-cluster configuration only (KUBERNETES_SERVICE_HOST/PORT and a
// ServiceAccount token with ca.crt mounted read-only where the kubelet mounts them), a read-only root, no
// capabilities, against the real kube-apiserver with the shipped manifests applied and the simulated
// Porch/CAPI running in this process. Where podman is not installed, every test skips and says so.
package image

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/world"
	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

var (
	// skipReason is set when the image cannot be built here (no podman): every test skips with it.
	skipReason string
	// image is the tag this run built (removed at the end).
	image string
	// root is the checkout (Dockerfile, hack/, manifests/).
	root string
	st   *stack.Stack
	// saDir holds what the kubelet mounts at /var/run/secrets/kubernetes.io/serviceaccount.
	saDir string
)

const imageVersion = "image-test"

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	if _, err := exec.LookPath("podman"); err != nil {
		skipReason = "podman is not installed (apt-get install podman runc): the image is neither built nor run here"
		fmt.Fprintln(os.Stderr, "tests/image:", skipReason)
		return m.Run()
	}
	var err error
	if root, err = kubeapi.RepoRoot(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	image = "localhost/o2ims-operator-test:" + randomHex(6)
	start := time.Now()
	build := exec.Command(filepath.Join(root, "hack", "image.sh"), image, imageVersion)
	build.Dir = root
	var out bytes.Buffer
	build.Stdout, build.Stderr = &out, &out
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "tests/image: hack/image.sh %s: %v\n%s", image, err, out.String())
		return 1
	}
	defer func() { _ = exec.Command("podman", "rmi", "-f", image).Run() }()
	fmt.Fprintf(os.Stderr, "tests/image: built %s with hack/image.sh in %s\n", image, time.Since(start).Round(100*time.Millisecond))

	dir, err := os.MkdirTemp("", "o2ims-image-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	st, err = stack.Start(ctx, stack.Options{
		Dir:   filepath.Join(dir, "stack"),
		World: world.Options{RenderDelay: 200 * time.Millisecond, ProvisionDelay: 400 * time.Millisecond},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "tests/image: starting the API server and the simulated world:", err)
		return 1
	}
	defer st.Stop()
	if saDir, err = serviceAccountMount(ctx, filepath.Join(dir, "serviceaccount")); err != nil {
		fmt.Fprintln(os.Stderr, "tests/image:", err)
		return 1
	}
	return m.Run()
}

// serviceAccountMount writes what the kubelet projects for the shipped ServiceAccount: a token from
// `kubectl create token`, the API server's CA as ca.crt, and the namespace. Readable by any uid, as the
// kubelet's default mode 0644 leaves them (the image's user is not the files' owner).
func serviceAccountMount(ctx context.Context, dir string) (string, error) {
	out, err := st.KubectlRun(ctx, "create", "token", stack.ServiceAccount, "-n", stack.OperatorNamespace, "--duration=2h")
	if err != nil {
		return "", fmt.Errorf("kubectl create token: %w\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n") // kubectl may warn before the token
	token := strings.TrimSpace(lines[len(lines)-1])
	ca, err := os.ReadFile(st.API.CAFile)
	if err != nil {
		return "", err
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	for name, data := range map[string][]byte{"token": []byte(token), "ca.crt": ca, "namespace": []byte(stack.OperatorNamespace)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return "", err
		}
	}
	// MkdirTemp made the parent 0700: the image's user must be able to reach the mount source too.
	return dir, os.Chmod(filepath.Dir(dir), 0o755)
}

func need(t *testing.T) {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// podman runs podman with the options this machine's podman 4.3 needs to run a container at all: runc
// with cgroupfs (crun refuses cgroups in hybrid mode). It returns stdout and stderr apart.
func podman(args ...string) (stdout, stderr string, err error) {
	cmd := exec.Command("podman", append([]string{"--runtime", "runc", "--cgroup-manager", "cgroupfs"}, args...)...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// ulimits are the container's limits, at or below this process's: podman refuses to raise them. Its
// conmon runs with at most 32768 processes (measured on Debian 12), so nproc stays below that too.
func ulimits() []string {
	limit := func(res int, most uint64) uint64 {
		var r syscall.Rlimit
		if err := syscall.Getrlimit(res, &r); err != nil || r.Cur > most {
			return most
		}
		return r.Cur
	}
	const rlimitNproc = 6 // RLIMIT_NPROC on Linux
	nofile, nproc := limit(syscall.RLIMIT_NOFILE, 65536), limit(rlimitNproc, 4096)
	return []string{"--ulimit", fmt.Sprintf("nofile=%d:%d", nofile, nofile), "--ulimit", fmt.Sprintf("nproc=%d:%d", nproc, nproc)}
}
