package framework

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Run starts everything and blocks until ctx is done (clean stop, nil) or the operator fails. It goes
// through four phases:
//
//   - startup: the health listener, then the startup activities in their order, then the runnables of
//     every replica (Add; NeedLeaderElection false);
//   - sync: the event writers and the informers, until every cache has synced (then ready);
//   - work: leader election if enabled and, once leading, the workers and the leader's runnables;
//   - drain: from the stop signal (or a failure: Fail, a runnable's error, the lease lost) on.
//
// A stop signal ends whichever phase is running; everything that follows shares one deadline
// (ShutdownTimeout). Whatever a phase started is undone, in reverse order, however Run returns: the
// event writers, the informers, the runnables of every replica, the cleanup activities, the listener.
func (o *Operator) Run(ctx context.Context) error {
	s := newSession(o, ctx)
	defer s.unwind()
	if err := s.startHealth(); err != nil {
		return err
	}
	if done, err := s.runStartup(ctx); done {
		return err
	}
	if done, err := s.syncCaches(); done {
		return err
	}
	if err := s.startWork(); err != nil {
		return err
	}
	<-s.run.Done()
	return s.drain()
}

// session is what one Run started and the contexts it started it under; its methods are Run's phases.
type session struct {
	o *Operator
	// run ends at the stop signal or at the first failure: phases waiting on something stop waiting.
	run  context.Context
	stop *stopDeadline
	// work is the passes' context, cancelled only when they outlive the drain deadline.
	work     context.Context
	stopWork context.CancelFunc
	passes   sync.WaitGroup
	// election runs the lease until the passes have stopped; electionDone is closed once it is released.
	stopElection context.CancelFunc
	electionDone chan struct{}
	undo         []func()
}

func newSession(o *Operator, ctx context.Context) *session {
	run, cancelRun := context.WithCancel(ctx)
	go func() {
		select {
		case <-o.failed:
			cancelRun()
		case <-run.Done():
		}
	}()
	s := &session{o: o, run: run, stop: &stopDeadline{budget: o.opts.ShutdownTimeout}}
	s.atEnd(cancelRun)
	s.atEnd(s.stop.release)
	return s
}

// atEnd registers what undoes a step; unwind runs them last first.
func (s *session) atEnd(fn func()) { s.undo = append(s.undo, fn) }

func (s *session) unwind() {
	for i := len(s.undo) - 1; i >= 0; i-- {
		s.undo[i]()
	}
}

// startHealth binds the liveness listener (/healthz, /readyz, /metrics); it is closed last.
func (s *session) startHealth() error {
	o := s.o
	if o.health == nil {
		return nil
	}
	o.health.probes = o.probes // registered after New
	if err := o.health.start(); err != nil {
		return fmt.Errorf("liveness endpoint %s: %w", o.health.addr, err)
	}
	s.atEnd(func() { o.health.stop(s.stop.ctx()) })
	return nil
}

// runStartup runs the startup activities in their order, then starts the runnables of every replica.
// done: Run returns err (a failed activity, a failure, or nil for a signal).
func (s *session) runStartup(ctx context.Context) (done bool, err error) {
	o := s.o
	// Cleanup runs however we leave, after the workers and the runnables have stopped.
	s.atEnd(func() { s.runCleanup(s.stop.ctx()) })
	for _, a := range o.startup {
		o.readiness.setStage("startup activity %q running", a.id)
		actx := withWaiting(s.run, func(msg string) { o.readiness.setStage("startup activity %q: %s", a.id, msg) })
		if err := a.fn(actx); err != nil {
			if f := o.failure(); f != nil {
				return true, f
			}
			if ctx.Err() != nil {
				o.log.Info("stopping: signal received during startup", zap.String("activity", a.id))
				return true, nil
			}
			return true, fmt.Errorf("startup activity %q failed: %w", a.id, err)
		}
		o.log.Info("activity succeeded", zap.String("activity", a.id))
	}
	o.everyReplica.start()
	s.atEnd(func() { o.everyReplica.wait(s.stop.ctx()) })
	return false, nil
}

// syncCaches starts the event writers and the informers and waits until every cache has synced, keeping
// /readyz's reason current. done: Run returns err (a failure, or nil for a signal).
func (s *session) syncCaches() (done bool, err error) {
	o := s.o
	informerCtx, stopInformers := context.WithCancel(context.Background())
	s.atEnd(stopInformers)
	o.events = newEventRecorder(informerCtx, o.clients.Kubernetes, o.opts.Name, o.log, o.metrics, o.mayAct)
	o.events.redact = o.opts.Redact
	s.atEnd(func() { bounded(s.stop.ctx(), o.events.shutdown) })
	if err := o.buildControllers(); err != nil {
		return true, err
	}
	o.informers.start(informerCtx)
	go o.informers.sweepRefusals(s.run)
	if !o.informers.waitForSync(s.run) {
		if f := o.failure(); f != nil {
			o.log.Error("stopping on a failure before the caches synced", zap.Error(f))
			return true, f
		}
		o.log.Info("stopping: signal received before the caches synced")
		return true, nil
	}
	// The initial sync decoded what the transform then trimmed (last-applied annotations; managedFields
	// too where the server answered a list rather than a watch stream): give that garbage back to the OS
	// now rather than carry it in the RSS until the scavenger does.
	if !o.opts.KeepSyncGarbage {
		debug.FreeOSMemory()
	}
	o.ready.Store(true)
	o.log.Info("caches synced; ready", zap.Int("workers", o.opts.Workers))
	return false, nil
}

