package inventory

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

// EventType is an InventoryChangeNotification's notificationEventType.
type EventType int64

const (
	EventCreate EventType = 0 // the object appeared: no priorObjectState
	EventModify EventType = 1 // both states
	EventDelete EventType = 2 // the object went: no postObjectState
)

// eventOf is the event a notification reports.
func eventOf(p *note) EventType {
	switch {
	case p.prior == nil:
		return EventCreate
	case p.post == nil:
		return EventDelete
	}
	return EventModify
}

// renderer writes InventoryChangeNotifications; root is the objectRef prefix (the O-Cloud's service URI
// and the inventory API's root path).
type renderer struct {
	root string
}

// render writes the InventoryChangeNotification of p for a subscription and decides its filter on it
// (matched false: left out, nothing to send).
func (r renderer) render(sub Subscription, filter query.Filter, p *note) (body []byte, matched bool) {
	event := eventOf(p)
	attrs := map[string]any{
		"notificationId":        notificationID(sub.SubscriptionID, p, event),
		"notificationEventType": int64(event),
		"objectType":            string(p.kind),
	}
	if sub.ConsumerSubscriptionID != "" {
		attrs["consumerSubscriptionId"] = sub.ConsumerSubscriptionID
	}
	if ref := r.objectRef(p); ref != "" && p.post != nil {
		attrs["objectRef"] = ref
	}
	if p.prior != nil {
		attrs["priorObjectState"] = p.prior.Attrs
	}
	if p.post != nil {
		attrs["postObjectState"] = p.post.Attrs
	}
	if filter != nil && !filter.Match(attrs) {
		return nil, false
	}
	b, _ := json.Marshal(attrs)
	return b, true
}

// notificationID is derived from the subscription and the change, so a re-sent notification (a retry,
// or one sent again after a restart or by a new leader) carries the same id and the SMO can drop
// duplicates.
func notificationID(subscriptionID string, p *note, event EventType) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s/%s/%d/", p.kind, p.id, event)
	for _, e := range []*Entry{p.prior, p.post} {
		if e != nil {
			h.Write(e.JSON)
		}
		h.Write([]byte{0})
	}
	return uuid.NewSHA1(uuid.MustParse(subscriptionID), h.Sum(nil)).String()
}

func (r renderer) objectRef(p *note) string {
	e := p.post
	if e == nil {
		e = p.prior
	}
	switch p.kind {
	case KindResource:
		pool, _ := e.Attrs["resourcePoolId"].(string)
		return r.root + "/resourcePools/" + pool + "/resources/" + p.id
	case KindResourcePool:
		return r.root + "/resourcePools/" + p.id
	case KindResourceType:
		return r.root + "/resourceTypes/" + p.id
	case KindDeploymentManager:
		return r.root + "/deploymentManagers/" + p.id
	}
	return ""
}
