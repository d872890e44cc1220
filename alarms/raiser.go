package alarms

import (
	"context"
	"maps"
	"reflect"
	"time"

	"go.uber.org/zap"

	"github.com/o2ims-operator/o2ims-operator/inventory"
)

// DefaultInterval is how often the raiser computes the faults.
const DefaultInterval = 10 * time.Second

// Config is the raiser's configuration.
type Config struct {
	Inventory       inventory.Config // the O-Cloud's ids
	CreationTimeout time.Duration    // CREATION_TIMEOUT: a request is stuck past half of it
	Interval        time.Duration    // 0: DefaultInterval
	Now             func() time.Time // nil: time.Now
}

// Raiser raises and clears the alarms, level-triggered: every Interval it computes the active faults
// from Facts (memory only) and makes the stored alarms agree — a new fault raised, a changed one updated
// (alarmChangedTime), one gone cleared (alarmClearedTime, perceivedSeverity CLEARED). Only the leader runs
// it (NeedLeaderElection): a framework runnable once the operator has them.
type Raiser struct {
	cfg     Config
	facts   Facts
	store   *Store
	metrics *Metrics
	log     *zap.Logger
}

// NewRaiser raises alarms from facts into store; metrics (may be nil) counts them.
func NewRaiser(cfg Config, facts Facts, store *Store, metrics *Metrics, log *zap.Logger) *Raiser {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Raiser{cfg: cfg, facts: facts, store: store, metrics: metrics, log: log}
}

// NeedLeaderElection: only the leader raises and clears.
func (r *Raiser) NeedLeaderElection() bool { return true }

// Start evaluates every Interval until ctx ends; a failed evaluation is logged and tried again at the
// next tick (the faults are recomputed whole, so nothing is lost).
func (r *Raiser) Start(ctx context.Context) error {
	return r.Run(ctx, func() bool { return true })
}

// Evaluate computes the faults once and stores what changed.
func (r *Raiser) Evaluate(ctx context.Context) error {
	now := r.cfg.Now().UTC()
	as := assess(r.cfg.Inventory, r.cfg.CreationTimeout, r.facts, now)
	var raised, cleared []*Definition
	dropped := 0
	_, err := r.store.Update(ctx, func(s *State) (bool, error) {
		raised, cleared, dropped = nil, nil, 0
		changed := false
		seen := map[string]bool{}
		active := s.Active()
		for _, f := range as.faults {
			id := AlarmID(r.cfg.Inventory, f.Def, f.Subject)
			seen[id] = true
			switch c := r.apply(s, id, f, now, active); c {
			case raisedNew, raisedAgain:
				active++
				raised, changed = append(raised, f.Def), true
			case updated:
				changed = true
			case refused:
				dropped++
			}
		}
		for _, a := range s.Alarms {
			def := a.Definition()
			if def == nil || !as.known[def] || seen[a.ID] {
				continue
			}
			if a.Held { // the fault went since it was cleared by hand: raise it again if it comes back
				a.Held, changed = false, true
			}
			if a.Active() {
				t := now
				a.Cleared, a.Changed, a.Severity, changed = &t, now, SeverityCleared, true
				cleared = append(cleared, def)
			}
		}
		return changed, nil
	})
	if err != nil {
		return err
	}
	r.count(raised, cleared, dropped)
	return nil
}

func (r *Raiser) count(raised, cleared []*Definition, dropped int) {
	if r.metrics == nil {
		return
	}
	for _, d := range raised {
		r.metrics.raised.WithLabelValues(d.Name).Inc()
	}
	for _, d := range cleared {
		r.metrics.Cleared(d, false)
	}
	r.metrics.dropped.Add(float64(dropped))
	for _, d := range raised {
		r.log.Info("alarm raised", zap.String("alarm", d.Name))
	}
}

type outcome int

const (
	unchanged outcome = iota
	raisedNew
	raisedAgain
	updated
	refused
)

// apply makes the stored alarm id agree with active fault f; active is how many alarms are raised.
func (r *Raiser) apply(s *State, id string, f Fault, now time.Time, active int) outcome {
	a, ok := s.Get(id)
	if !ok {
		if active >= MaxAlarms {
			return refused
		}
		s.put(&Alarm{ID: id, DefinitionID: f.Def.ID(), ProbableCauseID: f.Def.ProbableCauseID(), Raised: now, Changed: now,
			ResourceTypeID: f.ResourceTypeID, ResourceID: f.ResourceID, Severity: f.Def.Severity, Extensions: f.Extensions, Subject: f.Subject})
		return raisedNew
	}
	if a.Held {
		return unchanged
	}
	if !a.Active() {
		*a = Alarm{ID: id, DefinitionID: f.Def.ID(), ProbableCauseID: f.Def.ProbableCauseID(), Raised: now, Changed: now,
			ResourceTypeID: f.ResourceTypeID, ResourceID: f.ResourceID, Severity: f.Def.Severity, Extensions: f.Extensions, Subject: f.Subject}
		return raisedAgain
	}
	if a.ResourceID == f.ResourceID && a.ResourceTypeID == f.ResourceTypeID && sameExtensions(a.Extensions, f.Extensions) {
		return unchanged
	}
	a.ResourceID, a.ResourceTypeID, a.Extensions, a.Changed = f.ResourceID, f.ResourceTypeID, f.Extensions, now
	return updated
}

// sameExtensions compares as stored (a stored list reads back as []any of strings, like the fault's).
func sameExtensions(a, b map[string]any) bool {
	return maps.EqualFunc(a, b, func(x, y any) bool { return reflect.DeepEqual(x, y) })
}

// Run evaluates every Interval while leading() holds, until ctx ends. The operator runs the raiser as a
// runnable of the leader (Start: leading always true there); leading lets a test be a follower.
func (r *Raiser) Run(ctx context.Context, leading func() bool) error {
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	for {
		if leading() {
			if err := r.Evaluate(ctx); err != nil && ctx.Err() == nil {
				r.log.Warn("the alarms could not be evaluated; trying again", zap.Error(err))
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
