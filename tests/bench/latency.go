package main

import (
	"fmt"
	"sort"
	"time"
)

// latencySizes are the burst sizes the side-by-side section measures latency at besides its own N
// (issue 39, item 4): one request alone, and a hundred at once.
var latencySizes = []int{1, 100}

// Latency targets: the world alone takes 3 steps (0.9 s) from a PackageVariant to a provisioned Cluster,
// so one request cannot be fulfilled sooner; these bound what the operator adds to it.
const (
	targetFulfilP99One = 2 * time.Second // create → fulfilled p99, one request alone
	targetDeleteP99One = 1 * time.Second // delete → gone p99, one request alone
)

// latencyAt is a run's per-request latency at N requests at once.
type latencyAt struct {
	N                    int
	Fulfilled, Gone      int
	FulfilP50, FulfilP99 time.Duration // create returned → fulfilled seen
	DeleteP50, DeleteP99 time.Duration // first DELETE sent → gone seen
}

// latency is what the watch saw of n requests: created answers when each create returned, deleted when
// the first DELETE was sent.
func (f *finals) latency(n int, created map[string]time.Time, deleted time.Time) latencyAt {
	f.mu.Lock()
	defer f.mu.Unlock()
	var up, down []float64
	for name, at := range f.fulfilled {
		if c, ok := created[name]; ok {
			up = append(up, at.Sub(c).Seconds())
		}
	}
	for _, at := range f.gone {
		down = append(down, at.Sub(deleted).Seconds())
	}
	sort.Float64s(up)
	sort.Float64s(down)
	d := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	return latencyAt{N: n, Fulfilled: len(up), Gone: len(down),
		FulfilP50: d(quantile(up, 0.5)), FulfilP99: d(quantile(up, 0.99)),
		DeleteP50: d(quantile(down, 0.5)), DeleteP99: d(quantile(down, 0.99))}
}

// latencyAtN is the run's latency at n requests at once (ok false when not measured).
func (r contenderRun) latencyAtN(n int) (latencyAt, bool) {
	for _, l := range r.Latency {
		if l.N == n {
			return l, true
		}
	}
	return latencyAt{}, false
}

func (l latencyAt) String() string {
	return fmt.Sprintf("fulfilled %s / %s (%d), gone %s / %s (%d)", durS(l.FulfilP50), durS(l.FulfilP99), l.Fulfilled,
		durS(l.DeleteP50), durS(l.DeleteP99), l.Gone)
}

// durS shows a latency; under a second in ms, so a verdict between two small ones shows what decided it.
func durS(d time.Duration) string {
	if d < time.Second {
		return ms(d)
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}
