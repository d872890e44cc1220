package pythonimage

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/tests/kopf140"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/world"
)

// A renamed scenario is the capture for another request name: nothing of the old name or label value is
// left, every reference agrees, and kopf 1.40.1 still finds its diff-base equal to the object.
func TestRenamingKeepsTheCaptureConsistent(t *testing.T) {
	as := As{Name: "renamed-1", Label: "lbl", Template: "tmpl-x"}
	for _, s := range All {
		o, err := Load(s, as)
		require.NoError(t, err, s)
		for _, u := range []*unstructured.Unstructured{o.Request, o.PackageVariant, o.Cluster} {
			if u == nil {
				continue
			}
			raw, err := json.Marshal(u.Object)
			require.NoError(t, err)
			assert.NotContains(t, string(raw), "pi-fx-", "%s: the captured name is left in %s", s, u.GetKind())
			assert.NotContains(t, string(raw), `"`+Template+`"`, "%s: the captured template is left in %s", s, u.GetKind())
		}
		pr, pv := o.Request, o.PackageVariant
		assert.Equal(t, as.Name, pr.GetName(), s)
		assert.Equal(t, "lbl", pr.GetLabels()[ScenarioLabel], s)
		cluster, _, _ := unstructured.NestedString(pr.Object, "spec", "templateParameters", "clusterName")
		assert.Equal(t, as.ClusterName(), cluster, s)
		tmpl, _, _ := unstructured.NestedString(pr.Object, "spec", "templateName")
		assert.Equal(t, "tmpl-x", tmpl, s)
		assert.Equal(t, as.Name, pv.GetName(), s)
		down, _, _ := unstructured.NestedString(pv.Object, "spec", "downstream", "package")
		assert.Equal(t, as.ClusterName(), down, s)
		up, _, _ := unstructured.NestedString(pv.Object, "spec", "upstream", "package")
		assert.Equal(t, "tmpl-x", up, s)
		_, hasPipeline, _ := unstructured.NestedSlice(pv.Object, "spec", "pipeline", "mutators")
		assert.True(t, hasPipeline, "%s: the image always writes pipeline.mutators", s)
		if o.Cluster != nil {
			assert.Equal(t, as.ClusterName(), o.Cluster.GetName(), s)
			assert.Equal(t, "tmpl-x", o.Cluster.GetAnnotations()[world.AnnotationTemplate], s)
		}
		r := kopf140.Read(pr)
		assert.Empty(t, r.Problems, s)
		if s == Fulfilled {
			assert.True(t, r.SeesNoChange(pr), "the renamed diff-base no longer matches its object")
			assert.Contains(t, pr.GetAnnotations()[kopf140.Prefix+"/last-handled-configuration"], `"lbl"`, "the label in the diff-base")
		}
	}
	_, err := Load(Labels, As{})
	assert.Error(t, err, "an unnamed copy would collide with every other test's")
}
