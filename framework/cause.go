package framework

import (
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Cause is everything a handler gets: the newest cached state of the object, a patch to fill, and read
// access to the caches. It is the framework's whole surface towards handlers: no queue, no client plumbing.
type Cause struct {
	// Reason is why the handler runs.
	Reason Reason
	// HandlerID is the id the handler was registered with.
	HandlerID string
	// Object is a private copy of the newest cached state; changes to it are ignored (use Patch).
	Object *unstructured.Unstructured
	// Patch collects the changes of this pass.
	Patch *Patch
	// Logger carries the object key on every line.
	Logger *zap.Logger
	// Retries counts the earlier runs of this handler in this cause.
	Retries int
	// Started is when this handler first ran in this cause.
	Started time.Time
	// Now is the pass's time (from the operator's clock).
	Now time.Time
	// Cache reads watched and related objects from the informer caches.
	Cache *Cache

	events []pendingEvent
}

type pendingEvent struct {
	eventType, reason, message string
}

// Event queues an event about the object, posted after the pass's patches. Posting failures are logged,
// never fatal.
func (c *Cause) Event(eventType, reason, message string) {
	c.events = append(c.events, pendingEvent{eventType, reason, message})
}

// Normal queues a Normal event.
func (c *Cause) Normal(reason, message string) { c.Event(corev1.EventTypeNormal, reason, message) }

// Warning queues a Warning event.
func (c *Cause) Warning(reason, message string) { c.Event(corev1.EventTypeWarning, reason, message) }
