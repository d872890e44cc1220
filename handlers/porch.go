package handlers

import (
	"context"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/framework"
	"github.com/o2ims-operator/o2ims-operator/handlers/kube"
)

// What Porch itself reports on the spec the operator last wrote to our PackageVariant. Porch's Ready
// carries no generation (v1.5.8 sets none and rewrites nothing while it stays True), so after a rewrite it
// proves nothing about the new spec. Porch's objects do (nephio-project/porch v1.5.8,
// 051841e5727f708e7fe7c0c025dc1fef22919825):
//   - the PackageVariant's status.downstreamTargets names the downstream PackageRevisions its controller
//     works on: our drafts of the downstream package if any, else our latest published revision
//     (controllers/packagevariants/pkg/controllers/packagevariant/packagevariant_controller.go,
//     getDownstreamPRs and setTargetStatusConditions; a spec change makes a new Draft — createUpgradeDraft
//     for another upstream, createEditDraft for another pipeline);
//   - a PackageRevision (api/porch/v1alpha1/types.go) has spec.lifecycle Draft / Proposed / Published /
//     DeletionProposed, status.publishTimestamp, and status.upstreamLock: the clone's upstream, git
//     directory = the upstream package and ref = <package>/v<revision> (pkg/task/clone.go,
//     pkg/externalrepo/git/package.go GetLock);
//   - the upstream template revision is <repo>.<package>.<workspace> (pkg/util/util.go
//     ComposePkgRevObjName), its spec.revision the number in the lock's ref.
//
// So the new spec counts as rendered and published when downstreamTargets names only Published revisions
// (no draft of ours is pending), the named revision is ours, of DOWNSTREAM_PKG_REPO/clusterName, locked to
// the requested template's revision, and was published no earlier than the rewrite (whole seconds,
// Porch's clock against ours): the labels live in the package's Kptfile, which only
// PackageRevisionResources shows, so a publication after the change is the evidence that they are in.
// That revision's PackageRevisionResources then say which Cluster it renders, and the Cluster counts for
// the change once it carries that (rendered.go). Until then the request waits, saying for what;
// CREATION_TIMEOUT from the change bounds the wait.
//
// Approval: Nephio's approval controller publishes under policy "initial" only while the package has no
// Published revision (nephio controllers/pkg/reconcilers/approval/README.md and reconciler.go
// policyInitial), so the draft of a day-2 change waits for whoever approves changes in that O-Cloud. The
// operator does not approve it: publishing needs update on packagerevisions/approval, which RBAC cannot
// narrow to our drafts (their names are Porch's), and it would take the change-approval gate away from
// the administrator that policy deliberately leaves it with. The status names the draft it waits for.

// porchEvidence reads what Porch reports on our PackageVariant's spec: the revision it published for a
// change (here) and what that revision renders (rendered.go). Every read is a live GET: Porch's aggregated
// API is not watched.
type porchEvidence struct {
	kube                                           kube.Client
	upstreamRepo, downstreamRepo, clusterNamespace string
	clusterVersion                                 string // the Cluster API version the operator watches
}

// specUpdatedAt is when the operator last rewrote the PackageVariant's spec; ok is false when it never did
// (its Ready is then about the spec it was created with).
func specUpdatedAt(pv *unstructured.Unstructured) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, pv.GetAnnotations()[AnnotationSpecUpdated])
	return t, err == nil
}

// upstreamRevisionName is Porch's name of the template revision the request asks for.
func (p *porchEvidence) upstreamRevisionName(req Request) string {
	return p.upstreamRepo + "." + strings.ReplaceAll(req.TemplateName, "/", ".") + "." + req.TemplateVersion
}

// published reads Porch's report on the rewritten spec: done when it is rendered and published, with
// the Cluster the published revision renders (rendered.go; nil when the spec was never rewritten: the
// first creation reads no revision); otherwise wait is the status to write. A read that failed is err
// (for retryOrFail), a revision not there (yet) is a wait.
func (p *porchEvidence) published(ctx context.Context, c *framework.Cause, pv *unstructured.Unstructured, req Request) (done bool, rendered *unstructured.Unstructured, wait said, err error) {
	name, wait, err := p.publishedRevision(ctx, c, pv, req)
	if name == "" {
		return wait.m == nil && err == nil, nil, wait, err
	}
	rendered, wait, err = p.renderedCluster(ctx, c, pv.GetNamespace(), name, req.ClusterName)
	return rendered != nil, rendered, wait, err
}

