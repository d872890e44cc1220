// Package kubeapi runs a real kube-apiserver and etcd on loopback for integration tests and the local run.
// The binaries are built from the Go module proxy by hack/tools.sh (downloads from dl.k8s.io are impossible
// here) and cached outside the checkout.
package kubeapi

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// AssetsEnv names a directory that already holds kube-apiserver, kubectl and etcd; when set the build
// script is not consulted (the Makefile sets it once for all test packages).
const AssetsEnv = "O2IMS_KUBE_ASSETS"

var (
	assetsOnce sync.Once
	assetsDir  string
	assetsErr  error
)

// Assets returns the directory holding the kube-apiserver, kubectl and etcd binaries, building them first
// when they are missing or stale. The build prints its own progress on stderr.
func Assets() (string, error) {
	assetsOnce.Do(func() {
		if dir := os.Getenv(AssetsEnv); dir != "" {
			assetsDir, assetsErr = dir, checkAssets(dir)
			return
		}
		root, err := RepoRoot()
		if err != nil {
			assetsErr = err
			return
		}
		var out bytes.Buffer
		cmd := exec.Command(filepath.Join(root, "hack", "tools.sh"))
		cmd.Stdout, cmd.Stderr = &out, os.Stderr
		if err := cmd.Run(); err != nil {
			assetsErr = fmt.Errorf("building the API server binaries (hack/tools.sh): %w", err)
			return
		}
		assetsDir = strings.TrimSpace(out.String())
		assetsErr = checkAssets(assetsDir)
	})
	return assetsDir, assetsErr
}

func checkAssets(dir string) error {
	for _, name := range []string{"kube-apiserver", "etcd", "kubectl"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("%s is missing from %s (%s=%q): %w", name, dir, AssetsEnv, os.Getenv(AssetsEnv), err)
		}
	}
	return nil
}

// RepoRoot is the checkout this package was compiled from; tests use it to find manifests/ and testdata/.
func RepoRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("cannot locate the repository root")
	}
	root := filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return "", fmt.Errorf("repository root %s has no go.mod: %w", root, err)
	}
	return root, nil
}
