package external

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// The names are the upstream CRDs' (byte-for-byte copies in testdata/reference/crds): group, kind, plural,
// and a version the CRD serves.
func TestNamesAreTheUpstreamCRDs(t *testing.T) {
	for _, c := range []struct {
		file, kind string
		gvr        schema.GroupVersionResource
	}{
		{"config.porch.kpt.dev_packagevariants.yaml", PackageVariantKind, PackageVariantGVR},
		{"metal3.io_baremetalhosts.yaml", BareMetalHostKind, BareMetalHostGVR},
		{"cluster.x-k8s.io_clusters.yaml", ClusterKind, ClusterGVR("v1beta2")},
		{"cluster.x-k8s.io_clusters.yaml", ClusterKind, ClusterGVR("v1beta1")},
	} {
		t.Run(c.gvr.String(), func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "reference", "crds", c.file))
			require.NoError(t, err)
			var crd struct {
				Spec struct {
					Group    string
					Names    struct{ Kind, Plural string }
					Versions []struct {
						Name   string
						Served bool
					}
				}
			}
			require.NoError(t, yaml.Unmarshal(raw, &crd))
			assert.Equal(t, crd.Spec.Group, c.gvr.Group)
			assert.Equal(t, crd.Spec.Names.Kind, c.kind)
			assert.Equal(t, crd.Spec.Names.Plural, c.gvr.Resource)
			served := map[string]bool{}
			for _, v := range crd.Spec.Versions {
				served[v.Name] = v.Served
			}
			assert.True(t, served[c.gvr.Version], "%s serves %s", c.file, c.gvr.Version)
		})
	}
	assert.Equal(t, PorchGroup, PackageVariantGVR.Group)
	assert.Equal(t, Metal3Group, BareMetalHostGVR.Group)
}
