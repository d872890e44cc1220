package world

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"

	"github.com/o2ims-operator/o2ims-operator/api/external"
)

// Porch's PackageRevisions as the PackageVariant controller and Nephio's approval controller leave them,
// from their source:
//   - nephio-project/porch v1.5.8 (051841e5727f708e7fe7c0c025dc1fef22919825)
//     api/porch/v1alpha1/types.go (the fields), pkg/util/util.go ComposePkgRevObjName (the name
//     <repo>.<package>.<workspace>), pkg/externalrepo/git/package.go GetLock and pkg/task/clone.go (a clone's
//     status.upstreamLock: git directory = the upstream package, ref = <package>/v<revision>),
//     controllers/packagevariants/pkg/controllers/packagevariant/packagevariant_controller.go
//     (getDownstreamPRs: our drafts, else our latest published revision; isUpToDate: the lock's revision
//     against the upstream's — the package is not compared; createUpgradeDraft / createEditDraft: a new
//     Draft "packagevariant-N" from a published one; a stale upstream on a draft is an error;
//     setTargetStatusConditions: status.downstreamTargets names the targets).
//   - nephio-project/nephio a29054b9701f7aac34fa13781ec551fe79df71eb
//     controllers/pkg/reconcilers/approval/reconciler.go: policy "initial" publishes a Draft (via Proposed)
//     only when its PackageVariant is Ready and no Published revision of the package exists.
//
// Simplifications, said where they matter: the package content is served as PackageRevisionResources
// (resources.go), and the PackageVariant's pipeline is also kept on the revision under annotationPipeline
// (Porch keeps it only in the Kptfile), so a change of it is found without parsing; the
// revisions of a PackageVariant that is gone count as gone (Porch proposes their deletion and an
// administrator approves it); lifecycle changes are written on the object (porch-server's approval
// subresource cannot exist on a CRD).

const (
	annotationPipeline = "world.o2ims.io/pipeline"
	workspacePrefix    = "packagevariant-"
	lifecycleDraft     = "Draft"
	lifecyclePublished = "Published"
	// policyAnnotation is Nephio's approval annotation (approval.nephio.org/policy).
	policyAnnotation = "approval.nephio.org/policy"
)

// upstreamURL is where the world says its catalog lives (the lock's repo is a URL in Porch).
func upstreamURL(repo string) string { return "https://git.example.invalid/" + repo + ".git" }

// revisionName is Porch's ComposePkgRevObjName for a package without a path.
func revisionName(repo, pkg, workspace string) string {
	return repo + "." + strings.ReplaceAll(pkg, "/", ".") + "." + workspace
}

type revisions struct {
	w    *World
	ns   string
	pkgs []string
	all  []*unstructured.Unstructured
}