// startWork leads at once without leader election, or campaigns for the lease and leads once it holds it.
// The lease is released only after the passes and the leader's runnables have stopped or the drain
// deadline has passed (drain), so a successor does not overlap them.
func (s *session) startWork() error {
	o := s.o
	s.work, s.stopWork = context.WithCancel(context.Background())
	s.atEnd(s.stopWork)
	electionCtx, stopElection := context.WithCancel(context.Background())
	s.stopElection, s.electionDone = stopElection, make(chan struct{})
	s.atEnd(stopElection)
	if !o.opts.LeaderElect {
		close(s.electionDone)
		s.lead()
		return nil
	}
	return o.runElection(electionCtx, func() { s.lead() }, s.electionDone)
}

// lead starts what runs only on the leader: the workers of every watch and the leader's runnables. With
// leader election the passes' context ends with the lease fence (fence.go).
func (s *session) lead() {
	o := s.o
	o.leading.Store(true)
	work := s.work
	if o.fence != nil {
		work = o.fence.leaderContext(work)
	}
	for _, c := range o.ctrls {
		c.run(work, o.opts.Workers, &s.passes)
	}
	o.leaderOnly.start()
}

// drain stops taking work, lets passes in flight and the leader's runnables finish until the drain
// deadline (then cuts the passes off), and releases the lease; what is left of the budget is the
// unwinding's (event writers, runnables, cleanup, listener). It returns the failure that stopped the
// operator, nil for a signal.
func (s *session) drain() error {
	o := s.o
	failure := o.failure()
	if failure != nil {
		o.log.Error("stopping on a failure", zap.Error(failure))
	} else {
		o.log.Info("stopping: signal received")
	}
	deadline := s.stop.start()
	o.ready.Store(false)
	o.readiness.setStage("stopping")
	o.leaderOnly.stop()
	o.everyReplica.stop()
	for _, c := range o.ctrls {
		c.queue.ShutDown()
	}
	drainCtx, cancel := context.WithDeadline(context.Background(), deadline.Add(-cleanupReserve(o.opts.ShutdownTimeout)))
	defer cancel()
	s.drainPasses(drainCtx)
	o.leaderOnly.wait(drainCtx)
	o.leading.Store(false)
	s.stopElection()
	select {
	case <-s.electionDone:
	case <-s.stop.ctx().Done():
		o.log.Warn("the lease was not released within the shutdown deadline; it expires by itself")
	}
	return failure
}

// drainPasses waits for the passes in flight until drainCtx ends, then cancels them and waits until the
// stop's deadline at most.
func (s *session) drainPasses(drainCtx context.Context) {
	o := s.o
	finished := make(chan struct{})
	go func() { s.passes.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-drainCtx.Done():
		o.log.Warn("passes still running at the drain deadline; cancelling them")
		s.stopWork()
		select {
		case <-finished:
		case <-s.stop.ctx().Done():
			o.log.Warn("passes did not return after being cancelled; stopping without them")
		}
	}
}

// runCleanup runs the cleanup activities in their order; a failed one is logged and the next runs.
func (s *session) runCleanup(ctx context.Context) {
	o := s.o
	for _, a := range o.cleanup {
		if err := a.fn(ctx); err != nil {
			o.log.Error("cleanup activity failed", zap.String("activity", a.id), zap.Error(err))
			continue
		}
		o.log.Info("activity succeeded", zap.String("activity", a.id))
	}
}

// cleanupReserve is the part of the shutdown budget passes in flight leave to the cleanup activities.
func cleanupReserve(budget time.Duration) time.Duration { return min(budget/4, time.Second) }

// stopDeadline is the one deadline of a stop: started when the stop begins (or, on an early return,
// when the first deferred step asks for it) and shared by every step after.
type stopDeadline struct {
	budget time.Duration
	once   sync.Once
	at     time.Time
	c      context.Context
	cancel context.CancelFunc
}

func (s *stopDeadline) start() time.Time {
	s.once.Do(func() {
		s.at = time.Now().Add(s.budget)
		s.c, s.cancel = context.WithDeadline(context.Background(), s.at)
	})
	return s.at
}

func (s *stopDeadline) ctx() context.Context { s.start(); return s.c }

func (s *stopDeadline) release() {
	if s.cancel != nil {
		s.cancel()
	}
}

// bounded runs fn, waiting for it at most until ctx ends (fn then finishes in the background).
func bounded(ctx context.Context, fn func()) {
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
