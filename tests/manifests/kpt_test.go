package manifests_test

import (
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/filters"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// clusterScoped are the kinds the packages hold that have no namespace; every other object must have one
// (a namespaced object without one lands wherever the applier's context points).
var clusterScoped = map[string]bool{
	"Namespace": true, "CustomResourceDefinition": true, "ClusterRole": true, "ClusterRoleBinding": true,
}

// kptRead reads a directory as a kpt package: kyaml's LocalPackageReader, the reader kpt itself uses, on
// every YAML and JSON file (.krmignore honoured), with the options of a reader that stops at subpackages or
// one that does not. What kpt applies leaves out the resources annotated config.kubernetes.io/local-config
// (the Kptfile, the kustomizations). Every document must be a KRM resource, as kpt requires.
func kptRead(t *testing.T, dir string, subpackages bool, packageFile string) objects {
	t.Helper()
	nodes, err := kio.LocalPackageReader{
		PackagePath: dir, MatchFilesGlob: kio.MatchAll, PackageFileName: packageFile,
		IncludeSubpackages: subpackages, OmitReaderAnnotations: true,
	}.Read()
	require.NoError(t, err, dir)
	nodes, err = (&filters.IsLocalConfig{}).Filter(nodes) // local-config left out, as kpt applies
	require.NoError(t, err)
	out := objects{}
	for _, n := range nodes {
		meta, err := n.GetMeta()
		require.NoError(t, err)
		require.NotEmpty(t, meta.APIVersion, "a document of %s without apiVersion: %s", dir, n.MustString())
		require.NotEmpty(t, meta.Kind, "a document of %s without kind: %s", dir, n.MustString())
		require.NotEmpty(t, meta.Name, "a document of %s without a name: %s", dir, n.MustString())
		key := meta.Kind + "/" + meta.Namespace + "/" + meta.Name
		require.NotContains(t, out, key, "%s: read twice (a partial patch kpt would take for the object?)", dir)
		out[key] = nil
		if clusterScoped[meta.Kind] {
			assert.Empty(t, meta.Namespace, "%s is cluster-scoped", key)
		} else {
			assert.NotEmpty(t, meta.Namespace, "%s has no namespace", key)
		}
	}
	return out
}

// The readers kpt may use: stopping at a subpackage's Kptfile, descending into it, or not knowing Kptfiles.
var kptReaders = []struct {
	name        string
	subpackages bool
	packageFile string
}{{"own", false, "Kptfile"}, {"with subpackages", true, "Kptfile"}, {"no package file", false, ""}}

// manifests/ read as kpt reads a package is exactly the base, as `kubectl kustomize manifests/` renders
// it (Namespace, CRD, ServiceAccount, RBAC, Deployment, Service and whatever the base holds), each object
// namespaced where it must be; none of the add-ons' objects, none of the Components' partial patches, no
// file that is not a resource (the dashboard, the plain rule file, Alertmanager's configuration).
func TestKptPackageIsExactlyTheBase(t *testing.T) {
	base, _ := render(t)
	root, err := kubeapi.RepoFile("manifests")
	require.NoError(t, err)
	kinds := map[string]bool{}
	for _, u := range base {
		kinds[u.GetKind()] = true
	}
	for _, want := range []string{"Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Deployment", "Service"} {
		assert.True(t, kinds[want], "the base has no %s", want)
	}
	for _, r := range kptReaders {
		t.Run(r.name, func(t *testing.T) {
			got := kptRead(t, root, r.subpackages, r.packageFile)
			assert.Equal(t, base.keys(), got.keys())
		})
	}
}

// The add-ons reach kpt users as kpt packages of their own (each add-on directory has its Kptfile): read as
// kpt reads it, each is exactly that add-on's own objects, the ones its Component adds to a kustomize
// rendering, namespaced; cert-manager's Certificate (an issuer to set) is a package apart from nbi-tls's.
func TestEachAddOnIsAKptPackageOfItsOwnObjects(t *testing.T) {
	packages := map[string][]string{"nbi-tls/cert-manager": {"Certificate/o2ims/o2ims-operator-nbi-tls"}}
	for c, p := range parts {
		packages[c] = p.objects
	}
	for c, p := range optIn {
		packages[c] = p.objects
	}
	for dir, want := range packages {
		t.Run(dir, func(t *testing.T) {
			path, err := kubeapi.RepoFile(filepath.Join("manifests", dir))
			require.NoError(t, err)
			require.FileExists(t, filepath.Join(path, "Kptfile"))
			want = append([]string(nil), want...)
			sort.Strings(want)
			got := kptRead(t, path, false, "Kptfile")
			assert.Equal(t, want, got.keys())

			// The same objects as the Component renders (with the base, and nbi-auth where nbi-tls needs it).
			components := append(append([]string(nil), needs[dir]...), dir)
			switch dir {
			case "nbi-tls":
				components = []string{"nbi-auth", "nbi-tls"}
			case "nbi-tls/cert-manager":
				components = []string{"nbi-auth", "nbi-tls", "nbi-tls/cert-manager"}
			}
			rendered, _ := render(t, components...)
			for _, k := range want {
				assert.Contains(t, rendered, k)
			}
		})
	}
}
