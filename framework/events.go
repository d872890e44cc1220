package framework

import (
	"context"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
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

// eventRecorder posts core/v1 Events through client-go's broadcaster (aggregation and spam filtering as
// every controller does). Posting failures are logged and never block a pass.
//
// Events about cluster-scoped objects (a ProvisioningRequest) land in "default": the API server rejects
// them anywhere else ("involvedObject.namespace: does not match event.namespace"; verified on v1.37.2), so
// an operator-namespace placement is not possible. `kubectl describe` finds them there.
//
// client-go drops events silently when its queue is full; the metrics make that visible: posted counts
// what was handed to the recorder, dispatched what its writer took off the queue (the correlator's key
// function runs exactly once per dispatched event), so posted − dispatched is what was dropped or is still
// queued (at most the queue's 1000).
type eventRecorder struct {
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder
	metrics     *Metrics
}

func newEventRecorder(ctx context.Context, cs kubernetes.Interface, component string, log *zap.Logger, m *Metrics) *eventRecorder {
	opts := record.CorrelatorOptions{KeyFunc: func(e *corev1.Event) (string, string) {
		m.EventsDispatched.Inc()
		return record.EventAggregatorByReasonFunc(e)
	}}
	b := record.NewBroadcaster(record.WithContext(ctx), record.WithCorrelatorOptions(opts))
	b.StartRecordingToSink(&loggingSink{cs: cs, log: log, metrics: m})
	return &eventRecorder{
		broadcaster: b,
		recorder:    b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component}),
		metrics:     m,
	}
}

func (r *eventRecorder) post(obj runtime.Object, eventType, reason, message string) {
	if len(message) > maxEventMessage {
		message = message[:maxEventMessage-3] + "..."
	}
	r.metrics.EventsPosted.WithLabelValues(eventType).Inc()
	r.recorder.Event(obj, eventType, reason, message)
}

func (r *eventRecorder) shutdown() { r.broadcaster.Shutdown() }

// loggingSink writes events with a bounded call and logs failures through the operator's logger.
type loggingSink struct {
	cs      kubernetes.Interface
	log     *zap.Logger
	metrics *Metrics
}

func (s *loggingSink) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

func (s *loggingSink) Create(e *corev1.Event) (*corev1.Event, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	out, err := s.cs.CoreV1().Events(e.Namespace).Create(ctx, e, metav1.CreateOptions{})
	s.logFailure("create", e, err)
	return out, err
}

func (s *loggingSink) Update(e *corev1.Event) (*corev1.Event, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	out, err := s.cs.CoreV1().Events(e.Namespace).Update(ctx, e, metav1.UpdateOptions{})
	s.logFailure("update", e, err)
	return out, err
}

func (s *loggingSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	out, err := s.cs.CoreV1().Events(e.Namespace).Patch(ctx, e.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
	s.logFailure("patch", e, err)
	return out, err
}

func (s *loggingSink) logFailure(op string, e *corev1.Event, err error) {
	if s.metrics != nil {
		result := "success"
		if err != nil {
			result = "error"
		}
		s.metrics.EventWrites.WithLabelValues(result).Inc()
	}
	if err != nil && s.log != nil {
		s.log.Warn("posting an event failed", zap.String("op", op), zap.String("reason", e.Reason),
			zap.String("object", e.InvolvedObject.Name), zap.Error(err))
	}
}
