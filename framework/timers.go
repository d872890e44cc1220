package framework

import (
	"time"

	"go.uber.org/zap"
)

type timerState struct {
	due     time.Time
	stopped bool
	retries int
}

// runTimers runs the timers that are due on a live object and returns how long until the next one is.
// Timer state lives in memory: after a restart each timer waits its initial delay again, as kopf's do.
func (p *pass) runTimers() time.Duration {
	var next time.Duration
	for _, t := range p.c.w.timers {
		ts := p.own.timers[t.id]
		if ts == nil {
			ts = &timerState{due: p.now.Add(t.initialDelay)}
			p.own.timers[t.id] = ts
		}
		if ts.stopped {
			continue
		}
		if !p.now.Before(ts.due) {
			p.runTimer(t, ts)
		}
		if !ts.stopped {
			next = soonest(next, maxDuration(ts.due.Sub(p.now), time.Millisecond))
		}
	}
	return next
}

// runTimer runs one due timer once and settles its outcome.
func (p *pass) runTimer(t *handlerSpec, ts *timerState) {
	tlog := p.log.With(zap.String("handler", t.id), zap.String("cause", string(ReasonTimer)))
	out := p.execute(t, &Cause{Reason: ReasonTimer, Logger: tlog, Retries: ts.retries, Started: p.now})
	p.settleTimer(t, ts, tlog, out)
}

func maxDuration(a, b time.Duration) time.Duration {
	if a > b {
		return a
	}
	return b
}