// revisions lists the namespace's revisions of the given packages, each by the field selector
// spec.packageName that porch-server serves (v1.5.8 pkg/registry/porch/fieldselector.go): a reconcile
// reads its own packages, not every revision a namespace has gathered.
func (w *World) revisions(ctx context.Context, ns string, pkgs ...string) (*revisions, error) {
	r := &revisions{w: w, ns: ns, pkgs: pkgs}
	for i, pkg := range pkgs {
		if slices.Contains(pkgs[:i], pkg) {
			continue
		}
		list, err := w.opts.Dynamic.Resource(external.PackageRevisionGVR).Namespace(ns).List(ctx,
			metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.packageName", pkg).String()})
		if err != nil {
			return nil, err
		}
		for j := range list.Items {
			r.all = append(r.all, &list.Items[j])
		}
	}
	return r, nil
}

func lifecycle(pr *unstructured.Unstructured) string {
	s, _, _ := unstructured.NestedString(pr.Object, "spec", "lifecycle")
	return s
}

func published(pr *unstructured.Unstructured) bool {
	l := lifecycle(pr)
	return l == lifecyclePublished || l == "DeletionProposed"
}

func revisionOf(pr *unstructured.Unstructured) int64 {
	n, _, _ := unstructured.NestedInt64(pr.Object, "spec", "revision")
	return n
}

func ownedBy(pr, pv *unstructured.Unstructured) bool {
	for _, o := range pr.GetOwnerReferences() {
		if o.UID == pv.GetUID() {
			return true
		}
	}
	return false
}

// upstream returns the catalog's published revision of package@workspace, adding it when the catalog
// does not have it yet (the world's catalog has every template version asked for), numbered after the
// package's earlier ones.
func (r *revisions) upstream(ctx context.Context, repo, pkg, workspace string) (*unstructured.Unstructured, error) {
	name := revisionName(repo, pkg, workspace)
	for _, pr := range r.all {
		if pr.GetName() == name {
			return pr, nil
		}
	}
	// Numbered under one lock over a fresh listing: two versions added at once must not share a number
	// (Porch's revisions of a package are unique, and the lock's number is what tells them apart).
	r.w.catalogMu.Lock()
	defer r.w.catalogMu.Unlock()
	fresh, err := r.w.revisions(ctx, r.ns, r.pkgs...)
	if err != nil {
		return nil, err
	}
	var n int64
	for _, pr := range fresh.all {
		if pr.GetName() == name {
			return pr, nil
		}
		if spec(pr, "repository") == repo && spec(pr, "packageName") == pkg && revisionOf(pr) > n {
			n = revisionOf(pr)
		}
	}
	pr := newRevision(r.ns, name, repo, pkg, workspace)
	pr.Object["spec"].(map[string]any)["lifecycle"] = lifecyclePublished
	pr.Object["spec"].(map[string]any)["revision"] = n + 1
	pr.Object["status"] = map[string]any{"publishedBy": "catalog", "publishTimestamp": now()}
	return r.create(ctx, pr)
}

func spec(pr *unstructured.Unstructured, field string) string {
	s, _, _ := unstructured.NestedString(pr.Object, "spec", field)
	return s
}

func now() string { return time.Now().UTC().Format(time.RFC3339) }

func newRevision(ns, name, repo, pkg, workspace string) *unstructured.Unstructured {
	pr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": external.PackageRevisionGVR.GroupVersion().String(), "kind": external.PackageRevisionKind,
		"spec": map[string]any{"packageName": pkg, "repository": repo, "workspaceName": workspace},
	}}
	pr.SetNamespace(ns)
	pr.SetName(name)
	return pr
}

func (r *revisions) create(ctx context.Context, pr *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	out, err := r.w.opts.Dynamic.Resource(external.PackageRevisionGVR).Namespace(r.ns).Create(ctx, pr, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return r.w.opts.Dynamic.Resource(external.PackageRevisionGVR).Namespace(r.ns).Get(ctx, pr.GetName(), metav1.GetOptions{})
	}
	if err == nil {
		r.all = append(r.all, out)
	}
	return out, err
}

func (r *revisions) update(ctx context.Context, pr *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return r.w.opts.Dynamic.Resource(external.PackageRevisionGVR).Namespace(r.ns).Update(ctx, pr, metav1.UpdateOptions{})
}

// downstreams is getDownstreamPRs: the PackageVariant's drafts of its downstream package, else its latest
// published revision of it.
func (r *revisions) downstreams(pv *unstructured.Unstructured, repo, pkg string) []*unstructured.Unstructured {
	var drafts []*unstructured.Unstructured
	var latest *unstructured.Unstructured
	for _, pr := range r.all {
		if !ownedBy(pr, pv) || spec(pr, "repository") != repo || spec(pr, "packageName") != pkg {
			continue
		}
		if !published(pr) {
			drafts = append(drafts, pr)
		} else if latest == nil || revisionOf(pr) > revisionOf(latest) {
			latest = pr
		}
	}
	if len(drafts) > 0 {
		return drafts
	}
	if latest != nil {
		return []*unstructured.Unstructured{latest}
	}
	return nil
}

// workspace is newWorkspaceName: packagevariant-<highest of the package + 1>.
func (r *revisions) workspace(repo, pkg string) string {
	n := 0
	for _, pr := range r.all {
		if spec(pr, "repository") != repo || spec(pr, "packageName") != pkg {
			continue
		}
		if k, err := strconv.Atoi(strings.TrimPrefix(spec(pr, "workspaceName"), workspacePrefix)); err == nil && k > n {
			n = k
		}
	}
	return fmt.Sprintf("%s%d", workspacePrefix, n+1)
}

