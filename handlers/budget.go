package handlers

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
)

// budgetStartKey (under status.extensions) moves the budget's start when an update re-drives a request;
// it is on the object, so a restart never grants a fresh budget.
const budgetStartKey = "budgetStart"

// deadline is when the CREATION_TIMEOUT budget runs out. It is measured from the request's own
// creationTimestamp (or the start of an update's re-drive): the Python operator counted its sleeps, so the
// API calls' own time did not count and every restart granted a fresh budget.
func (h *Handlers) deadline(u *unstructured.Unstructured) time.Time {
	start := u.GetCreationTimestamp().Time
	if s, ok, _ := unstructured.NestedString(u.Object, v1alpha1.FieldStatus, v1alpha1.FieldExtensions, budgetStartKey); ok {
		if t, err := time.Parse(time.RFC3339, s); err == nil && t.After(start) {
			start = t
		}
	}
	return start.Add(h.cfg.CreationTimeout)
}

// expired tells whether the budget is spent at now.
func (h *Handlers) expired(u *unstructured.Unstructured, now time.Time) bool {
	return !now.Before(h.deadline(u))
}
