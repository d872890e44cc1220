package performance

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"go.uber.org/zap"

	"github.com/o2ims-operator/o2ims-operator/internal/netcause"
)

// Evaluator collects the jobs: every job whose collectionInterval has passed since its last attempt is
// evaluated against Prometheus (one instant query per measurement, over the job's hosts: Queries), and
// all outcomes of a pass are stored in one write. A runnable of the leader: one replica collects, the
// store carries the jobs and their reports across restarts and failover. Prometheus failing is an
// outcome like any other — the job FAILED with a gap opened, its last values kept with their times —
// never an error that stops the operator.
type Evaluator struct {
	store   *Store
	prom    promv1.API
	targets func() []Target
	bounds  Bounds
	log     *zap.Logger
	now     func() time.Time
	tick    time.Duration
}

// NewEvaluator evaluates the jobs of store against prom, over the inventory's targets.
func NewEvaluator(store *Store, prom promv1.API, targets func() []Target, bounds Bounds, log *zap.Logger) *Evaluator {
	return &Evaluator{store: store, prom: prom, targets: targets, bounds: bounds, log: log, now: time.Now, tick: time.Second}
}

// WithClock sets the clock jobs fall due on and are queried at (default time.Now).
func (e *Evaluator) WithClock(now func() time.Time) *Evaluator {
	e.now = now
	return e
}

// NeedLeaderElection: only the leader collects.
func (e *Evaluator) NeedLeaderElection() bool { return true }