// draft creates a Draft of the downstream package owned by pv with the given upstream lock (a clone or an
// upgrade: the upstream's; an edit: its source's), with the PackageVariant's labels, annotations and
// pipeline.
func (r *revisions) draft(ctx context.Context, pv *unstructured.Unstructured, lock map[string]any, repo, pkg, pipeline, task string) (*unstructured.Unstructured, error) {
	pr := newRevision(r.ns, "", repo, pkg, r.workspace(repo, pkg))
	pr.SetName(revisionName(repo, pkg, spec(pr, "workspaceName")))
	tr := true
	pr.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: pv.GetAPIVersion(), Kind: pv.GetKind(), Name: pv.GetName(), UID: pv.GetUID(), Controller: &tr}})
	labels, _, _ := unstructured.NestedStringMap(pv.Object, "spec", "labels")
	ann, _, _ := unstructured.NestedStringMap(pv.Object, "spec", "annotations")
	if ann == nil {
		ann = map[string]string{}
	}
	ann[annotationPipeline] = pipeline
	pr.SetLabels(labels)
	pr.SetAnnotations(ann)
	s := pr.Object["spec"].(map[string]any)
	s["lifecycle"] = lifecycleDraft
	s["tasks"] = []any{map[string]any{"type": task}}
	pr.Object["status"] = map[string]any{"upstreamLock": lock}
	out, err := r.create(ctx, pr)
	if err != nil {
		return nil, err
	}
	return out, r.writeResources(ctx, out, pv)
}

// lockOf is a clone's upstream lock (GetLock of the upstream): its package directory and published tag.
func lockOf(upstream *unstructured.Unstructured) map[string]any {
	pkg := spec(upstream, "packageName")
	return map[string]any{"type": "git", "git": map[string]any{
		"repo": upstreamURL(spec(upstream, "repository")), "directory": pkg,
		"ref": fmt.Sprintf("%s/v%d", pkg, revisionOf(upstream)), "commit": fmt.Sprintf("%040x", revisionOf(upstream)),
	}}
}

// lockRevision is revisionFromLocator: the number after the ref's last "/v" (-1 when none).
func lockRevision(pr *unstructured.Unstructured) int64 {
	ref, _, _ := unstructured.NestedString(pr.Object, "status", "upstreamLock", "git", "ref")
	if strings.HasPrefix(ref, "drafts") {
		return -1
	}
	n, err := strconv.ParseInt(strings.TrimPrefix(ref[strings.LastIndex(ref, "/")+1:], "v"), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// publish takes a draft to Published: the next revision number of its package, the time, who.
func (r *revisions) publish(ctx context.Context, pr *unstructured.Unstructured, by string) (*unstructured.Unstructured, error) {
	var n int64
	for _, o := range r.all {
		if spec(o, "repository") == spec(pr, "repository") && spec(o, "packageName") == spec(pr, "packageName") && revisionOf(o) > n {
			n = revisionOf(o)
		}
	}
	pr = pr.DeepCopy()
	s := pr.Object["spec"].(map[string]any)
	s["lifecycle"], s["revision"] = lifecyclePublished, n+1
	st, _ := pr.Object["status"].(map[string]any)
	if st == nil {
		st = map[string]any{}
	}
	st["publishedBy"], st["publishTimestamp"] = by, now()
	pr.Object["status"] = st
	out, err := r.update(ctx, pr)
	if err != nil || !r.w.resourcesServed {
		return out, err
	}
	// Its content is the draft's, now under the revision's number (GetResources: Key().Revision).
	body, _ := json.Marshal(map[string]any{"spec": map[string]any{"revision": n + 1}})
	_, err = r.w.opts.Dynamic.Resource(external.PackageRevisionResourcesGVR).Namespace(r.ns).Patch(ctx, pr.GetName(), types.MergePatchType, body, metav1.PatchOptions{})
	return out, ignoreNotFound(err)
}

// publishedExists is the initial policy's test: a Published revision of the package (of a live
// PackageVariant: those of a deleted one count as gone here).
func (r *revisions) publishedExists(pv *unstructured.Unstructured, repo, pkg string) bool {
	for _, pr := range r.all {
		if published(pr) && ownedBy(pr, pv) && spec(pr, "repository") == repo && spec(pr, "packageName") == pkg {
			return true
		}
	}
	return false
}
