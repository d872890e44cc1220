package alarms

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/o2ims-operator/o2ims-operator/internal/quote"
	"github.com/o2ims-operator/o2ims-operator/inventory"
	"github.com/o2ims-operator/o2ims-operator/subscriptions"
)

// Alarm subscriptions are stored as the inventory's are (subscriptions.SubscriptionStore): ConfigMaps in the
// operator's namespace, labelled SubscriptionLabel and named "o2ims-alarm-subscription-<id>", each with
// its progress — every alarm as its subscriber was last told of it — so the leader's notifier (the
// inventory's machinery, subscriptions.PolledNotifier) resumes where it stopped after a restart or failover.
const (
	SubscriptionLabel = "o2ims.provisioning.oran.org/alarm-subscription"
	// KindAlarm is the alarms' kind of object in the notifier's state.
	KindAlarm inventory.Kind = "alarm"
	// MaxSubscriptionsEnv caps the alarm subscriptions.
	MaxSubscriptionsEnv = "ALARMS_MAX_SUBSCRIPTIONS"
	// DefaultMaxSubscriptions is ALARMS_MAX_SUBSCRIPTIONS's default.
	DefaultMaxSubscriptions = 100
)

// EventType is an AlarmEventNotification's notificationEventType.
type EventType int64

const (
	EventNew         EventType = 0 // raised (or raised again after it was cleared)
	EventChange      EventType = 1 // anything else changed (severity, extensions)
	EventClear       EventType = 2 // cleared, automatically or by hand
	EventAcknowledge EventType = 3 // acknowledged by an SMO
)

// eventNames are the reference's AlarmSubscriptionInfo filter values, by the event each names.
var eventNames = map[string]EventType{"NEW": EventNew, "CHANGE": EventChange, "CLEAR": EventClear, "ACKNOWLEDGE": EventAcknowledge}

// Subscriptions is the alarm API's kind of subscription: its filter is one of the reference's
// AlarmSubscriptionInfo filter values (NEW, CHANGE, CLEAR, ACKNOWLEDGE), the type of event that is NOT
// reported ("criteria for events which do not need to be reported"; openshift-kni/oran-o2ims reads it so).
var Subscriptions = subscriptions.SubscriptionKind{
	Prefix: "o2ims-alarm-subscription-", Label: SubscriptionLabel, MaxEnv: MaxSubscriptionsEnv,
	CheckFilter: func(f string) error {
		if _, ok := eventNames[f]; !ok {
			return fmt.Errorf("%q is not one of NEW, CHANGE, CLEAR, ACKNOWLEDGE (the type of event not to report)", quote.Truncate(f, 60))
		}
		return nil
	},
}

// Snapshot is every stored alarm as the notifier's objects (its Polled Read).
func (st *Store) Snapshot(ctx context.Context) (map[string]inventory.Change, error) {
	s, err := st.Load(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]inventory.Change, len(s.Alarms))
	for _, a := range s.Alarms {
		out[a.ID] = inventory.Change{Kind: KindAlarm, ID: a.ID, Post: inventory.NewEntry(a.ID, a.Attrs())}
	}
	return out, nil
}

