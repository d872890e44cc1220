package v1alpha1

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FieldBudgetStart (under status.extensions) is where the chain moves the start of a request's
// CREATION_TIMEOUT budget when an update re-drives it (RFC 3339).
const FieldBudgetStart = "budgetStart"

// BudgetStart is when a request's CREATION_TIMEOUT budget started: its creationTimestamp, or the later
// start an update's re-drive recorded. The chain fails the request once the budget is spent; the alarms
// read the same start to call a request stuck past half of it.
func BudgetStart(u *unstructured.Unstructured) time.Time {
	start := u.GetCreationTimestamp().Time
	if s, ok, _ := unstructured.NestedString(u.Object, FieldStatus, FieldExtensions, FieldBudgetStart); ok {
		if t, err := time.Parse(time.RFC3339, s); err == nil && t.After(start) {
			start = t
		}
	}
	return start
}
