package handlers

import (
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Whether Porch and CAPI have reported on what was last asked of them. A spec change rewrites our
// PackageVariant; until Porch has looked at the new generation its Ready=True describes the old one, and a
// request fulfilled on it would claim a template that was never rendered.
//
//   - PackageVariant: Ready counts when its observedGeneration, if Porch ever sets one, is the object's
//     generation. Porch v1.5.8 sets none and rewrites nothing while Ready stays True, so after a rewrite
//     (AnnotationSpecUpdated) Ready=True is necessary, not sufficient: porch.go reads the revision Porch
//     published for the new spec. No time rule stands in for that report (RENDER_SETTLE is accepted and
//     ignored).
//   - Cluster: its status.observedGeneration (CAPI sets it in both versions) must have reached its
//     metadata.generation before Available (or phase Provisioned) is believed; rollout.go reads the
//     rollout conditions.
//   - Cluster after a template change: a published revision is not yet an applied one. The GitOps sync
//     (Config Sync polls the repository, 15 s by default) applies it later, and the operator reads the
//     Cluster from its cache, which may lag the API server further. Until then the Cluster is the old,
//     settled one: observedGeneration current, Available, no rollout. The evidence that the change was
//     applied is the API server's own: a spec change bumps metadata.generation (the API server does so for
//     every change outside metadata and status of a resource with a status subresource, as CAPI's CRDs
//     are), and CAPI's controllers set status.observedGeneration to the generation they reconciled
//     (cluster-api v1.14.0, 560d4acf507bc7cac34b2da449fa5cd53eaeb149, api/core/v1beta2/cluster_types.go
//     ClusterStatus.ObservedGeneration, "the latest generation observed by the controller";
//     internal/controllers/cluster/cluster_controller.go patches it on every reconcile). So the rewrite
//     records the Cluster's generation, read live (AnnotationClusterGeneration, in the same write), and
//     the Cluster counts only once its generation is past it and observed. A template revision that leaves
//     the Cluster's spec as it was moves nothing: the request then waits, saying for what, and its
//     CREATION_TIMEOUT fails it naming that wait. A labels-only change (set-labels touches metadata, no
//     generation) is believed on Porch's publication.

// AnnotationSpecUpdated records on our PackageVariant when the operator last rewrote its spec (RFC 3339,
// UTC, nanoseconds): porch.go wants a revision published no earlier.
const AnnotationSpecUpdated = "o2ims.provisioning.oran.org/spec-updated"

// AnnotationClusterGeneration records on our PackageVariant the Cluster's metadata.generation when the
// operator rewrote the template (0: no Cluster then); the Cluster counts for the change past it.
const AnnotationClusterGeneration = "o2ims.provisioning.oran.org/cluster-generation"

// clusterApplied tells whether the Cluster carries a spec applied after the last template change recorded
// on pv: always, when none was recorded. before is the recorded generation.
func clusterApplied(pv, cl *unstructured.Unstructured) (applied bool, before int64) {
	if pv == nil {
		return true, 0
	}
	before, err := strconv.ParseInt(pv.GetAnnotations()[AnnotationClusterGeneration], 10, 64)
	if err != nil {
		return true, 0
	}
	return cl.GetGeneration() > before, before
}

// renderingReady reads Porch's Ready condition, found by type (the Python operator took conditions[-1], so
// the same conditions in another order decided differently). When it is not ready, wait is the request's
// status (an entry of the message table).
func renderingReady(pv *unstructured.Unstructured) (ready bool, wait said) {
	cond, ok := condition(pv, "Ready")
	if !ok {
		return false, msgRendering.with()
	}
	if cond["status"] != "True" {
		if detail := conditionDetail(cond); detail != "" {
			return false, msgRenderingNotReady.with(detail)
		}
		return false, msgRendering.with()
	}
	if og, ok := generationOf(cond["observedGeneration"]); ok && og < pv.GetGeneration() {
		return false, msgRenderingNotReported.with(strconv.FormatInt(pv.GetGeneration(), 10))
	}
	return true, said{}
}

// conditionDetail is a condition's "reason: message".
func conditionDetail(cond map[string]any) string {
	r, _ := cond["reason"].(string)
	m, _ := cond["message"].(string)
	if r != "" && m != "" {
		return r + ": " + m
	}
	return r + m
}

// clusterCurrent tells whether CAPI has observed the Cluster's current generation; a report on an older
// one says nothing about what the request asks for now. generation is the Cluster's.
func clusterCurrent(cl *unstructured.Unstructured) (current bool, generation int64) {
	raw, _, _ := unstructured.NestedFieldNoCopy(cl.Object, "status", "observedGeneration")
	og, ok := generationOf(raw)
	return !ok || og >= cl.GetGeneration(), cl.GetGeneration()
}

// generationOf reads a generation as JSON decoding leaves it (int64 from the API machinery's decoder,
// float64 from encoding/json).
func generationOf(v any) (int64, bool) {
	switch g := v.(type) {
	case int64:
		return g, true
	case float64:
		return int64(g), true
	case int:
		return int64(g), true
	}
	return 0, false
}
