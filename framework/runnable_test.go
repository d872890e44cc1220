package framework

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// probeRunnable records a runnable's life: that it started (and whether the operator was ready and
// leading then), and that its context ended before Run returned.
type probeRunnable struct {
	leader                bool
	started, stopped      atomic.Bool
	readyAtStart, leading atomic.Bool
	op                    *Operator
	err                   error // returned at once when set
}

func (p *probeRunnable) NeedLeaderElection() bool { return p.leader }

func (p *probeRunnable) Start(ctx context.Context) error {
	p.readyAtStart.Store(p.op.Ready())
	p.leading.Store(p.op.Leading())
	p.started.Store(true)
	if p.err != nil {
		return p.err
	}
	<-ctx.Done()
	p.stopped.Store(true)
	return nil
}

// The runnables of every replica start once the startup activities are done, before the caches sync; the
// leader's once it leads (here at once: no leader election, once the caches synced). A stop cancels both
// and Run returns only after they have.
func TestRunnablesStartWhereTheyRunAndStopBeforeRunReturns(t *testing.T) {
	t.Parallel()
	every, leader := &probeRunnable{}, &probeRunnable{leader: true}
	var startupDone atomic.Bool
	to := newTestOperator(t, "runnables", Options{}, func(op *Operator, _ *Watch) {
		every.op, leader.op = op, op
		op.Add(every)
		op.Add(leader)
		op.OnStartup("first", func(context.Context) error {
			assert.False(t, every.started.Load(), "a runnable started before the startup activities were done")
			startupDone.Store(true)
			return nil
		})
	})
	to.start(t)
	eventually(t, 10*time.Second, leader.started.Load, "the leader's runnable never started")
	assert.True(t, startupDone.Load())
	assert.True(t, every.started.Load())
	assert.False(t, every.readyAtStart.Load(), "every replica's runnables start before the caches have synced")
	assert.True(t, leader.readyAtStart.Load() && leader.leading.Load(), "the leader's start once it leads")
	require.NoError(t, to.stop(t))
	assert.True(t, every.stopped.Load(), "Run returned before a runnable stopped")
	assert.True(t, leader.stopped.Load(), "Run returned before the leader's runnable stopped")
	assert.False(t, to.op.Leading())
}

// A runnable's error is the operator's one error path: it stops the operator, whether it runs on every
// replica (the NBI's serving loop dying) or only on the leader.
func TestARunnablesErrorStopsTheOperator(t *testing.T) {
	t.Parallel()
	for _, leader := range []bool{false, true} {
		r := &probeRunnable{leader: leader, err: errors.New("the northbound API stopped by itself")}
		to := newTestOperator(t, "runnable-fails", Options{}, func(op *Operator, _ *Watch) {
			r.op = op
			op.Add(r)
		})
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err := to.op.Run(ctx)
		cancel()
		require.EqualError(t, err, "the northbound API stopped by itself", "leader only: %v", leader)
	}
	// A function is a runnable of the leader.
	var ran atomic.Bool
	to := newTestOperator(t, "runnable-func", Options{}, func(op *Operator, _ *Watch) {
		op.Add(RunnableFunc(func(context.Context) error { ran.Store(op.Leading()); return errors.New("done badly") }))
	})
	require.EqualError(t, to.op.Run(context.Background()), "done badly")
	assert.True(t, ran.Load())
}

// Under leader election the leader's runnables run on the lease holder only: the standby starts its own
// when it takes over, not before; its runnables of every replica run all along.
func TestLeaderRunnablesRunOnlyOnTheLeaseHolder(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	require.NoError(t, srv.EnsureNamespace(context.Background(), "runnables-leader"))
	opts := Options{
		LeaderElect: true, LeaderElectionID: "runnables-leader", Namespace: "runnables-leader",
		LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 200 * time.Millisecond,
	}
	type replica struct {
		to            *testOperator
		leader, every *probeRunnable
	}
	mk := func() replica {
		r := replica{leader: &probeRunnable{leader: true}, every: &probeRunnable{}}
		r.to = newTestOperator(t, "runnables-leader", opts, func(op *Operator, _ *Watch) {
			r.leader.op, r.every.op = op, op
			op.Add(r.leader)
			op.Add(r.every)
		})
		return r
	}
	a, b := mk(), mk()
	a.to.start(t)
	eventually(t, 20*time.Second, a.leader.started.Load, "a never started its leader's runnable")
	b.to.start(t)
	eventually(t, 10*time.Second, b.every.started.Load, "b's runnable of every replica never started")
	time.Sleep(time.Second) // b campaigns meanwhile
	assert.False(t, b.leader.started.Load(), "the standby started a leader's runnable")
	require.NoError(t, a.to.stop(t))
	assert.True(t, a.leader.stopped.Load(), "a's leader runnable outlived a's Run (and its lease)")
	eventually(t, 20*time.Second, b.leader.started.Load, "b never started its leader's runnable on taking over")
	assert.True(t, b.leader.leading.Load())
}
