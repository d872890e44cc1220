package handlers

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/framework"
)

func causeAt(u *unstructured.Unstructured, now time.Time) *framework.Cause {
	return &framework.Cause{Object: u, Now: now, Logger: zap.NewNop(),
		Patch: &framework.Patch{Status: map[string]any{}, Labels: map[string]*string{}, Annotations: map[string]*string{}}}
}

// The budget is measured on the pass's clock (the framework's) from the request's creationTimestamp, and
// from an update's recorded start when one re-drives the request.
func TestBudgetRunsFromCreationOnThePassClock(t *testing.T) {
	h := &reporter{creationTimeout: 30 * time.Minute, requeue: 10 * time.Second, metrics: newMetrics(nil)}
	created := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	u := provisioningRequest("b1", "unit", tmplOK, map[string]any{"clusterName": "c"})
	u.SetCreationTimestamp(metav1.NewTime(created))

	c := causeAt(u, created.Add(29*time.Minute+59*time.Second))
	err := h.waitWithinBudget(c, "rendering", msgRendering.with(), "")
	var temp *framework.TemporaryError
	assert.True(t, errors.As(err, &temp), "still in budget")
	assert.Equal(t, 10*time.Second, temp.Delay)
	assert.Equal(t, "progressing", c.Patch.Status["provisioningStatus"].(map[string]any)["provisioningState"])
	assert.Equal(t, "2026-11-30T12:29:59Z", c.Patch.Status["provisioningStatus"].(map[string]any)["provisioningUpdateTime"])

	c = causeAt(u, created.Add(30*time.Minute))
	err = h.waitWithinBudget(c, "cluster", msgClusterOngoing.with("Provisioning"), "Available=False")
	var perm *framework.PermanentError
	assert.True(t, errors.As(err, &perm), "spent")
	assert.Equal(t, "Provisioning request failed; reason: timed out after 30m0s waiting for the Cluster resource (last: Cluster resource creation ongoing (Provisioning): Available=False)", perm.Message)

	// An update re-drive started 40 minutes in: its own budget from then.
	u.Object["status"] = map[string]any{"extensions": map[string]any{budgetStartKey: created.Add(40 * time.Minute).Format(time.RFC3339)}}
	assert.False(t, h.expired(u, created.Add(69*time.Minute)))
	assert.True(t, h.expired(u, created.Add(70*time.Minute)))
	// A start before creation (clock skew, an edit) never extends the budget backwards.
	u.Object["status"] = map[string]any{"extensions": map[string]any{budgetStartKey: created.Add(-time.Hour).Format(time.RFC3339)}}
	assert.True(t, created.Add(30*time.Minute).Equal(h.deadline(u)))
}

func TestStatusTimeMovesOnlyWhenStateOrMessageChanges(t *testing.T) {
	h := &reporter{requeue: time.Second, metrics: newMetrics(nil)}
	u := provisioningRequest("s1", "unit", tmplOK, nil)
	u.Object["status"] = map[string]any{"provisioningStatus": map[string]any{
		"provisioningState": "progressing", "provisioningMessage": "Cluster instance rendering ongoing", "provisioningUpdateTime": "2026-11-30T12:00:00Z"}}
	c := causeAt(u, time.Date(2026, 11, 30, 13, 0, 0, 0, time.UTC))
	h.setStatus(c, msgRendering.with())
	assert.Empty(t, c.Patch.Status, "same state and message: nothing to write")
	h.setStatus(c, msgClusterOngoing.with("Pending"))
	assert.Equal(t, "2026-11-30T13:00:00Z", c.Patch.Status["provisioningStatus"].(map[string]any)["provisioningUpdateTime"])
}
