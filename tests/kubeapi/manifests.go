package kubeapi

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The optional parts of manifests/, each a kustomize Component stacked on manifests/crd and manifests/base
// (docs/deploying.md), in the order manifests/production lists them.
var Components = []string{"inventory", "nbi-auth", "nbi-tls", "ha", "monitoring"}

// WriteKustomization writes dir/kustomization.yaml as an administrator's own kustomization does it: the
// resources manifests/crd and manifests/base of this checkout and the given components (names under
// manifests/, e.g. "inventory" or "nbi-tls/cert-manager"). kustomize takes only relative paths, so they
// are relative to dir. Without crd, the CRD is left out (installed apart).
func WriteKustomization(dir string, crd bool, components ...string) error {
	manifests, err := RepoFile("manifests")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(abs, manifests)
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n")
	if crd {
		fmt.Fprintf(&b, "  - %s\n", filepath.ToSlash(filepath.Join(rel, "crd")))
	}
	fmt.Fprintf(&b, "  - %s\n", filepath.ToSlash(filepath.Join(rel, "base")))
	if len(components) > 0 {
		b.WriteString("components:\n")
		for _, c := range components {
			fmt.Fprintf(&b, "  - %s\n", filepath.ToSlash(filepath.Join(rel, c)))
		}
	}
	return os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(b.String()), 0o644)
}
