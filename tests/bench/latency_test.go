package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestOneRequestAloneIsPooledOverItsRuns(t *testing.T) {
	require.Equal(t, singleRepeats, runsAt(1))
	require.Equal(t, 1, runsAt(100))
	var pooled latencySamples
	for i := range singleRepeats {
		// Nine quick runs and one slow one: the pool's p99 is the slow one's, its p50 a quick one's.
		up, down := 0.9, 0.02
		if i == 3 {
			up, down = 1.5, 0.2
		}
		pooled = pooled.with(latencySamples{up: []float64{up}, down: []float64{down}})
	}
	l := pooled.at(1)
	require.True(t, l.complete())
	require.Equal(t, 900*time.Millisecond, l.FulfilP50.Round(time.Millisecond))
	require.Equal(t, 20*time.Millisecond, l.DeleteP50.Round(time.Millisecond))
	require.Greater(t, l.DeleteP99, 100*time.Millisecond)
	short := latencySamples{up: pooled.up[:9], down: pooled.down}.at(1)
	require.False(t, short.complete(), "a run whose request was never fulfilled")
	// With -n 1 the main run's single sample comes first; the pooled runs are what the row shows.
	run := contenderRun{Latency: []latencyAt{latencySamples{up: []float64{5}, down: []float64{5}}.at(1), l}}
	got, ok := run.latencyAtN(1)
	require.True(t, ok)
	require.Equal(t, l, got)
	require.Equal(t, "1 at once (10 times, one after another)", atOnce(1))
	require.Equal(t, "100 at once", atOnce(100))
}
