package framework

import (
	"context"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// runTimers runs the timers that are due on a live object and returns how long until the next one is.
// Timer state lives in memory: after a restart each timer waits its initial delay again, as kopf's do.
func (c *controller) runTimers(ctx context.Context, u *unstructured.Unstructured, p *Patch, st *objectState,
	now time.Time, log *zap.Logger) time.Duration {
	var next time.Duration
	for _, t := range c.w.timers {
		ts := st.timers[t.id]
		if ts == nil {
			ts = &timerState{due: now.Add(t.initialDelay)}
			st.timers[t.id] = ts
		}
		if ts.stopped {
			continue
		}
		if !now.Before(ts.due) {
			c.runTimer(ctx, u, p, st, t, ts, now, log)
		}
		if !ts.stopped {
			next = soonest(next, maxDuration(ts.due.Sub(now), time.Millisecond))
		}
	}
	return next
}

func (c *controller) runTimer(ctx context.Context, u *unstructured.Unstructured, p *Patch, st *objectState, t *handlerSpec,
	ts *timerState, now time.Time, log *zap.Logger) {
	tlog := log.With(zap.String("handler", t.id), zap.String("cause", string(ReasonTimer)))
	cause := &Cause{
		Reason: ReasonTimer, HandlerID: t.id, Object: u.DeepCopy(), Patch: p, Logger: tlog,
		Retries: ts.retries, Started: now, Now: now, Cache: c.op.cache,
	}
	start := time.Now()
	out := classify(c.call(ctx, t, cause))
	c.op.metrics.HandlerDuration.WithLabelValues(c.resource, t.id).Observe(time.Since(start).Seconds())
	c.op.metrics.HandlerRuns.WithLabelValues(c.resource, t.id, string(out.kind)).Inc()
	c.postEvents(st, cause.events)
	switch out.kind {
	case outcomeSuccess:
		ts.retries = 0
		ts.due = now.Add(t.interval)
	case outcomeTemporary:
		ts.retries++
		ts.due = now.Add(out.delay)
		c.op.metrics.HandlerRetries.WithLabelValues(c.resource, t.id, string(outcomeTemporary)).Inc()
	case outcomeError:
		ts.retries++
		// An erroring timer keeps its cadence rather than hammering: the next tick is its retry.
		ts.due = now.Add(t.interval)
		c.op.metrics.HandlerRetries.WithLabelValues(c.resource, t.id, string(outcomeError)).Inc()
		tlog.Warn("timer failed; retrying at the next tick", zap.String("error", out.message))
	case outcomePermanent:
		ts.stopped = true
		c.op.metrics.PermanentFailures.WithLabelValues(c.resource, t.id).Inc()
		tlog.Error("timer failed permanently; stopped for this object", zap.String("error", out.message))
		c.post(st, corev1.EventTypeWarning, EventHandlerFailed, "Timer \""+t.id+"\" failed permanently: "+out.message)
	}
}

func maxDuration(a, b time.Duration) time.Duration {
	if a > b {
		return a
	}
	return b
}
