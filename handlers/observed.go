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
//   - Cluster after a change: a published revision is not yet an applied one. The GitOps sync (Config
//     Sync polls the repository, 15 s by default) applies it later, and the operator reads the Cluster
//     from its cache, which may lag the API server further; until then the Cluster is the old, settled
//     one. The evidence is the published revision's own content (rendered.go): the Cluster counts once its
//     spec carries every field the revision's Cluster sets. A change that leaves the Cluster's spec as it
//     was (a version bump of other objects) is carried at once, and counts on Porch's publication and
//     CAPI's report; one that changes it waits for the apply, naming the fields that differ. (An earlier
//     rule recorded the Cluster's metadata.generation at the rewrite and waited for it to move, which a
//     change that leaves the spec alone never does: such a request failed at CREATION_TIMEOUT. The
//     annotation it wrote, o2ims.provisioning.oran.org/cluster-generation, is removed at the next rewrite.)

// AnnotationSpecUpdated records on our PackageVariant when the operator last rewrote its spec (RFC 3339,
// UTC, nanoseconds): porch.go wants a revision published no earlier.
const AnnotationSpecUpdated = "o2ims.provisioning.oran.org/spec-updated"

// annotationClusterGeneration was written by the rule rendered.go replaced; a rewrite removes it.
const annotationClusterGeneration = "o2ims.provisioning.oran.org/cluster-generation"

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
