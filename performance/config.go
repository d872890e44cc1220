package performance

import (
	"fmt"
	"strconv"

	"github.com/o2ims-operator/o2ims-operator/serviceconfig"
)

// ServiceConfig is the PerformanceServiceConfiguration (clause 3.7.6.2.4): retentionPeriod, in days, is
// how long a collected value of a resource no longer measured is kept in its job's report (a value still
// measured is replaced at every collection). The alarms' is the same in shape.
type ServiceConfig = serviceconfig.Config

// Retention bounds, in days (NOTE 1 of Table 3.7.6.2.4-1: a floor it cannot be set below).
const (
	DefaultRetentionDays = serviceconfig.DefaultRetentionDays
	MaxRetentionDays     = serviceconfig.MaxRetentionDays
)

// Bounds keep the jobs and their reports within the store (one ConfigMap, below 1 MiB) and the queries
// within what a Prometheus is asked by one client.
type Bounds struct {
	MaxJobs     int // jobs kept; one more is a 409
	MinInterval int // seconds: the least collectionInterval
	MaxResults  int // values kept per job (measurements × resources); beyond, the job is DEGRADED
	// MaxSubscriptions caps the performanceSubscriptions; one more is a 409.
	MaxSubscriptions int
}

// MaxInterval is the greatest collectionInterval, one day.
const MaxInterval = 86400

// DefaultBounds are the bounds without configuration: 20 jobs of at most 500 values each (about 100
// bytes of JSON a value, gzip'd well below the ConfigMap's limit), collected at most every 30 s.
var DefaultBounds = Bounds{MaxJobs: 20, MinInterval: 30, MaxResults: 500, MaxSubscriptions: 20}

// Environment variables of the performance API (internal/app/env.go lists them).
const (
	EnvMaxJobs     = "PERFORMANCE_MAX_JOBS"
	EnvMinInterval = "PERFORMANCE_MIN_INTERVAL"
	EnvMaxResults  = "PERFORMANCE_MAX_RESULTS"
)

// BoundsFromEnv reads the bounds; each must be a positive whole number within its ceiling.
func BoundsFromEnv(getenv func(string) string) (Bounds, error) {
	b := DefaultBounds
	for _, v := range []struct {
		name     string
		into     *int
		from, to int
	}{
		{EnvMaxJobs, &b.MaxJobs, 1, 200},
		{EnvMinInterval, &b.MinInterval, 1, MaxInterval},
		{EnvMaxResults, &b.MaxResults, 1, 5000},
		{EnvMaxSubscriptions, &b.MaxSubscriptions, 1, 1000},
	} {
		raw := getenv(v.name)
		if raw == "" {
			continue
		}
		n, err := strconv.Atoi(raw)
		if err != nil || n < v.from || n > v.to {
			return Bounds{}, fmt.Errorf("%s=%q: want a whole number from %d to %d", v.name, raw, v.from, v.to)
		}
		*v.into = n
	}
	return b, nil
}
