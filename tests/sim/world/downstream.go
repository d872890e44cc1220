package world

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/o2ims-operator/o2ims-operator/api/external"
)

// AnnotationRevision records on a Cluster which downstream PackageRevision the GitOps sync last applied
// (a change of it is a rollout for the simulated CAPI).
const AnnotationRevision = "world.o2ims.io/revision"

// ensureDownstream is the PackageVariant controller's ensurePackageVariant (packagerevision.go cites it):
// the downstream targets, created or moved to the PackageVariant's upstream and pipeline. An error is what
// Porch would put in Ready=False.
func (p *porch) ensureDownstream(ctx context.Context, pv *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	up, _, _ := unstructured.NestedStringMap(pv.Object, "spec", "upstream")
	down, _, _ := unstructured.NestedStringMap(pv.Object, "spec", "downstream")
	raw, _ := json.Marshal(nested(pv, "spec", "pipeline"))
	pipeline := string(raw)
	revs, err := p.w.revisions(ctx, pv.GetNamespace(), up["package"], down["package"])
	if err != nil {
		return nil, err
	}
	upstream, err := revs.upstream(ctx, up["repo"], up["package"], up["workspaceName"])
	if err != nil {
		return nil, err
	}
	targets := revs.downstreams(pv, down["repo"], down["package"])
	if targets == nil {
		d, err := revs.draft(ctx, pv, lockOf(upstream), down["repo"], down["package"], pipeline, "clone")
		return []*unstructured.Unstructured{d}, err
	}
	for i, t := range targets {
		if lockRevision(t) != revisionOf(upstream) {
			if !published(t) {
				return nil, fmt.Errorf("cannot update upstream of downstream %q when it is not published", t.GetName())
			}
			if targets[i], err = revs.draft(ctx, pv, lockOf(upstream), down["repo"], down["package"], pipeline, "upgrade"); err != nil {
				return nil, err
			}
			continue
		}
		if t.GetAnnotations()[annotationPipeline] == pipeline {
			continue
		}
		if published(t) {
			lock, _, _ := unstructured.NestedMap(t.Object, "status", "upstreamLock")
			targets[i], err = revs.draft(ctx, pv, lock, down["repo"], down["package"], pipeline, "edit")
		} else {
			t = t.DeepCopy()
			ann := t.GetAnnotations()
			ann[annotationPipeline] = pipeline
			t.SetAnnotations(ann)
			if targets[i], err = revs.update(ctx, t); err == nil {
				err = revs.writeResources(ctx, targets[i], pv)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return targets, nil
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func nested(u *unstructured.Unstructured, path ...string) any {
	v, _, _ := unstructured.NestedFieldCopy(u.Object, path...)
	return v
}

// setTargets writes status.downstreamTargets (setTargetStatusConditions: names, no render status here).
func setTargets(ctx context.Context, dyn patcher, pv *unstructured.Unstructured, targets []*unstructured.Unstructured) error {
	want := []any{}
	for _, t := range targets {
		want = append(want, map[string]any{"name": t.GetName()})
	}
	have, _, _ := unstructured.NestedSlice(pv.Object, "status", "downstreamTargets")
	if reflect.DeepEqual(have, want) {
		return nil
	}
	body, _ := json.Marshal(map[string]any{"status": map[string]any{"downstreamTargets": want}})
	_, err := dyn.Patch(ctx, pv.GetName(), types.MergePatchType, body, metav1.PatchOptions{}, "status")
	return ignoreNotFound(err)
}

// approveAndSync plays the approvers and the GitOps sync. A draft is published by Nephio's approval
// controller under policy "initial" when no Published revision of the package exists, else by the
// administrator when Options.AdminApproves (never for a template in NeverPublish), ApproveDelay after it
// was created. The latest published revision is then what the management cluster runs: the Cluster is
// created, or annotated with the revision (CAPI rolls it out).
func (p *porch) approveAndSync(ctx context.Context, pv *unstructured.Unstructured, pvReady, noCluster bool) (time.Duration, error) {
	o := p.w.opts
	template, _, _ := unstructured.NestedString(pv.Object, "spec", "upstream", "package")
	down, _, _ := unstructured.NestedStringMap(pv.Object, "spec", "downstream")
	revs, err := p.w.revisions(ctx, pv.GetNamespace(), down["package"])
	if err != nil {
		return 0, err
	}
	var again time.Duration
	for _, t := range revs.downstreams(pv, down["repo"], down["package"]) {
		if published(t) {
			continue
		}
		by := ""
		switch {
		case pvReady && t.GetAnnotations()[policyAnnotation] == "initial" && !revs.publishedExists(pv, down["repo"], down["package"]):
			by = "approval-controller"
		case o.AdminApproves && !o.NeverPublish[template]:
			by = "administrator"
		default:
			continue
		}
		if d := due(t.GetCreationTimestamp().Time, o.ApproveDelay); d > 0 {
			again = d
			continue
		}
		if _, err := revs.publish(ctx, t, by); err != nil {
			return 0, err
		}
		again = 50 * time.Millisecond // Porch's PackageVariant controller watches its revisions
	}
	if revs, err = p.w.revisions(ctx, pv.GetNamespace(), down["package"]); err != nil {
		return 0, err
	}
	var latest *unstructured.Unstructured
	for _, pr := range revs.all {
		if ownedBy(pr, pv) && published(pr) && spec(pr, "repository") == down["repo"] && spec(pr, "packageName") == down["package"] &&
			(latest == nil || revisionOf(pr) > revisionOf(latest)) {
			latest = pr
		}
	}
	if latest == nil || noCluster {
		return again, nil
	}
	if d := o.SyncDelay[template]; d > 0 {
		// Config Sync applies what it finds at its next poll of the repository, not at the publication.
		at, _, _ := unstructured.NestedString(latest.Object, "status", "publishTimestamp")
		if t, err := time.Parse(time.RFC3339, at); err == nil {
			if left := due(t, d); left > 0 {
				if again == 0 || left < again {
					again = left
				}
				return again, nil
			}
		}
	}
	dir, _, _ := unstructured.NestedString(latest.Object, "status", "upstreamLock", "git", "directory")
	return again, p.w.sync(ctx, pv.GetNamespace(), down["package"], dir, latest.GetName())
}

// sync applies a published revision: the Cluster its content renders (resources.go) created, or its spec
// and revision annotation moved. A revision that leaves the Cluster's spec as it was moves no generation,
// as with a real apply; CAPI still rolls the revision out (its other objects changed).
func (w *World) sync(ctx context.Context, ns, cluster, template, revision string) error {
	rendered, err := w.renderedClusterSpec(ctx, ns, revision)
	if err != nil {
		return err
	}
	if err := w.ensureCluster(ctx, cluster, template, revision, rendered); err != nil {
		return err
	}
	gvr := external.ClusterGVR(w.opts.ClusterVersion)
	cl, err := w.opts.Dynamic.Resource(gvr).Namespace(w.opts.ClusterNamespace).Get(ctx, cluster, metav1.GetOptions{})
	if err != nil {
		return ignoreNotFound(err)
	}
	if cl.GetAnnotations()[AnnotationRevision] == revision {
		return nil
	}
	patch := map[string]any{"metadata": map[string]any{"annotations": map[string]any{AnnotationRevision: revision, AnnotationTemplate: template}}}
	if rendered != nil {
		patch["spec"] = rendered
	}
	body, _ := json.Marshal(patch)
	_, err = w.opts.Dynamic.Resource(gvr).Namespace(w.opts.ClusterNamespace).Patch(ctx, cluster, types.MergePatchType, body, metav1.PatchOptions{})
	return ignoreNotFound(err)
}
