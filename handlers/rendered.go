package handlers

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/framework"
)

// What the revision Porch published for a change renders, and whether the live Cluster carries it: the
// evidence that a template change was applied.
//
// Porch serves a revision's content as PackageRevisionResources of the same name (nephio-project/porch
// v1.5.8, 051841e5727f708e7fe7c0c025dc1fef22919825, api/porch/v1alpha1/types.go
// PackageRevisionResourcesSpec.Resources: "the content of the package", file name → file text;
// pkg/externalrepo/git/package.go GetResources and git.go GetResources fill it with every file of the
// package's tree). The Cluster the package renders is the document of apiVersion cluster.x-k8s.io/*,
// kind Cluster, named clusterName (in CLUSTER_NAMESPACE when it names one), read as Porch reads a package
// (pkg/objects/extract.go Parser.AsObjectList: .yaml/.yml files only, so never the Kptfile; kpt's
// local-config objects, annotation config.kubernetes.io/local-config: "true", skipped: never applied).
//
// Applied: the live Cluster's spec carries every field the rendered spec sets, with that value — a
// subset, since CAPI's controllers and webhooks set and default more (controlPlaneEndpoint from the
// infrastructure cluster, defaulted ports…). Both sides are decoded as the API machinery decodes JSON
// (integers int64), lists compare element by element at the same length, and a rendered zero value
// (null, "", 0, false, {}, []) is also carried by an absent field (a webhook's Go types drop them). A field
// a webhook rewrites to another value is reported as differing: the request then waits, naming it, and
// its CREATION_TIMEOUT fails it saying so — never a success it cannot show.
//
// A rendered Cluster of another served version than the one the operator watches is compared with the
// live Cluster read at the rendered version (the API server converts it with CAPI's conversion webhook;
// field names differ between v1beta1 and v1beta2), and the watched Cluster then counts only once the cache
// holds that generation or a later one: its observedGeneration and rollout conditions must be about the
// spec that was compared.

// renderedCluster reads the published revision's content and returns the Cluster it renders, or a wait:
// no content for the revision (yet), or no such Cluster in it. A failed read is err.
func (p *porchEvidence) renderedCluster(ctx context.Context, c *framework.Cause, ns, revision, clusterName string) (*unstructured.Unstructured, said, error) {
	prr, err := p.kube.Get(ctx, c, external.PackageRevisionResourcesGVR, ns, revision)
	if framework.IsClass(err, framework.ClassNotFound) {
		return nil, msgRenderingAwaitingRender.with("Porch serves no content for package revision " + revision), nil
	}
	if err != nil {
		return nil, said{}, err
	}
	resources, _, _ := unstructured.NestedMap(prr.Object, "spec", "resources")
	cl := findCluster(resources, clusterName, p.clusterNamespace)
	if cl == nil {
		return nil, msgRenderingNoCluster.with(revision, clusterName), nil
	}
	return cl, said{}, nil
}

// findCluster is the Cluster the package's files render (nil when none), in file-name order.
func findCluster(resources map[string]any, name, namespace string) *unstructured.Unstructured {
	files := make([]string, 0, len(resources))
	for f := range resources {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		text, _ := resources[f].(string)
		if ext := strings.ToLower(path.Ext(f)); ext != ".yaml" && ext != ".yml" {
			continue // the Kptfile, a README: never applied
		}
		for _, doc := range yamlDocuments(text) {
			u := &unstructured.Unstructured{Object: doc}
			gv := strings.SplitN(u.GetAPIVersion(), "/", 2)
			if gv[0] != external.ClusterGroup || u.GetKind() != external.ClusterKind || u.GetName() != name ||
				(u.GetNamespace() != "" && u.GetNamespace() != namespace) ||
				u.GetAnnotations()["config.kubernetes.io/local-config"] == "true" {
				continue
			}
			return u
		}
	}
	return nil
}

// yamlDocuments decodes a file's YAML documents as the API machinery decodes JSON (integers int64). A
// document that does not decode is skipped: kpt would not have rendered it, nor Config Sync applied it.
func yamlDocuments(text string) []map[string]any {
	var out []map[string]any
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(text)))
	for {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) || (err != nil && len(raw) == 0) {
			return out
		}
		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			continue
		}
		var doc map[string]any
		if utiljson.Unmarshal(js, &doc) == nil && doc != nil {
			out = append(out, doc)
		}
	}
}

// specDiff lists the field paths (spec.…, no values) where have does not carry what want sets.
func specDiff(want, have any, at string, out []string) []string {
	if isZero(want) && (have == nil || isZero(have)) {
		return out
	}
	switch w := want.(type) {
	case map[string]any:
		hm, ok := have.(map[string]any)
		if !ok {
			return append(out, at)
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = specDiff(w[k], hm[k], at+"."+k, out)
		}
		return out
	case []any:
		hl, ok := have.([]any)
		if !ok || len(hl) != len(w) {
			return append(out, at)
		}
		for i := range w {
			out = specDiff(w[i], hl[i], at+"["+strconv.Itoa(i)+"]", out)
		}
		return out
	}
	if !reflect.DeepEqual(want, have) {
		return append(out, at)
	}
	return out
}

func isZero(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return reflect.ValueOf(v).IsZero()
}

// notCarried says which rendered fields the live Cluster lacks ("" when it carries them all), naming at
// most a few paths.
func notCarried(rendered, live *unstructured.Unstructured) string {
	diff := specDiff(rendered.Object["spec"], live.Object["spec"], "spec", nil)
	const most = 5
	if len(diff) > most {
		return strings.Join(diff[:most], ", ") + fmt.Sprintf(" and %d more", len(diff)-most)
	}
	return strings.Join(diff, ", ")
}

// clusterCarries decides whether the live Cluster carries the rendered one: differs names the fields it
// lacks ("" when it carries them all). cached is the watched Cluster; a rendered Cluster of another version
// is compared with a live read at that version (see above), and behind is that read's generation while
// the cache has not caught up with it (0 otherwise).
func (p *porchEvidence) clusterCarries(ctx context.Context, c *framework.Cause, rendered, cached *unstructured.Unstructured) (differs string, behind int64, err error) {
	version := strings.TrimPrefix(rendered.GetAPIVersion(), external.ClusterGroup+"/")
	if version == p.clusterVersion {
		return notCarried(rendered, cached), 0, nil
	}
	live, err := p.kube.Get(ctx, c, external.ClusterGVR(version), cached.GetNamespace(), cached.GetName())
	if err != nil {
		return "", 0, err
	}
	if d := notCarried(rendered, live); d != "" {
		return d, 0, nil
	}
	if cached.GetGeneration() < live.GetGeneration() {
		return "", live.GetGeneration(), nil
	}
	return "", 0, nil
}
