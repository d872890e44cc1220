package framework

import (
	"context"
	"hash/fnv"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/tools/record/util"
	"k8s.io/client-go/tools/reference"
	"k8s.io/utils/clock"

	"github.com/o2ims-operator/o2ims-operator/internal/backoff"
)

// Event reasons the framework posts.
const (
	EventHandlerSucceeded = "HandlerSucceeded"
	EventHandlerRetrying  = "HandlerRetrying"
	EventHandlerFailed    = "HandlerFailed"
	EventStateUnreadable  = "StateUnreadable"
)

// post queues an event about the pass's object for the end of the pass (the worker owns the key, so the
// queue needs no lock).
func (p *pass) post(eventType, reason, message string) {
	p.own.events = append(p.own.events, pendingEvent{eventType, reason, message})
}

// postEvents queues the events a handler posted through its Cause.
func (p *pass) postEvents(events []pendingEvent) {
	p.own.events = append(p.own.events, events...)
}

// warnOnce logs a problem with what is stored on the object every time and posts it as an event once.
func (p *pass) warnOnce(what, message string) {
	p.log.Warn(message)
	if !p.own.warned[what] {
		p.own.warned[what] = true
		p.post(corev1.EventTypeWarning, EventStateUnreadable, message)
	}
}

// flushEvents hands the pass's queued events to the recorder, after the pass's writes. This is the one
// place a pass meets the recorder.
func (p *pass) flushEvents() {
	events := p.own.events
	p.own.events = nil
	if p.c.op.events == nil {
		return
	}
	for _, e := range events {
		p.c.op.events.post(p.cached, e.eventType, e.reason, e.message)
	}
}

// maxEventMessage is kopf's (and the API server's practical) bound on an event message.
const maxEventMessage = 1024

// Sizing of the event writer.
const (
	// eventWriters post concurrently: one writer posting one event at a time (client-go's broadcaster)
	// manages 20–50 events/s against a busy API server, a third of what a 50 requests/s burst produces.
	eventWriters = 8
	// maxPendingEvents bounds the memory a stalled API server can pin (about 1 KiB each); a burst of
	// 1000 requests queues about 3000 at most.
	maxPendingEvents = 20000
	// eventTries: a retryable failure (transport, 429, 5xx) is tried again with backoff, as client-go's
	// recorder does (12 tries); a rejected event (400, 403, 422) is not.
	eventTries      = 12
	eventRetryFirst = 200 * time.Millisecond
	eventRetryMax   = 10 * time.Second
)

// eventBackoff is the operator's one backoff, jittered (±25%) so that writers retrying after an
// API-server restart do not come back in step; eventRetryMax caps the doubling before the jitter.
var eventBackoff = backoff.Exponential{Base: eventRetryFirst, Max: eventRetryMax, Jitter: 0.5}

// eventRecorder posts core/v1 Events without dropping them under a burst.
//
// client-go's broadcaster hands every event through a 1000-deep channel to a single writer that posts one
// at a time and drops what does not fit (watch.DropIfChannelFull): at 42 requests/s 43% of our events
// were lost. The events.k8s.io/v1 recorder does not drop, but folds events that share a reason into a
// series keeping the first event's note (its key leaves the note out): a request's second "Progressing"
// or "HandlerRetrying" within 6 minutes would lose its message. So this recorder keeps core/v1 and
// client-go's correlator (aggregation of similar events into counts, and its per-object budget: 25 events,
// then one per 5 minutes) and replaces the channel and the single writer: a queue per writer, bounded by
// memory rather than by a burst, and events of one object always on the same writer, in order.
//
// Events about cluster-scoped objects (a ProvisioningRequest) land in "default": the API server rejects
// them anywhere else ("involvedObject.namespace: does not match event.namespace"; verified on v1.37.2), so
// an operator-namespace placement is not possible. `kubectl describe` and `kubectl events` find them there.
//
// Metrics: posted counts what was handed to the recorder, dispatched what a writer took off its queue
// (posted − dispatched is still queued, or dropped when the queue was full), event_writes the API calls
// by result, events_dropped what never reached the API server, by reason.
type eventRecorder struct {
	mayAct     func() bool
	cs         kubernetes.Interface
	correlator *record.EventCorrelator
	source     corev1.EventSource
	metrics    *Metrics
	log        *zap.Logger
	ctx        context.Context
	clock      clock.Clock         // the waits between a retryable event write's tries
	redact     func(string) string // Options.Redact, for every message (nil: none)

	mu      sync.Mutex
	wake    []chan struct{}
	queues  [][]*corev1.Event
	pending int
	closed  bool
	wg      sync.WaitGroup
}

// newEventRecorder starts the writers; mayAct (nil: always) says whether an event may still be sent
// (the lease fence, fence.go).
func newEventRecorder(ctx context.Context, cs kubernetes.Interface, component string, log *zap.Logger, m *Metrics, mayAct func() bool) *eventRecorder {
	host, _ := os.Hostname()
	r := &eventRecorder{
		mayAct:     mayAct,
		cs:         cs,
		correlator: record.NewEventCorrelatorWithOptions(record.CorrelatorOptions{}),
		source:     corev1.EventSource{Component: component, Host: host},
		metrics:    m,
		log:        log,
		ctx:        ctx,
		clock:      clock.RealClock{},
		wake:       make([]chan struct{}, eventWriters),
		queues:     make([][]*corev1.Event, eventWriters),
	}
	for i := range r.wake {
		r.wake[i] = make(chan struct{}, 1)
		r.wg.Add(1)
		go r.writer(i)
	}
	return r
}

