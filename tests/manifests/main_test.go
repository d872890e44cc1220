// Package manifests proves what manifests/ ships, with the real kubectl and the real kube-apiserver: the
// add-on Components stack in any subset, removing one deletes nothing shared, and the NBI they expose is
// TLS with authentication (docs/deploying.md).
package manifests_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// The upstream CRDs the chain and the inventory name (the ProvisioningRequest CRD is applied by the tests
// from manifests/crd, as an administrator does).
func upstreamCRDs() ([]string, error) {
	var out []string
	for _, n := range []string{kubeapi.PackageVariantCRD, kubeapi.ClusterCRD, kubeapi.BareMetalHostCRD} {
		p, err := kubeapi.ReferenceCRD(n)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func TestMain(m *testing.M) {
	code := kubeapi.RunMain(m, upstreamCRDs)
	if builtBinary != "" {
		os.RemoveAll(filepath.Dir(builtBinary))
	}
	os.Exit(code)
}

// kubectl runs the real kubectl with the shared API server's admin kubeconfig (rendering needs none).
func kubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	assets, err := kubeapi.Assets()
	require.NoError(t, err)
	if args[0] != "kustomize" {
		kc, err := kubeapi.Shared(t).WriteKubeconfig("", "", "")
		require.NoError(t, err)
		args = append([]string{"--kubeconfig", kc}, args...)
	}
	cmd := exec.Command(filepath.Join(assets, "kubectl"), args...)
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err = cmd.Run()
	return b.String(), err
}

// objects are rendered documents by "Kind/namespace/name".
type objects map[string]*unstructured.Unstructured

func (o objects) keys() []string {
	var ks []string
	for k := range o {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func parse(t *testing.T, rendered string) objects {
	t.Helper()
	out := objects{}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(rendered), 4096)
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if m == nil {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		key := u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
		require.NotContains(t, out, key, "rendered twice")
		out[key] = u
	}
	return out
}

// render writes a kustomization of manifests/crd, manifests/base and the components, as README's
// "Deploying" has the administrator write it, and renders it with the real `kubectl kustomize`.
func render(t *testing.T, components ...string) (objects, string) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, kubeapi.WriteKustomization(dir, true, components...))
	out, err := kubectl(t, "kustomize", dir)
	require.NoError(t, err, "kubectl kustomize with %v:\n%s", components, out)
	return parse(t, out), dir
}

// renderOutput is render's kubectl output and error, for the stacks kustomize must refuse.
func renderOutput(t *testing.T, components ...string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, kubeapi.WriteKustomization(dir, true, components...))
	return kubectl(t, "kustomize", dir)
}

func deployment(t *testing.T, objs objects) *appsv1.Deployment {
	t.Helper()
	u := objs["Deployment/o2ims/o2ims-operator"]
	require.NotNil(t, u, "no Deployment o2ims/o2ims-operator in %v", objs.keys())
	var d appsv1.Deployment
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d))
	return &d
}

var (
	buildOnce   sync.Once
	builtBinary string
	buildErr    error
)

// operatorBinary builds the operator once for the package (hack/build.sh, as make build does).
func operatorBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		root, err := kubeapi.RepoRoot()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "o2ims-manifests-")
		if err != nil {
			buildErr = err
			return
		}
		builtBinary = filepath.Join(dir, "o2ims-operator")
		cmd := exec.Command(filepath.Join(root, "hack", "build.sh"), builtBinary, "manifests-test")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("hack/build.sh: %w\n%s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return builtBinary
}
