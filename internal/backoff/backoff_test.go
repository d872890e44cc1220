package backoff

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestDelayDoublesUpToTheCap(t *testing.T) {
	e := Exponential{Base: time.Second, Max: 15 * time.Second}
	var got []time.Duration
	for n := range 7 {
		got = append(got, e.Delay(n))
	}
	s := time.Second
	assert.Equal(t, []time.Duration{s, 2 * s, 4 * s, 8 * s, 15 * s, 15 * s, 15 * s}, got)
	assert.Equal(t, 15*s, e.Delay(1000), "no overflow for a large n")
	assert.Equal(t, 15*s, Exponential{Base: time.Duration(1) << 62, Max: 15 * s}.Delay(3), "no overflow for a large base")
	assert.Equal(t, 2*s, Exponential{Base: 3 * s, Max: 2 * s}.Delay(0), "a base above the cap waits the cap")
	assert.Zero(t, Exponential{Max: 2 * s}.Delay(4), "no base, no wait (as the workqueue's limiter)")
}

func TestJitterStaysWithinItsSpread(t *testing.T) {
	e := Exponential{Base: 250 * time.Millisecond, Max: 4 * time.Second, Jitter: 0.2}
	for n := range 8 {
		d := Exponential{Base: e.Base, Max: e.Max}.Delay(n)
		seen := map[time.Duration]bool{}
		for range 200 {
			j := e.Delay(n)
			seen[j] = true
			assert.GreaterOrEqual(t, j, d-d/10, "retry %d", n)
			assert.LessOrEqual(t, j, d+d/10, "retry %d", n)
		}
		assert.Greater(t, len(seen), 1, "retry %d: jitter varies the wait", n)
	}
}
