package performance

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/o2ims-operator/o2ims-operator/internal/quote"
	"github.com/o2ims-operator/o2ims-operator/inventory"
	"github.com/o2ims-operator/o2ims-operator/subscriptions"
)

// Reports pushed to subscribers. Clause 3.7.5 specifies no notification and Table 3.7.3-1 no
// subscription resource, while clause 2.1.7 has an SMO establish Performance Management Subscriptions
// to receive the collected measurements; where the protocol is left open the ETSI NFV-SOL 013
// subscribe/notify pattern the spec adopts elsewhere is followed, as the monitoring API's alarm
// subscriptions are: performanceSubscriptions (an extension of the v2 root) stored as ConfigMaps beside
// the others, delivered by the inventory's notifier machinery (at least once, in order, by the leader,
// resumed after a restart or failover). Each collection of a job is one MeasurementReportNotification
// (its status, collection state and collected measurements); a subscription's filter, when given, is the
// id of the one job it wants reports of.

const (
	SubscriptionLabel = "o2ims.provisioning.oran.org/performance-subscription"
	// KindJob is the jobs' kind of object in the notifier's state.
	KindJob inventory.Kind = "measurementJob"
	// EnvMaxSubscriptions caps the performance subscriptions.
	EnvMaxSubscriptions = "PERFORMANCE_MAX_SUBSCRIPTIONS"
)

// Subscriptions is the performance API's kind of subscription.
var Subscriptions = subscriptions.SubscriptionKind{
	Prefix: "o2ims-performance-subscription-", Label: SubscriptionLabel, MaxEnv: EnvMaxSubscriptions,
	CheckFilter: func(f string) error {
		if u, err := uuid.Parse(f); err != nil || u.String() != f {
			return fmt.Errorf("filter %q: want the performanceMeasurementJobId (a lowercase UUID) of the job to report", quote.Truncate(f, 60))
		}
		return nil
	},
}

// report is what a notification carries of a job; it changes with every collection.
func (j *Job) report() map[string]any {
	a := j.Attrs()
	ext, _ := a["extensions"].(map[string]any)
	return map[string]any{
		"performanceMeasurementJobId": j.ID, "status": a["status"], "collection": ext[extCollection],
		"collectedMeasurements": a["collectedMeasurements"], "lastAttempt": stampOrEmpty(j),
	}
}

func stampOrEmpty(j *Job) string {
	if j.LastAttempt == nil {
		return ""
	}
	return stamp(*j.LastAttempt)
}

// Snapshot is every job's report as the notifier's objects (its Polled Read, and a subscription's
// baseline: a new subscriber is told of the next collections, not the last ones).
func (st *Store) Snapshot(ctx context.Context) (map[string]inventory.Change, error) {
	s, err := st.Load(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]inventory.Change, len(s.Jobs))
	for _, j := range s.Jobs {
		out[j.ID] = inventory.Change{Kind: KindJob, ID: j.ID, Post: inventory.NewEntry(j.ID, j.report())}
	}
	return out, nil
}

// Order orders reports as collected: by the collection's time, then job id.
func Order(a, b inventory.Change) int {
	key := func(c inventory.Change) string {
		if c.Post == nil {
			return ""
		}
		t, _ := c.Post.Attrs["lastAttempt"].(string)
		return t
	}
	if c := strings.Compare(key(a), key(b)); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// Renderer writes MeasurementReportNotifications; Root is the API's v2 root as SMOs reach it.
type Renderer struct{ Root string }

// Compile reads a filter: the one job reported ("" all).
func (r Renderer) Compile(filter string) (any, error) { return filter, nil }

// Render writes the report of n for sub; nothing for a job deleted, a job not yet collected, or one the
// filter leaves out.
func (r Renderer) Render(sub subscriptions.Subscription, filter any, n subscriptions.Notice) ([]byte, bool) {
	if n.Post == nil {
		return nil, false
	}
	if f, _ := filter.(string); f != "" && f != n.ID {
		return nil, false
	}
	if t, _ := n.Post.Attrs["lastAttempt"].(string); t == "" {
		return nil, false
	}
	body := map[string]any{"notificationType": "MeasurementReportNotification", "objectRef": r.Root + "/measurementJobs/" + n.ID}
	for k, v := range n.Post.Attrs {
		if k != "lastAttempt" {
			body[k] = v
		}
	}
	if sub.ConsumerSubscriptionID != "" {
		body["consumerSubscriptionId"] = sub.ConsumerSubscriptionID
	}
	b, _ := json.Marshal(body)
	return b, true
}
