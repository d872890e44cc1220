package handlers

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/framework"
	"github.com/o2ims-operator/o2ims-operator/internal/netcause"
)

// reporter writes what a pass found into the request's status (here) and keeps its CREATION_TIMEOUT
// budget (budget.go); Handlers embeds it, so every step reports the same way.
type reporter struct {
	creationTimeout, requeue time.Duration
	metrics                  *Metrics
	hosts                    Hosts // told when a request fails: it waits for no host any more (nil: none)
}

// maxMessage bounds provisioningMessage: an API error can be long, and the message is read by people.
const maxMessage = 1024

// truncateMessage bounds a message as setStatus stores it.
func truncateMessage(message string) string {
	if len(message) > maxMessage {
		message = message[:maxMessage-3] + "..."
	}
	return message
}

// setStatus records an entry of the message table (messages.go): its state and its message with the
// parts filled in. provisioningUpdateTime (UTC RFC 3339) moves only when one of them changes, so a pass
// that observes nothing new writes nothing; every state change posts an Event. A new message in the same
// progressing or deleting state is progress, which may yield to a busy client-side bucket.
func (r *reporter) setStatus(c *framework.Cause, s said) {
	// An error quoted into a message never carries an internal address (issue 34).
	state, message := s.m.state, truncateMessage(netcause.Redact(s.text))
	cur := v1alpha1.StatusOf(c.Object)
	if cur.State == state && cur.Message == message {
		return
	}
	next := v1alpha1.ProvisioningStatus{State: state, Message: message, UpdateTime: c.Now.UTC().Format(time.RFC3339)}
	if cur.State == state && (state == v1alpha1.StateProgressing || state == v1alpha1.StateDeleting) {
		// Only the message moves: progress, which yields to writes that change a state when the
		// client-side limit is what holds the writes back (framework/yield.go).
		c.Patch.SetProgress(next.Unstructured(), v1alpha1.FieldProvisioningStatus)
		return
	}
	c.Patch.SetStatus(next.Unstructured(), v1alpha1.FieldProvisioningStatus)
	if cur.State == state {
		return
	}
	r.metrics.transition(cur.State, state)
	switch state {
	case v1alpha1.StateFailed:
		c.Event(corev1.EventTypeWarning, EventFailed, message)
	case v1alpha1.StateFulfilled:
		c.Event(corev1.EventTypeNormal, EventFulfilled, message)
	case v1alpha1.StateDeleting:
		c.Event(corev1.EventTypeNormal, EventDeleting, message)
	default:
		c.Event(corev1.EventTypeNormal, EventProgressing, message)
	}
}

// fail records the failure first and returns the permanent error that ends the handler: status is written
// before the handler stops (a kopf failure is recorded only in an annotation nobody reads).
func (r *reporter) fail(c *framework.Cause, s said) error {
	r.setStatus(c, s)
	if r.hosts != nil {
		r.hosts.Forget(string(c.Object.GetUID())) // a failed request waits for no host
	}
	return &framework.PermanentError{Message: s.text}
}

// wait records progress and asks for another pass after the safety-net interval; related watches wake the
// request sooner when the awaited object changes.
func (r *reporter) wait(c *framework.Cause, s said) error {
	return r.waitFor(c, s, r.requeue)
}

// waitFor keeps the request progressing with s and looks again after recheck.
func (r *reporter) waitFor(c *framework.Cause, s said, recheck time.Duration) error {
	r.setStatus(c, s)
	return framework.Temporary(recheck, "%s", s.text)
}

// setResourceSet records provisionedResourceSet (both fields always present: the API requires them).
func setResourceSet(c *framework.Cause, clusterID string, infraIDs []string) {
	set := v1alpha1.ProvisionedResourceSet{NodeClusterID: clusterID, InfrastructureResourceIDs: infraIDs}
	c.Patch.SetStatus(set.Unstructured(), v1alpha1.FieldProvisionedResourceSet)
}
