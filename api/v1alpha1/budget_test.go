package v1alpha1

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestBudgetStartIsCreationOrALaterRecordedStart(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetCreationTimestamp(metav1.NewTime(created))
	if got := BudgetStart(u); !got.Equal(created) {
		t.Fatalf("no recorded start: %v, want the creation %v", got, created)
	}
	for recorded, want := range map[string]time.Time{
		created.Add(time.Hour).Format(time.RFC3339):  created.Add(time.Hour), // an update's re-drive
		created.Add(-time.Hour).Format(time.RFC3339): created,                // never before the creation
		"not a time": created,
	} {
		u.Object["status"] = map[string]any{FieldExtensions: map[string]any{FieldBudgetStart: recorded}}
		if got := BudgetStart(u); !got.Equal(want) {
			t.Errorf("budgetStart %q: %v, want %v", recorded, got, want)
		}
	}
}
