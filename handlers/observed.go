package handlers

import (
	"fmt"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Whether Porch and CAPI have reported on what was last asked of them. A spec change rewrites our
// PackageVariant; until Porch has looked at the new generation its Ready=True describes the old one, and a
// request fulfilled on it would claim a template that was never rendered.
//
// The rule, where an object carries no generation of its report:
//   - PackageVariant: Porch (v1.5.8) sets no observedGeneration on its conditions and rewrites nothing
//     when Ready stays True, so the operator stamps the time of its update on the PackageVariant
//     (AnnotationSpecUpdated). Ready counts for the new spec when its observedGeneration, if ever set, is
//     the object's generation; else when Ready turned True after the update (Porch's clock against
//     ours: a skew moves this by as much); else once RENDER_SETTLE has passed since the update with
//     Ready still True — a time rule, not proof that Porch looked at the new spec.
//   - Cluster: its status.observedGeneration (CAPI sets it in both versions) must have reached its
//     metadata.generation before Available (or phase Provisioned) is believed.

// AnnotationSpecUpdated records on our PackageVariant when the operator last rewrote its spec (RFC 3339,
// UTC, nanoseconds).
const AnnotationSpecUpdated = "o2ims.provisioning.oran.org/spec-updated"

// renderingReady reads Porch's Ready condition, found by type (the Python operator took conditions[-1], so
// the same conditions in another order decided differently), for the PackageVariant's current spec. When
// it is not ready, wait is the request's status (an entry of the message table) and retryIn, if positive,
// is when the answer can change by time alone.
func renderingReady(pv *unstructured.Unstructured, now time.Time, settle time.Duration) (ready bool, wait said, retryIn time.Duration) {
	cond, ok := condition(pv, "Ready")
	if !ok {
		return false, msgRendering.with(), 0
	}
	if cond["status"] != "True" {
		detail := ""
		if r, _ := cond["reason"].(string); r != "" {
			detail = r
		}
		if m, _ := cond["message"].(string); m != "" {
			if detail != "" {
				detail += ": "
			}
			detail += m
		}
		if detail == "" {
			return false, msgRendering.with(), 0
		}
		return false, msgRenderingNotReady.with(detail), 0
	}
	if og, ok := generationOf(cond["observedGeneration"]); ok {
		if og >= pv.GetGeneration() {
			return true, said{}, 0
		}
		return false, msgRenderingNotReported.with(strconv.FormatInt(pv.GetGeneration(), 10)), 0
	}
	updated, err := time.Parse(time.RFC3339Nano, pv.GetAnnotations()[AnnotationSpecUpdated])
	if err != nil {
		return true, said{}, 0 // never rewritten by us: Ready is about the spec it was created with
	}
	if ltt, err := time.Parse(time.RFC3339, fmt.Sprint(cond["lastTransitionTime"])); err == nil && ltt.After(updated) {
		return true, said{}, 0
	}
	if wait := updated.Add(settle).Sub(now); wait > 0 {
		return false, msgRenderingSettling.with(settle.String()), wait
	}
	return true, said{}, 0
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
