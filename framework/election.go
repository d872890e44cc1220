package framework

import (
	"context"
	"errors"
	"fmt"
	"os"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// runElection campaigns for the lease; onLead starts the workers and the leader's runnables once this
// replica holds it. Losing the lease stops the leader's runnables and fails the operator: the process
// restarts and campaigns again rather than risk two handlers. Writing stops earlier still: RenewDeadline
// (at most LeaseDuration - 1 s) after the last successful renewal, before the Lease can be taken (fence.go).
func (o *Operator) runElection(ctx context.Context, onLead func(), done chan struct{}) error {
	host, _ := os.Hostname()
	identity := host + "_" + string(uuid.NewUUID())
	lease := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: o.opts.LeaderElectionID, Namespace: o.opts.LeaderElectionNamespace},
		Client:     o.clients.leaseClient().CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}
	// Nothing is written past the fence after the last renewal, before the Lease can be taken: fence.go.
	lock := &fencedLock{Interface: lease, fence: o.fence}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		Name:            o.opts.LeaderElectionID,
		LeaseDuration:   o.opts.LeaseDuration,
		RenewDeadline:   o.opts.RenewDeadline,
		RetryPeriod:     o.opts.RetryPeriod,
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {
				o.log.Info("leading: handling objects", zap.String("identity", identity))
				onLead()
			},
			OnStoppedLeading: func() {
				o.fence.end()
				if ctx.Err() == nil {
					o.deposed(errors.New("leader election lost"))
				}
			},
			OnNewLeader: func(id string) {
				if id != identity {
					o.log.Info("another instance leads; standing by", zap.String("leader", id))
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	go func() {
		defer close(done)
		le.Run(ctx)
	}()
	return nil
}

// deposed stops what only the leader runs and fails the operator: the lease is lost, or its fence lapsed.
func (o *Operator) deposed(err error) {
	o.leading.Store(false)
	o.leaderOnly.stop()
	o.Fail(err)
}
