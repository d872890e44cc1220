// Package backoff is the one capped exponential backoff of the operator: the workqueue's error retry and
// the event writers' retries (framework), NetBox GET retries and the availability check (netbox), the
// inventory notifier's delivery retries (subscriptions) all wait Base·2ⁿ up to Max. It is here rather
// than on apimachinery's wait.Backoff because netbox may not depend on any k8s.io module.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Exponential waits Base before the first retry and doubles up to Max. Jitter spreads each wait over
// [d·(1−Jitter/2), d·(1+Jitter/2)] so that many clients do not retry in lockstep; 0 means none.
type Exponential struct {
	Base, Max time.Duration
	Jitter    float64
}

// Delay is the wait before retry n (0 = the first retry).
func (e Exponential) Delay(n int) time.Duration {
	if e.Base <= 0 {
		return 0
	}
	d := e.Max
	if n < 62 {
		if b := e.Base << n; b > 0 && b>>n == e.Base && b < e.Max {
			d = b
		}
	}
	if e.Jitter <= 0 || d <= 0 {
		return d
	}
	spread := time.Duration(float64(d) * e.Jitter)
	return d - spread/2 + time.Duration(rand.Int64N(int64(spread)+1))
}
