// Package pythonimage puts on a test's API server the objects the released Python O2IMS image left on a real
// one (testdata/reference/python-image-objects, captured whole; its SOURCES.md says how), so upgrade,
// adoption and rollback tests start from what the image really writes, never from what we think it writes.
package pythonimage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/world"
)

// Scenario names one captured request and its objects.
type Scenario string

// The captured requests (python-image-objects/SOURCES.md).
const (
	// Fulfilled: fulfilled by the Python image, its Cluster provisioned, kopf's diff-base written.
	Fulfilled Scenario = "fulfilled"
	// Labels: in flight with templateParameters.labels (a set-labels mutator), kopf's records persisted, its
	// PackageVariant Ready, its Cluster still provisioning.
	Labels Scenario = "labels"
	// NoLabels: the same without labels: the PackageVariant's pipeline has an empty mutators list.
	NoLabels Scenario = "nolabels"
	// Early: created just before the kill: a PackageVariant, no status, no kopf records, no Cluster yet.
	Early Scenario = "early"
)

// All is every captured scenario.
var All = []Scenario{Fulfilled, Labels, NoLabels, Early}

const (
	// ScenarioLabel is the label the capture put on its requests (value "fx").
	ScenarioLabel = "pyinterop.o2ims.test/scenario"
	// Template is the template the captured requests name.
	Template = "nephio-workload-cluster"
	dir      = "python-image-objects"
)

// As renames a scenario for a test, the way the image would have named things for another request: every
// occurrence of the captured request's name (its metadata and spec names, clusterName = name + "-c", the
// PackageVariant's name and downstream package, the Cluster's name, kopf's diff-base) becomes Name, the
// scenario label's value becomes Label (so a test's operator selects only its own requests with
// Selector), and with Template set the template name becomes Template and the Cluster is annotated for
// the simulated CAPI of tests/sim/world (which decides by template how a Cluster behaves). Nothing else
// changes: the bytes are the capture's.
type As struct {
	Name, Label, Template string
}

// Selector selects the requests renamed with this label.
func (a As) Selector() string { return ScenarioLabel + "=" + a.Label }

// ClusterName is the name of the renamed request's Cluster (templateParameters.clusterName).
func (a As) ClusterName() string { return a.Name + "-c" }

// Objects are one scenario's objects as captured (renamed); Cluster is nil where none existed.
type Objects struct {
	Request, PackageVariant, Cluster *unstructured.Unstructured
}

// Load reads a scenario's objects, renamed.
func Load(s Scenario, as As) (Objects, error) {
	var o Objects
	var err error
	if o.Request, err = load("provisioningrequest-"+string(s)+".json", s, as); err != nil {
		return o, err
	}
	if o.PackageVariant, err = load("packagevariant-"+string(s)+".json", s, as); err != nil {
		return o, err
	}
	if s != Early {
		if o.Cluster, err = load("cluster-"+string(s)+"-c.json", s, as); err != nil {
			return o, err
		}
		if as.Template != "" {
			ann := o.Cluster.GetAnnotations()
			ann[world.AnnotationTemplate] = as.Template
			o.Cluster.SetAnnotations(ann)
		}
	}
	return o, nil
}

// labelValue matches the scenario label's value in the object and inside kopf's diff-base (JSON in a
// JSON string, its quotes escaped).
var labelValue = regexp.MustCompile(`(pyinterop\.o2ims\.test/scenario\\?"\s*:\s*\\?")fx(\\?")`)

func load(file string, s Scenario, as As) (*unstructured.Unstructured, error) {
	path, err := kubeapi.ReferenceFile(dir + "/" + file)
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if as.Name == "" || as.Label == "" {
		return nil, fmt.Errorf("pythonimage: %s: a test names its copy (As.Name and As.Label)", file)
	}
	raw = bytes.ReplaceAll(raw, []byte("pi-fx-"+string(s)), []byte(as.Name))
	raw = labelValue.ReplaceAll(raw, []byte("${1}"+as.Label+"${2}"))
	if as.Template != "" {
		raw = bytes.ReplaceAll(raw, []byte(`"`+Template+`"`), []byte(`"`+as.Template+`"`))
		raw = bytes.ReplaceAll(raw, []byte(`\"`+Template+`\"`), []byte(`\"`+as.Template+`\"`))
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(raw, &u.Object); err != nil {
		return nil, fmt.Errorf("pythonimage: %s: %w", file, err)
	}
	return u, nil
}

// Install creates the objects on the API server as the image left them: the request first (its labels,
// annotations and spec), then its status; the PackageVariant (created after the request, as the image
// did) and its status; the Cluster and its status. What the API server assigns (uid, resourceVersion,
// creationTimestamp, generation) is its own. A nil object is skipped (a test that models a PackageVariant
// removed by hand, or a Cluster not yet created). It returns the live objects.
func (o Objects) Install(ctx context.Context, dyn dynamic.Interface) (Objects, error) {
	var out Objects
	var err error
	if o.Request != nil {
		if out.Request, err = create(ctx, dyn, o.Request); err != nil {
			return out, err
		}
	}
	// The Cluster before the PackageVariant: a simulated Porch that sees the PackageVariant first renders
	// it and creates the Cluster itself, and the captured one would then be refused as already existing.
	if o.Cluster != nil {
		if out.Cluster, err = create(ctx, dyn, o.Cluster); err != nil {
			return out, err
		}
	}
	if o.PackageVariant != nil {
		if out.PackageVariant, err = create(ctx, dyn, o.PackageVariant); err != nil {
			return out, err
		}
	}
	return out, nil
}

var resources = map[string]string{
	"ProvisioningRequest": "provisioningrequests", "PackageVariant": "packagevariants", "Cluster": "clusters",
}

func create(ctx context.Context, dyn dynamic.Interface, captured *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	gv, err := schema.ParseGroupVersion(captured.GetAPIVersion())
	if err != nil {
		return nil, err
	}
	res := dyn.Resource(gv.WithResource(resources[captured.GetKind()]))
	var ri dynamic.ResourceInterface = res
	if ns := captured.GetNamespace(); ns != "" {
		ri = res.Namespace(ns)
	}
	obj := captured.DeepCopy()
	status, hasStatus := obj.Object["status"]
	delete(obj.Object, "status")
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "generation"} {
		unstructured.RemoveNestedField(obj.Object, "metadata", f)
	}
	live, err := ri.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("pythonimage: creating %s %s: %w", captured.GetKind(), captured.GetName(), err)
	}
	if !hasStatus {
		return live, nil
	}
	// A merge patch, not an update: the simulated controllers may have written the object meanwhile.
	body, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return nil, err
	}
	if live, err = ri.Patch(ctx, live.GetName(), types.MergePatchType, body, metav1.PatchOptions{}, "status"); err != nil {
		return nil, fmt.Errorf("pythonimage: writing the status of %s %s: %w", captured.GetKind(), captured.GetName(), err)
	}
	return live, nil
}