// Start evaluates every second until ctx ends (a job is due at its own interval).
func (e *Evaluator) Start(ctx context.Context) error {
	t := time.NewTicker(e.tick)
	defer t.Stop()
	for {
		if err := e.Evaluate(ctx); err != nil && ctx.Err() == nil {
			e.log.Warn("measurement jobs not evaluated; retried at the next tick", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Evaluate collects every due job once and stores the outcomes (err: the store failed).
func (e *Evaluator) Evaluate(ctx context.Context) error {
	s, err := e.store.Load(ctx)
	if err != nil {
		return err
	}
	now := e.now().UTC()
	var targets []Target
	outcomes := map[string]*outcome{}
	for _, j := range s.Jobs {
		if j.LastAttempt != nil && now.Sub(*j.LastAttempt) < time.Duration(j.Interval)*time.Second {
			continue
		}
		if targets == nil {
			targets = e.targets()
		}
		outcomes[j.ID] = e.collect(ctx, j, targets, now)
	}
	if len(outcomes) == 0 {
		return nil
	}
	_, err = e.store.Update(ctx, func(s *State) (bool, error) {
		for id, o := range outcomes {
			if j, ok := s.Get(id); ok { // deleted meanwhile: nothing to record
				o.apply(j, s.Config.RetentionPeriod, e.bounds.MaxResults)
			}
		}
		return true, nil
	})
	return err
}

// outcome is one collection of one job.
type outcome struct {
	at      time.Time
	scope   []Target
	values  []Result
	queries int
	failed  int
	reason  string // why the last failed query failed ("" none)
}

// collect queries each of j's measurements over the hosts of its scope.
func (e *Evaluator) collect(ctx context.Context, j *Job, targets []Target, now time.Time) *outcome {
	o := &outcome{at: now}
	byName := map[string][]Target{}
	var names []string
	for _, t := range targets {
		if !j.Scope.Matches(t) {
			continue
		}
		o.scope = append(o.scope, t)
		if t.Name != "" && byName[t.Name] == nil {
			names = append(names, t.Name)
		}
		byName[t.Name] = append(byName[t.Name], t)
	}
	if len(names) == 0 {
		return o
	}
	window := RateWindow(time.Duration(j.Interval) * time.Second)
	for _, m := range j.Measurements {
		q, err := Query(m, names, window)
		if err != nil {
			continue
		}
		o.queries++
		v, _, _, err := e.prom.Query(ctx, q, now)
		if err != nil {
			o.failed++
			o.reason = failure(err)
			e.log.Debug("measurement query failed", zap.String("job", j.ID), zap.String("measurement", m), zap.Error(err))
			continue
		}
		vec, _ := v.(model.Vector)
		for _, sample := range vec {
			val := float64(sample.Value)
			if math.IsNaN(val) || math.IsInf(val, 0) {
				continue // no value (a rate over too few samples); JSON has no NaN
			}
			for _, t := range byName[HostOf(string(sample.Metric[model.LabelName(InstanceLabel)]))] {
				o.values = append(o.values, Result{MeasurementID: m, ResourceID: t.ResourceID, Value: val, At: now})
			}
		}
	}
	return o
}

// failure words a query's failure without an address: Prometheus's error class, or the transport's.
func failure(err error) string {
	var pe *promv1.Error
	if errors.As(err, &pe) {
		return "Prometheus answered " + string(pe.Type)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "Prometheus did not answer in time"
	}
	return "Prometheus unreachable (" + netcause.Of(err) + ")"
}

// apply records o in j: its values, the resources measured, the gaps and the status.
func (o *outcome) apply(j *Job, retentionDays, maxResults int) {
	at := o.at
	j.LastAttempt = &at
	if o.queries > 0 && o.failed == o.queries {
		j.Status = StatusFailed
		j.Message = fmt.Sprintf("no measurement collected: %s; the values shown are the last collected", o.reason)
		if n := len(j.Gaps); n == 0 || j.Gaps[n-1].To != nil {
			j.Gaps = append(j.Gaps, Gap{From: at, Reason: o.reason})
			if len(j.Gaps) > maxGaps {
				j.Gaps = j.Gaps[len(j.Gaps)-maxGaps:]
			}
		}
		return
	}
	if n := len(j.Gaps); n > 0 && j.Gaps[n-1].To == nil {
		j.Gaps[n-1].To = &at
	}
	j.LastSuccess = &at
	j.markMeasured(o.scope, at, maxResults)
	dropped := j.merge(o.values, at.Add(-time.Duration(retentionDays)*24*time.Hour), maxResults)
	j.Status, j.Message = o.status(dropped, maxResults)
}

// status is the job's status after a collection that reached Prometheus.
func (o *outcome) status(dropped, maxResults int) (string, string) {
	answered := map[string]bool{}
	for _, v := range o.values {
		answered[v.ResourceID] = true
	}
	var silent []string
	for _, t := range o.scope {
		if !answered[t.ResourceID] {
			silent = append(silent, t.ResourceID)
		}
	}
	switch {
	case o.failed > 0:
		return StatusDegraded, fmt.Sprintf("%d of %d measurements not collected: %s", o.failed, o.queries, o.reason)
	case dropped > 0:
		return StatusDegraded, fmt.Sprintf("%d values not kept: a job keeps at most %d (PERFORMANCE_MAX_RESULTS)", dropped, maxResults)
	case len(o.scope) == 0:
		return StatusRunning, "no inventory resource is in the job's scope"
	case len(silent) > 0:
		return StatusDegraded, fmt.Sprintf("%d of %d resources have no node exporter sample (instance label = the NetBox device name), first %s",
			len(silent), len(o.scope), silent[0])
	}
	return StatusRunning, ""
}

// markMeasured keeps the history of measured resources: a resource entering the scope is measured
// since at, one leaving it until at; closed entries beyond max go, oldest first.
func (j *Job) markMeasured(scope []Target, at time.Time, max int) {
	in := map[string]Target{}
	for _, t := range scope {
		in[t.ResourceID] = t
	}
	open := map[string]bool{}
	for i := range j.Measured {
		m := &j.Measured[i]
		if m.Until != nil {
			continue
		}
		if _, still := in[m.ResourceID]; still {
			open[m.ResourceID] = true
		} else {
			until := at
			m.Until = &until
		}
	}
	for _, t := range scope {
		if !open[t.ResourceID] {
			j.Measured = append(j.Measured, Measured{ResourceID: t.ResourceID, TypeID: t.TypeID, Since: at})
		}
	}
	for len(j.Measured) > max {
		i := 0
		for i < len(j.Measured) && j.Measured[i].Until == nil {
			i++
		}
		if i == len(j.Measured) {
			break
		}
		j.Measured = append(j.Measured[:i], j.Measured[i+1:]...)
	}
}

// merge replaces the results with fresh values, keeping an older value not collected now (a resource
// that left the scope or answered nothing this time) while newer than horizon; at most max, the newest
// first kept. It answers how many were dropped for max.
func (j *Job) merge(fresh []Result, horizon time.Time, max int) int {
	seen := map[[2]string]bool{}
	out := make([]Result, 0, len(fresh)+len(j.Results))
	for _, r := range fresh {
		key := [2]string{r.MeasurementID, r.ResourceID}
		if !seen[key] {
			seen[key] = true
			out = append(out, r)
		}
	}
	for _, r := range j.Results {
		if !seen[[2]string{r.MeasurementID, r.ResourceID}] && r.At.After(horizon) {
			out = append(out, r)
		}
	}
	dropped := 0
	if len(out) > max {
		dropped = len(out) - max
		out = out[:max]
	}
	j.Results = out
	return dropped
}
