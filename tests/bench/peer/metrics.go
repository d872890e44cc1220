package main

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// eventsPosted counts the events the peer handed its recorder, as the operator's
// o2ims_events_posted_total does: the bench compares them with what the API server holds.
var eventsPosted = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "o2ims_events_posted_total", Help: "Events the peer handed to its recorder.",
})

func init() {
	metrics.Registry.MustRegister(eventsPosted)
	// client-go's rate-limiter wait is opt-in in controller-runtime (pkg/metrics/client_go_adapter.go);
	// the bench compares it with the operator's, in the operator's buckets (framework/metrics.go).
	metrics.RegisterRESTClientMetricsWithOptions(metrics.RESTClientMetricsOptions{
		DurationBuckets: []float64{.001, .005, .025, .1, .25, .5, 1, 2, 4, 8, 15, 30, 60},
	}, metrics.MetricRateLimiterLatency)
}