// publishedRevision is the name of the revision Porch published for the rewritten spec: "" with no wait
// when the spec was never rewritten, "" with a wait (or err) while there is none.
func (p *porchEvidence) publishedRevision(ctx context.Context, c *framework.Cause, pv *unstructured.Unstructured, req Request) (string, said, error) {
	updated, rewritten := specUpdatedAt(pv)
	if !rewritten {
		return "", said{}, nil
	}
	targets := downstreamTargets(pv)
	if len(targets) == 0 {
		return "", msgRenderingAwaitingRender.with("the package variant names no package revision yet"), nil
	}
	var pub *unstructured.Unstructured
	for _, name := range targets {
		pr, wait, err := p.readRevision(ctx, c, pv.GetNamespace(), name)
		if pr == nil {
			return "", wait, err
		}
		lc, _, _ := unstructured.NestedString(pr.Object, "spec", "lifecycle")
		if lc != "Published" {
			return "", msgRenderingAwaitingApproval.with(name, lc), nil
		}
		pub = pr
	}
	if !ownedByPV(pub, pv) || revisionField(pub, "repository") != p.downstreamRepo || revisionField(pub, "packageName") != req.ClusterName {
		return "", msgRenderingAwaitingRender.with("package revision " + pub.GetName() + " is not this package variant's " + p.downstreamRepo + "/" + req.ClusterName), nil
	}
	up, wait, err := p.readRevision(ctx, c, pv.GetNamespace(), p.upstreamRevisionName(req))
	if up == nil {
		if err == nil {
			wait = msgRenderingAwaitingRender.with("Porch has no revision " + req.TemplateVersion + " of template " + req.TemplateName + " in " + p.upstreamRepo)
		}
		return "", wait, err
	}
	dir, _, _ := unstructured.NestedString(pub.Object, "status", "upstreamLock", "git", "directory")
	ref, _, _ := unstructured.NestedString(pub.Object, "status", "upstreamLock", "git", "ref")
	rev, _, _ := unstructured.NestedInt64(up.Object, "spec", "revision")
	if dir != revisionField(up, "packageName") || lockRevision(ref) != rev || rev <= 0 {
		return "", msgRenderingAwaitingRender.with("published package revision " + pub.GetName() + " is cloned from " + ref + ", not from " + req.TemplateName + " " + req.TemplateVersion), nil
	}
	at, _, _ := unstructured.NestedString(pub.Object, "status", "publishTimestamp")
	if t, err := time.Parse(time.RFC3339, at); err != nil || t.Before(updated.Truncate(time.Second)) {
		return "", msgRenderingAwaitingRender.with("the latest published package revision " + pub.GetName() + " is older than the change"), nil
	}
	return pub.GetName(), said{}, nil
}

// readRevision GETs a PackageRevision (live: Porch's aggregated API is not watched, its list is every
// revision of every repository). Not found is a wait, anything else err.
func (p *porchEvidence) readRevision(ctx context.Context, c *framework.Cause, ns, name string) (*unstructured.Unstructured, said, error) {
	pr, err := p.kube.Get(ctx, c, external.PackageRevisionGVR, ns, name)
	if framework.IsClass(err, framework.ClassNotFound) {
		return nil, msgRenderingAwaitingRender.with("Porch has no package revision " + name), nil
	}
	return pr, said{}, err
}

func downstreamTargets(pv *unstructured.Unstructured) []string {
	raw, _, _ := unstructured.NestedSlice(pv.Object, "status", "downstreamTargets")
	var out []string
	for _, t := range raw {
		if m, ok := t.(map[string]any); ok {
			if n, _ := m["name"].(string); n != "" {
				out = append(out, n)
			}
		}
	}
	return out
}

func revisionField(pr *unstructured.Unstructured, field string) string {
	s, _, _ := unstructured.NestedString(pr.Object, "spec", field)
	return s
}

func ownedByPV(pr, pv *unstructured.Unstructured) bool {
	for _, o := range pr.GetOwnerReferences() {
		if o.UID == pv.GetUID() {
			return true
		}
	}
	return false
}

// lockRevision is Porch's revisionFromLocator: the number after the ref's last "/" ("v3" → 3), -1 when
// there is none (a draft upstream's ref is drafts/…).
func lockRevision(ref string) int64 {
	if strings.HasPrefix(ref, "drafts") {
		return -1
	}
	n, err := strconv.ParseInt(strings.TrimPrefix(ref[strings.LastIndex(ref, "/")+1:], "v"), 10, 64)
	if err != nil {
		return -1
	}
	return n
}
