package framework

import (
	"context"
	"sync"

	"go.uber.org/zap"
)

// Runnable is a long-running component the operator starts and stops, as controller-runtime's manager
// runs one (pkg/manager): Start runs until ctx ends and then returns nil. An error it returns stops the
// operator — the process exits non-zero with the error as its one-line reason — unless the operator is
// already stopping it (then the error is only logged). Start is called at most once.
type Runnable interface {
	Start(ctx context.Context) error
}

// LeaderElectionRunnable says where a Runnable runs. NeedLeaderElection true: only on the leader, started
// when this replica starts leading (the caches are synced by then; without --leader-elect, as soon as
// they are) and stopped when it stops: its context is cancelled and its Start waited for until the drain
// deadline, before the lease is released, so that two replicas do not run it at once — provided Start
// returns promptly once its context ends (one still running at the deadline is logged, and the lease is
// released anyway). False: on every replica, from the end of the startup activities until the stop. A Runnable
// that does not implement it runs only on the leader, as with controller-runtime.
type LeaderElectionRunnable interface {
	NeedLeaderElection() bool
}

// RunnableFunc is a function as a Runnable (one that runs only on the leader).
type RunnableFunc func(ctx context.Context) error

// Start calls f.
func (f RunnableFunc) Start(ctx context.Context) error { return f(ctx) }

// Add registers a runnable; like the activities, it is registered before Run.
func (o *Operator) Add(r Runnable) {
	if le, ok := r.(LeaderElectionRunnable); ok && !le.NeedLeaderElection() {
		o.everyReplica.members = append(o.everyReplica.members, r)
		return
	}
	o.leaderOnly.members = append(o.leaderOnly.members, r)
}

// runnableGroup starts its members together, each in its own goroutine under one context, and stops
// them together: cancel that context, then wait (bounded) for every Start to return.
type runnableGroup struct {
	name    string // for the logs: "leader" or "every replica"
	members []Runnable
	log     *zap.Logger
	fail    func(error) // the operator's one error path (Operator.Fail)

	mu      sync.Mutex
	cancel  context.CancelFunc // nil until started
	stopped bool               // stop was called: start does nothing any more
	running sync.WaitGroup
}

// start runs every member; a member whose Start fails while the group is not stopping fails the operator.
// It does nothing once stop has been called (leadership acquired while the operator stops).
func (g *runnableGroup) start() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped || g.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	for _, r := range g.members {
		g.running.Add(1)
		go func() {
			defer g.running.Done()
			err := r.Start(ctx)
			switch {
			case err == nil:
			case ctx.Err() != nil:
				g.log.Warn("a runnable failed while stopping", zap.String("runnables", g.name), zap.Error(err))
			default:
				g.fail(err)
			}
		}()
	}
}

// stop cancels the members' context; after it, start does nothing.
func (g *runnableGroup) stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stopped = true
	if g.cancel != nil {
		g.cancel()
	}
}

// wait stops the group and waits for every member's Start to return, at most until ctx ends; false when
// some had not returned by then (they finish in the background).
func (g *runnableGroup) wait(ctx context.Context) bool {
	g.stop()
	done := make(chan struct{})
	go func() { g.running.Wait(); close(done) }()
	select {
	case <-done:
		return true
	default:
	}
	select {
	case <-done:
		return true
	case <-ctx.Done():
		g.log.Warn("runnables still running at the deadline; stopping without them", zap.String("runnables", g.name))
		return false
	}
}
