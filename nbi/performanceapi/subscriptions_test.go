package performanceapi

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/o2ims-operator/o2ims-operator/performance"
	"github.com/o2ims-operator/o2ims-operator/subscriptions"
	"github.com/o2ims-operator/o2ims-operator/subscriptions/smo"
)

// Each collection of a job is a MeasurementReportNotification to its subscribers (SOL 013 subscribe/
// notify, the callback tested first): all jobs' without a filter, one job's with its id as the filter;
// a filter that is no job id is a 400; a deleted subscription is 404 after.
func TestEachCollectionIsReportedToSubscribers(t *testing.T) {
	e := newEnv(t)
	all, other := smo.New(), smo.New()
	defer all.Close()
	defer other.Close()
	subs := v2 + "/performanceSubscriptions"
	x := e.post(subs, fmt.Sprintf(`{"callback": %q}`, all.URL()))
	require.Equal(t, http.StatusCreated, x.Code(), string(x.Body))
	subID := x.Object(t)["performanceSubscriptionId"].(string)
	require.Equal(t, subs+"/"+subID, x.Resp.Header.Get("Location"))
	require.Equal(t, http.StatusCreated, e.post(subs, fmt.Sprintf(`{"callback": %q, "filter": "00000000-0000-4000-8000-000000000000"}`, other.URL())).Code())
	require.Equal(t, http.StatusBadRequest, e.post(subs, fmt.Sprintf(`{"callback": %q, "filter": "NEW"}`, other.URL())).Code())
	require.Len(t, e.get(subs).Items(t), 2)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n, err := subscriptions.NewPolledNotifier(subscriptions.NotifierConfig{
		Timeout: 300 * time.Millisecond, BackoffBase: 20 * time.Millisecond, BackoffCap: 200 * time.Millisecond,
		SubscriptionPoll: 50 * time.Millisecond, PersistEvery: 50 * time.Millisecond, Policy: e.policy,
	}, subscriptions.Polled{
		API: "performance", What: "Measurement report", Kind: performance.KindJob, Read: e.store.Snapshot, Order: performance.Order,
		Every: 50 * time.Millisecond, Render: performance.Renderer{Root: "https://o2ims.example.com" + v2},
	}, e.subs, zap.NewNop(), nil)
	require.NoError(t, err)
	go func() { _ = n.Start(ctx) }()

	id := e.post(v2+"/measurementJobs", memJob).Object(t)["performanceMeasurementJobId"].(string)
	e.evaluate() // Prometheus unreachable: a FAILED report is a report too
	require.Eventually(t, func() bool { return len(all.Notifications()) >= 1 }, 20*time.Second, 10*time.Millisecond)
	first := all.Notifications()[0].Body
	require.Equal(t, "MeasurementReportNotification", first["notificationType"])
	require.Equal(t, id, first["performanceMeasurementJobId"])
	require.Equal(t, "https://o2ims.example.com"+v2+"/measurementJobs/"+id, first["objectRef"])
	require.Equal(t, "FAILED", first["status"])
	require.Contains(t, first["collection"], "gaps")

	e.evaluate()
	require.Eventually(t, func() bool { return len(all.Notifications()) >= 2 }, 20*time.Second, 10*time.Millisecond, "the next collection, the next report")
	require.Empty(t, other.Notifications(), "its filter names another job")

	require.Equal(t, http.StatusNoContent, e.send(http.MethodDelete, subs+"/"+subID, "", "").Code())
	require.Equal(t, http.StatusNotFound, e.get(subs+"/"+subID).Code())
}
