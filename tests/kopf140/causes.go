package kopf140

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Finalizer is the finalizer name the Python image configures (settings.persistence.finalizer). It
// registers no delete handler, timer or daemon, so kopf 1.40.1 never requires it.
const Finalizer = Prefix

// Cause reasons as kopf 1.40.1 names them (kopf._core.intents.causes.Reason).
const (
	ReasonCreate = "create"
	ReasonUpdate = "update"
	ReasonResume = "resume"
	ReasonDelete = "delete"
	ReasonFree   = "free"
	ReasonNoop   = "noop"
)

// Decision is what kopf 1.40.1, running the Python image's handlers, does with one event of an object.
type Decision struct {
	// RemovesFinalizer: the object carries the finalizer while no handler requires it, so kopf patches it
	// away in a cycle of its own ("Removing the finalizer, as there are no handlers requiring it") and
	// decides again on the next event (Next).
	RemovesFinalizer bool
	Next             *Decision
	// Reason is the changing cause detected (detect_changing_cause).
	Reason string
	// RunsCreateFn: the Python image's create_fn runs (it is registered on create and on resume; kopf runs
	// resume handlers "cuckoo-style" along an update of an object seen in the initial listing).
	RunsCreateFn bool
	// Gone: the finalizer (the only one) is removed on a deletion, so the API server deletes the object;
	// what it held is left to the garbage collector (ownerReferences) or orphaned.
	Gone bool
}

// Decide applies kopf 1.40.1's cause rules (processing.process_resource_event and
// causes.detect_changing_cause) to an object as the Python image sees it; initial says the event is part
// of the initial listing of a process that has not fully handled the object yet (a rollback's start).
func Decide(obj *unstructured.Unstructured, initial bool) Decision {
	fins := obj.GetFinalizers()
	blocked := slices.Contains(fins, Finalizer)
	deleting := obj.GetDeletionTimestamp() != nil
	switch {
	case deleting && !blocked:
		return Decision{Reason: ReasonFree}
	case deleting:
		// No delete handler: the cause is done at once and the finalizer removed ("allowing deletion").
		return Decision{Reason: ReasonDelete, Gone: len(fins) == 1}
	case blocked:
		next := obj.DeepCopy()
		next.SetFinalizers(slices.DeleteFunc(slices.Clone(fins), func(f string) bool { return f == Finalizer }))
		d := Decide(next, initial)
		return Decision{RemovesFinalizer: true, Next: &d}
	}
	r := Read(obj)
	switch {
	case r.DiffBase == nil:
		return Decision{Reason: ReasonCreate, RunsCreateFn: true}
	case !r.SeesNoChange(obj):
		// No update handler: only the resume handler, mixed in on an initial listing.
		return Decision{Reason: ReasonUpdate, RunsCreateFn: initial}
	case initial:
		return Decision{Reason: ReasonResume, RunsCreateFn: true}
	default:
		return Decision{Reason: ReasonNoop}
	}
}

// Final follows the finalizer removal to the decision that handles the object.
func (d Decision) Final() Decision {
	for d.Next != nil {
		d = *d.Next
	}
	return d
}
