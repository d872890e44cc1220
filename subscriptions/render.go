package subscriptions

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/o2ims-operator/o2ims-operator/nbi/query"

	"github.com/o2ims-operator/o2ims-operator/inventory"
)

// EventType is an InventoryChangeNotification's notificationEventType.
type EventType int64

const (
	EventCreate EventType = 0 // the object appeared: no priorObjectState
	EventModify EventType = 1 // both states
	EventDelete EventType = 2 // the object went: no postObjectState
)

// Notice is one change a subscriber is to be told of: of one object, from Prior to Post (nil: none).
type Notice struct {
	Kind        inventory.Kind
	ID          string
	Prior, Post *inventory.Entry
}

// Renderer writes one API's notifications: the inventory's InventoryChangeNotifications, the alarms'
// AlarmEventNotifications.
type Renderer interface {
	// Compile reads a subscription's filter (validated when stored; an error skips the subscription).
	Compile(filter string) (any, error)
	// Render writes n for sub, filter being Compile's answer (nil without a filter); matched false: the
	// filter leaves it out, nothing to send.
	Render(sub Subscription, filter any, n Notice) (body []byte, matched bool)
}

// eventOf is the event a notification reports.
func eventOf(p Notice) EventType {
	switch {
	case p.Prior == nil:
		return EventCreate
	case p.Post == nil:
		return EventDelete
	}
	return EventModify
}

// renderer writes InventoryChangeNotifications; root is the objectRef prefix (the O-Cloud's service URI
// and the inventory API's root path).
type renderer struct {
	root string
}

// Compile parses an inventory filter on NotificationSchema.
func (r renderer) Compile(filter string) (any, error) { return NotificationSchema.ParseFilter(filter) }

// Render writes the InventoryChangeNotification of p for a subscription and decides its filter on it
// (matched false: left out, nothing to send).
func (r renderer) Render(sub Subscription, compiled any, p Notice) (body []byte, matched bool) {
	filter, _ := compiled.(query.Filter)
	event := eventOf(p)
	attrs := map[string]any{
		"notificationId":        notificationID(sub.SubscriptionID, p, event),
		"notificationEventType": int64(event),
		"objectType":            string(p.Kind),
	}
	if sub.ConsumerSubscriptionID != "" {
		attrs["consumerSubscriptionId"] = sub.ConsumerSubscriptionID
	}
	if ref := r.objectRef(p); ref != "" && p.Post != nil {
		attrs["objectRef"] = ref
	}
	if p.Prior != nil {
		attrs["priorObjectState"] = p.Prior.Attrs
	}
	if p.Post != nil {
		attrs["postObjectState"] = p.Post.Attrs
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
func notificationID(subscriptionID string, p Notice, event EventType) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s/%s/%d/", p.Kind, p.ID, event)
	for _, e := range []*inventory.Entry{p.Prior, p.Post} {
		if e != nil {
			h.Write(e.JSON)
		}
		h.Write([]byte{0})
	}
	return uuid.NewSHA1(uuid.MustParse(subscriptionID), h.Sum(nil)).String()
}

func (r renderer) objectRef(p Notice) string {
	e := p.Post
	if e == nil {
		e = p.Prior
	}
	switch p.Kind {
	case inventory.KindResource:
		pool, _ := e.Attrs["resourcePoolId"].(string)
		return r.root + "/resourcePools/" + pool + "/resources/" + p.ID
	case inventory.KindResourcePool:
		return r.root + "/resourcePools/" + p.ID
	case inventory.KindResourceType:
		return r.root + "/resourceTypes/" + p.ID
	case inventory.KindDeploymentManager:
		return r.root + "/deploymentManagers/" + p.ID
	}
	return ""
}
