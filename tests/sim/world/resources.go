package world

import (
	"context"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/o2ims-operator/o2ims-operator/api/external"
)

// Porch's PackageRevisionResources: the content of each downstream revision the simulated Porch makes,
// under the revision's name, as porch-server serves it (nephio-project/porch v1.5.8,
// 051841e5727f708e7fe7c0c025dc1fef22919825: api/porch/v1alpha1/types.go PackageRevisionResourcesSpec —
// packageName, workspaceName, revision, repository, resources: file name → file text;
// pkg/externalrepo/git/package.go GetResources). The files are what a rendered cluster package holds, in
// the shape Porch's own tests give one (controllers/packagevariants/pkg/controllers/packagevariant/
// injection_test.go: a Kptfile and a local-config package-context.yaml):
//   - Kptfile (kpt.dev/v1, local-config) naming the upstream and the pipeline;
//   - package-context.yaml, kpt's local-config ConfigMap kptfile.kpt.dev;
//   - cluster.yaml, the Cluster the GitOps sync applies (sync reads it back from here). Its spec is the
//     template's: clusterNetwork with the template's service domain, which names the template version
//     too — except for a template in Options.SameClusterSpec, whose versions all render the same Cluster
//     (a version bump that changes only other objects). No Cluster for a NoCluster template;
//   - versions.yaml, a ConfigMap naming the template version: the object every version bump changes.
//
// The pipeline's set-labels mutator puts its labels on every object, as gcr.io/kpt-fn/set-labels does.

// resourcesFor is the package content the PackageVariant renders.
func (w *World) resourcesFor(pv *unstructured.Unstructured) map[string]any {
	up, _, _ := unstructured.NestedStringMap(pv.Object, "spec", "upstream")
	down, _, _ := unstructured.NestedStringMap(pv.Object, "spec", "downstream")
	template, version, cluster := up["package"], up["workspaceName"], down["package"]
	labels := pipelineLabels(pv)
	doc := func(obj map[string]any) string {
		if len(labels) > 0 {
			meta := obj["metadata"].(map[string]any)
			meta["labels"] = labels
		}
		raw, _ := yaml.Marshal(obj)
		return string(raw)
	}
	local := map[string]any{"config.kubernetes.io/local-config": "true"}
	files := map[string]any{
		"Kptfile": doc(map[string]any{"apiVersion": "kpt.dev/v1", "kind": "Kptfile",
			"metadata": map[string]any{"name": cluster, "annotations": local},
			"upstream": map[string]any{"type": "git", "git": map[string]any{"repo": upstreamURL(up["repo"]), "directory": template, "ref": template + "/" + version}},
			"pipeline": nested(pv, "spec", "pipeline")}),
		"package-context.yaml": doc(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "kptfile.kpt.dev", "annotations": local},
			"data":     map[string]any{"name": cluster}}),
		"versions.yaml": doc(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": cluster + "-versions", "namespace": w.opts.ClusterNamespace},
			"data":     map[string]any{"template": template, "templateVersion": version}}),
	}
	if !w.opts.NoCluster[template] {
		files["cluster.yaml"] = doc(map[string]any{
			"apiVersion": external.ClusterGVR(w.opts.ClusterVersion).GroupVersion().String(), "kind": external.ClusterKind,
			"metadata": map[string]any{"name": cluster, "namespace": w.opts.ClusterNamespace},
			"spec":     w.clusterSpec(template, version)})
	}
	return files
}

// clusterSpec is the spec a template version renders for its Cluster.
func (w *World) clusterSpec(template, version string) map[string]any {
	domain := template + ".local"
	if !w.opts.SameClusterSpec[template] {
		domain = template + "-" + strings.ReplaceAll(version, ".", "-") + ".local"
	}
	return map[string]any{"clusterNetwork": map[string]any{
		"apiServerPort": int64(6443), "serviceDomain": domain,
		"pods": map[string]any{"cidrBlocks": []any{"192.168.0.0/16"}},
	}}
}

// pipelineLabels are the labels the pipeline's set-labels mutator sets (nil when none).
func pipelineLabels(pv *unstructured.Unstructured) map[string]any {
	mutators, _, _ := unstructured.NestedSlice(pv.Object, "spec", "pipeline", "mutators")
	for _, m := range mutators {
		mm, _ := m.(map[string]any)
		if image, _ := mm["image"].(string); strings.Contains(image, "set-labels") {
			cm, _ := mm["configMap"].(map[string]any)
			return cm
		}
	}
	return nil
}

// writeResources stores the content of revision pr, rendered from pv (created, or replaced when Porch
// re-renders a draft).
func (r *revisions) writeResources(ctx context.Context, pr, pv *unstructured.Unstructured) error {
	if !r.w.resourcesServed {
		return nil
	}
	prr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": external.PackageRevisionResourcesGVR.GroupVersion().String(), "kind": external.PackageRevisionResourcesKind,
		"spec": map[string]any{
			"packageName": spec(pr, "packageName"), "workspaceName": spec(pr, "workspaceName"),
			"repository": spec(pr, "repository"), "resources": r.w.resourcesFor(pv),
		},
	}}
	prr.SetNamespace(r.ns)
	prr.SetName(pr.GetName())
	dyn := r.w.opts.Dynamic.Resource(external.PackageRevisionResourcesGVR).Namespace(r.ns)
	old, err := dyn.Get(ctx, pr.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = dyn.Create(ctx, prr, metav1.CreateOptions{})
	case err == nil:
		prr.SetResourceVersion(old.GetResourceVersion())
		_, err = dyn.Update(ctx, prr, metav1.UpdateOptions{})
	}
	return err
}

// renderedClusterSpec is the spec of the Cluster a revision's content renders (nil when it renders none
// or has no content).
func (w *World) renderedClusterSpec(ctx context.Context, ns, revision string) (map[string]any, error) {
	prr, err := w.opts.Dynamic.Resource(external.PackageRevisionResourcesGVR).Namespace(ns).Get(ctx, revision, metav1.GetOptions{})
	if err != nil {
		return nil, ignoreNotFound(err)
	}
	text, _, _ := unstructured.NestedString(prr.Object, "spec", "resources", "cluster.yaml")
	var cl map[string]any
	if err := yaml.Unmarshal([]byte(text), &cl); err != nil || cl == nil {
		return nil, nil
	}
	s, _ := cl["spec"].(map[string]any)
	return s, nil
}
