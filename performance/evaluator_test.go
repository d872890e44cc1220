package performance

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A sequence of collections (random outcomes from a printed seed): whatever happens, the job's record
// stays within its bounds and consistent — at most maxGaps gaps, at most one open and only the last,
// open exactly while the last attempt failed; results and history within maxResults, no (measurement,
// resource) twice, no result older than the retention unless just collected; lastSuccess never after
// lastAttempt.
func TestCollectionsKeepTheJobBoundedAndConsistent(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	const max = 8
	targets := make([]Target, 6)
	for i := range targets {
		targets[i] = Target{ResourceID: fmt.Sprintf("r%d", i), TypeID: "t", Name: fmt.Sprintf("h%d", i)}
	}
	j := &Job{ID: "j", Interval: 1, Measurements: []string{"memory.total", "memory.available"}}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for step := range 400 {
		at = at.Add(time.Duration(rng.IntN(7200)) * time.Second)
		o := &outcome{at: at, queries: 2}
		for _, tg := range targets {
			if rng.IntN(3) > 0 {
				o.scope = append(o.scope, tg)
			}
		}
		switch rng.IntN(4) {
		case 0:
			o.failed, o.reason = 2, "Prometheus unreachable (connection refused)"
		case 1:
			o.failed, o.reason = 1, "Prometheus answered bad_data"
		}
		if o.failed < 2 {
			for _, tg := range o.scope {
				if rng.IntN(4) > 0 {
					o.values = append(o.values, Result{MeasurementID: j.Measurements[rng.IntN(2)], ResourceID: tg.ResourceID, Value: float64(step), At: at})
				}
			}
		}
		o.apply(j, 1, max)

		require.LessOrEqual(t, len(j.Gaps), maxGaps)
		for i, g := range j.Gaps {
			require.True(t, g.To != nil || i == len(j.Gaps)-1, "only the last gap may be open")
		}
		open := len(j.Gaps) > 0 && j.Gaps[len(j.Gaps)-1].To == nil
		require.Equal(t, o.failed == 2, open, "step %d: a gap is open exactly while nothing is collected", step)
		require.Equal(t, o.failed == 2, j.Status == StatusFailed, "step %d", step)
		require.LessOrEqual(t, len(j.Results), max)
		require.LessOrEqual(t, len(j.Measured), max+len(targets))
		seen := map[[2]string]bool{}
		for _, r := range j.Results {
			key := [2]string{r.MeasurementID, r.ResourceID}
			require.False(t, seen[key], "step %d: %v twice", step, key)
			seen[key] = true
			require.True(t, r.At.After(at.Add(-24*time.Hour)) || o.failed == 2, "step %d: a result beyond the retention", step)
		}
		if j.LastSuccess != nil {
			require.False(t, j.LastSuccess.After(*j.LastAttempt))
		}
		_ = j.Attrs() // always renders
	}
}