// post queues an event about obj; it never blocks a pass.
func (r *eventRecorder) post(obj runtime.Object, eventType, reason, message string) {
	if r.redact != nil {
		message = r.redact(message)
	}
	if len(message) > maxEventMessage {
		message = message[:maxEventMessage-3] + "..."
	}
	r.metrics.EventsPosted.WithLabelValues(eventType).Inc()
	ref, err := reference.GetReference(scheme.Scheme, obj)
	if err != nil {
		r.dropped("unreferenceable", nil, err)
		return
	}
	now := metav1.Now()
	ns := ref.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	e := &corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: util.GenerateEventName(ref.Name, now.UnixNano()), Namespace: ns},
		InvolvedObject:      *ref,
		Reason:              reason,
		Message:             message,
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Type:                eventType,
		Source:              r.source,
		ReportingController: r.source.Component,
		ReportingInstance:   r.source.Host,
	}
	shard := shardOf(ref.UID, ref.Name, len(r.queues))
	r.mu.Lock()
	if r.closed || r.pending >= maxPendingEvents {
		why := "queue_full"
		if r.closed {
			why = "stopped"
		}
		r.mu.Unlock()
		r.dropped(why, e, nil)
		return
	}
	r.queues[shard] = append(r.queues[shard], e)
	r.pending++
	r.mu.Unlock()
	select {
	case r.wake[shard] <- struct{}{}:
	default:
	}
}

// shardOf keeps one object's events on one writer: the correlator's count patches follow its create.
func shardOf(uid types.UID, name string, n int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(uid))
	_, _ = h.Write([]byte(name))
	return int(h.Sum32() % uint32(n))
}

// shutdown stops taking events and waits until the writers have posted what is queued (the caller
// bounds the wait; the writers' context ends with the informers).
func (r *eventRecorder) shutdown() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	for _, w := range r.wake {
		select {
		case w <- struct{}{}:
		default:
		}
	}
	r.wg.Wait()
}

func (r *eventRecorder) next(shard int) (*corev1.Event, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.queues[shard]
	if len(q) == 0 {
		return nil, r.closed
	}
	e := q[0]
	q[0] = nil
	r.queues[shard] = q[1:]
	r.pending--
	return e, false
}

func (r *eventRecorder) writer(shard int) {
	defer r.wg.Done()
	for {
		e, closed := r.next(shard)
		if e == nil {
			if closed {
				return
			}
			select {
			case <-r.wake[shard]:
			case <-r.ctx.Done():
				return
			}
			continue
		}
		r.metrics.EventsDispatched.Inc()
		r.write(e)
	}
}

// write correlates one event (a repeat becomes a count patch of the earlier one; the per-object budget
// may skip it) and sends it, retrying what a retry can help.
func (r *eventRecorder) write(e *corev1.Event) {
	result, err := r.correlator.EventCorrelate(e)
	if err != nil || result.Skip {
		r.dropped("budget", e, err)
		return
	}
	for try := 1; ; try++ {
		if r.mayAct != nil && !r.mayAct() {
			// A deposed leader posts nothing (fence.go).
			r.metrics.Fenced.WithLabelValues("event").Inc()
			r.dropped("fenced", e, nil)
			return
		}
		out, err := r.send(result.Event, result.Patch)
		switch {
		case err == nil:
			r.correlator.UpdateState(out)
			return
		case apierrors.IsAlreadyExists(err):
			// An earlier try landed and lost its answer: the event is there.
			return
		}
		err = ClassifyAPIError("post event", true, err)
		if ae, ok := AsAPIError(err); !ok || !ae.Retryable || try >= eventTries {
			r.dropped("rejected", e, err)
			return
		}
		select {
		case <-r.clock.After(eventBackoff.Delay(try - 1)):
		case <-r.ctx.Done():
			r.dropped("stopped", e, err)
			return
		}
	}
}

// send creates the event, or patches the count of the one it repeats (creating it if that is gone).
func (r *eventRecorder) send(e *corev1.Event, patch []byte) (*corev1.Event, error) {
	ctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
	defer cancel()
	events := r.cs.CoreV1().Events(e.Namespace)
	if e.Count > 1 {
		out, err := events.Patch(ctx, e.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		r.counted(err)
		if !apierrors.IsNotFound(err) {
			return out, err
		}
	}
	fresh := e.DeepCopy()
	fresh.ResourceVersion = ""
	out, err := events.Create(ctx, fresh, metav1.CreateOptions{})
	r.counted(err)
	return out, err
}

func (r *eventRecorder) counted(err error) {
	result := "success"
	if err != nil {
		result = "error"
	}
	r.metrics.EventWrites.WithLabelValues(result).Inc()
}

func (r *eventRecorder) dropped(why string, e *corev1.Event, err error) {
	r.metrics.EventsDropped.WithLabelValues(why).Inc()
	if r.log == nil {
		return
	}
	fields := []zap.Field{zap.String("why", why)}
	if e != nil {
		fields = append(fields, zap.String("reason", e.Reason), zap.String("object", e.InvolvedObject.Name))
	}
	if err != nil {
		fields = append(fields, zap.Error(err))
	}
	r.log.Warn("an event was not posted", fields...)
}
