package framework

import (
	"context"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/flowcontrol"
)

// bucket is one API resource's client-side token bucket (--kube-api-qps/--kube-api-burst): client-go's
// flowcontrol.NewTokenBucketRateLimiter (client-go util/flowcontrol/throttle.go: a rate.Limiter of qps
// with burst tokens, full at the start) with two additions a write that may yield needs (yield.go): a
// token can be taken ahead, only if one is free now, and spent by the request it was taken for; and the
// bucket says how long its queue of waiting calls is.
type bucket struct {
	lim *rate.Limiter
	qps float32
}

var _ flowcontrol.RateLimiter = (*bucket)(nil)

func newBucket(qps float32, burst int) *bucket {
	return &bucket{lim: rate.NewLimiter(rate.Limit(qps), burst), qps: qps}
}

// TryAccept, Accept, Wait, Stop and QPS are client-go's RateLimiter, as its token bucket has them.
func (b *bucket) TryAccept() bool { return b.lim.Allow() }

// Accept blocks until a token is free.
func (b *bucket) Accept() {
	now := time.Now()
	time.Sleep(b.lim.ReserveN(now, 1).DelayFrom(now))
}

// Wait takes a token, waiting for one unless the call's context carries one taken ahead (takeAhead).
func (b *bucket) Wait(ctx context.Context) error {
	if t, ok := ctx.Value(aheadKey{}).(*atomic.Bool); ok && t.CompareAndSwap(false, true) {
		return nil
	}
	return b.lim.Wait(ctx)
}

// Stop does nothing, as for client-go's bucket.
func (b *bucket) Stop() {}

// QPS is the refill rate.
func (b *bucket) QPS() float32 { return b.qps }

// aheadKey marks a context that carries a token taken ahead. The token is spent once: a retry of the same
// call (client-go retries a 429 after its Retry-After) waits for a token as any call does.
type aheadKey struct{}

// takeAhead takes a token now if one is free (no call is waiting for one and the bucket is not empty) and
// answers a context whose call spends it instead of waiting.
func (b *bucket) takeAhead(ctx context.Context) (context.Context, bool) {
	if !b.lim.Allow() {
		return ctx, false
	}
	return context.WithValue(ctx, aheadKey{}, new(atomic.Bool)), true
}

// backlog is how long a call asking now would wait for its token: the calls already waiting, ahead of it.
func (b *bucket) backlog() time.Duration {
	now := time.Now()
	r := b.lim.ReserveN(now, 1)
	defer r.CancelAt(now)
	return r.DelayFrom(now)
}
