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

// singleRepeats: one request alone is measured this many times, one after another, and its samples are
// pooled. One sample of a few tens of milliseconds flips a ratio against the peer on scheduling noise.
const singleRepeats = 10

// runsAt is how many runs of n requests at once a latency row pools.
func runsAt(n int) int {
	if n == 1 {
		return singleRepeats
	}
	return 1
}

// timesAlone says how one request alone is measured.
func timesAlone() string { return fmt.Sprintf("%d times, one after another", singleRepeats) }

// atOnce names a latency row.
func atOnce(n int) string {
	if n == 1 {
		return "1 at once (" + timesAlone() + ")"
	}
	return fmt.Sprintf("%d at once", n)
}

// latencySamples are per-request latencies in seconds: create returned → fulfilled seen (up), first
// DELETE sent → gone seen (down).
type latencySamples struct{ up, down []float64 }

// samples is what the watch saw of the run's requests: created answers when each create returned,
// deleted when the first DELETE was sent.
func (f *finals) samples(created map[string]time.Time, deleted time.Time) latencySamples {
	f.mu.Lock()
	defer f.mu.Unlock()
	var s latencySamples
	for name, at := range f.fulfilled {
		if c, ok := created[name]; ok {
			s.up = append(s.up, at.Sub(c).Seconds())
		}
	}
	for _, at := range f.gone {
		s.down = append(s.down, at.Sub(deleted).Seconds())
	}
	return s
}

// with pools two runs' samples.
func (s latencySamples) with(o latencySamples) latencySamples {
	return latencySamples{up: append(append([]float64{}, s.up...), o.up...), down: append(append([]float64{}, s.down...), o.down...)}
}

// at is the samples' p50/p99, as the latency at n requests at once.
func (s latencySamples) at(n int) latencyAt {
	up, down := append([]float64{}, s.up...), append([]float64{}, s.down...)
	sort.Float64s(up)
	sort.Float64s(down)
	d := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	return latencyAt{N: n, Fulfilled: len(up), Gone: len(down),
		FulfilP50: d(quantile(up, 0.5)), FulfilP99: d(quantile(up, 0.99)),
		DeleteP50: d(quantile(down, 0.5)), DeleteP99: d(quantile(down, 0.99))}
}

// complete says whether every request of every pooled run was fulfilled and gone.
func (l latencyAt) complete() bool {
	want := l.N * runsAt(l.N)
	return l.Fulfilled == want && l.Gone == want
}

// latencyAtN is the run's latency at n requests at once (ok false when not measured): the last measured,
// so that with -n 1 the pooled runs of one request alone stand, not the main run's single sample.
func (r contenderRun) latencyAtN(n int) (latencyAt, bool) {
	for i := len(r.Latency) - 1; i >= 0; i-- {
		if r.Latency[i].N == n {
			return r.Latency[i], true
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
