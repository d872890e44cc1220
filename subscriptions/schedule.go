package subscriptions

import (
	"context"
	"time"
)

// schedule is both notifiers' loop once they deliver, until ctx ends: the subscriptions re-read every
// SubscriptionPoll, poll called every every (what each notifier diffs on a clock of its own: the
// deployment managers, the polled objects), the delivered progress persisted every PersistEvery.
func schedule(ctx context.Context, cfg NotifierConfig, set *subscriberSet, every time.Duration, poll func(context.Context)) {
	subTick := cfg.Clock.NewTicker(cfg.SubscriptionPoll)
	pollTick := cfg.Clock.NewTicker(every)
	persistTick := cfg.Clock.NewTicker(cfg.PersistEvery)
	defer subTick.Stop()
	defer pollTick.Stop()
	defer persistTick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-subTick.C():
			set.sync(ctx)
		case <-pollTick.C():
			poll(ctx)
		case <-persistTick.C():
			set.persist(ctx)
		}
	}
}