// Order orders changes of alarms as they happened: by alarmChangedTime (the prior's for an alarm
// dropped), then id. The times are answered in one fixed-width UTC form, so their strings compare as
// the times do.
func Order(a, b inventory.Change) int {
	key := func(c inventory.Change) string {
		e := c.Post
		if e == nil {
			e = c.Prior
		}
		if e == nil {
			return ""
		}
		t, _ := e.Attrs["alarmChangedTime"].(string)
		return t
	}
	if c := strings.Compare(key(a), key(b)); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// Renderer writes AlarmEventNotifications: GlobalCloudID is the O-Cloud's (OCLOUD_GLOBAL_CLOUD_ID), Root
// the objectRef prefix (the service URI and the alarms API's /v1 root).
type Renderer struct {
	GlobalCloudID string
	Root          string
}

// Compile reads a subscription's filter: the event type left out.
func (r Renderer) Compile(filter string) (any, error) {
	e, ok := eventNames[filter]
	if !ok {
		return nil, fmt.Errorf("alarm subscription filter %q", filter)
	}
	return e, nil
}

// eventOf is the event a change of an alarm reports; ok false for none (an alarm dropped by the
// retention period is no event of the alarm's). A change folded from a raise and a clear (made within
// one poll) is a CLEAR: the record says when it was raised and when cleared.
func eventOf(n subscriptions.Notice) (EventType, bool) {
	if n.Post == nil {
		return 0, false
	}
	_, cleared := n.Post.Attrs["alarmClearedTime"]
	acked, _ := n.Post.Attrs["alarmAcknowledged"].(bool)
	if n.Prior == nil {
		if cleared {
			return EventClear, true
		}
		return EventNew, true
	}
	_, wasCleared := n.Prior.Attrs["alarmClearedTime"]
	wasAcked, _ := n.Prior.Attrs["alarmAcknowledged"].(bool)
	switch {
	case cleared && !wasCleared:
		return EventClear, true
	case !cleared && wasCleared:
		return EventNew, true
	case acked && !wasAcked:
		return EventAcknowledge, true
	}
	return EventChange, true
}

// Render writes the AlarmEventNotification of n for sub; matched false when there is no event or the
// subscription's filter leaves its type out. The alarm's clearing time, which the notification has no
// member for, is in its extensions as alarmClearedTime.
func (r Renderer) Render(sub subscriptions.Subscription, filter any, n subscriptions.Notice) ([]byte, bool) {
	event, ok := eventOf(n)
	if !ok {
		return nil, false
	}
	if skip, set := filter.(EventType); set && skip == event {
		return nil, false
	}
	if sub.Major == "v2" {
		return r.renderV2(sub, event, n), true
	}
	a := n.Post.Attrs
	ext := extensionsOf(a)
	body := map[string]any{
		"globalCloudID": r.GlobalCloudID, "notificationEventType": int64(event),
		"objectRef": r.Root + "/alarms/" + n.ID, "extensions": ext,
	}
	for _, k := range []string{"alarmEventRecordId", "resourceTypeID", "resourceID", "alarmDefinitionID", "probableCauseID",
		"alarmRaisedTime", "alarmChangedTime", "alarmAcknowledged", "perceivedSeverity"} {
		body[k] = a[k]
	}
	if t, ok := a["alarmAcknowledgedTime"]; ok {
		body["alarmAcknowledgeTime"] = t // the notification's spelling
	}
	if sub.ConsumerSubscriptionID != "" {
		body["consumerSubscriptionId"] = sub.ConsumerSubscriptionID
	}
	b, _ := json.Marshal(body)
	return b, true
}

// MaxSubscriptionsFromEnv reads ALARMS_MAX_SUBSCRIPTIONS (a whole number from 1 to 10 000; default
// DefaultMaxSubscriptions); a bad value is one line naming the variable.
func MaxSubscriptionsFromEnv(getenv func(string) string) (int, error) {
	v := strings.TrimSpace(getenv(MaxSubscriptionsEnv))
	if v == "" {
		return DefaultMaxSubscriptions, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 10000 {
		return 0, fmt.Errorf("%s=%q: want a whole number from 1 to 10000", MaxSubscriptionsEnv, v)
	}
	return n, nil
}

// extensionsOf is a notification's extensions: the record's own, and its clearing time, which neither
// version's notification has a member for.
func extensionsOf(a map[string]any) map[string]any {
	ext := map[string]any{}
	if e, ok := a["extensions"].(map[string]any); ok {
		maps.Copy(ext, e)
	}
	if t, ok := a["alarmClearedTime"]; ok {
		ext["alarmClearedTime"] = t
	}
	return ext
}
