package main

import (
	"net/http"

	dto "github.com/prometheus/client_model/go"

	"github.com/o2ims-operator/o2ims-operator/tests/promtest"
	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

// Helpers over two scrapes of an operator's /metrics (deltas: what happened between them).

// labelsOf and matches read a series' labels.
var labelsOf, matches = promtest.Labels, promtest.Matches

// writesByMethod is the mutating API requests by "resource" and "resource METHOD" (counted at the
// operator's transport), as a delta between two scrapes.
func writesByMethod(before, after stack.Metrics) map[string]float64 {
	return restRequestsDelta(before, after, func(l map[string]string) []string {
		if l["method"] == http.MethodGet || l["method"] == http.MethodHead || l["method"] == "" {
			return nil
		}
		return []string{l["resource"], l["resource"] + " " + l["method"]}
	})
}

// restRequestsDelta is the change of the operator's o2ims_rest_client_requests_by_resource_total between two
// scrapes, each series counted under the keys keysOf gives its labels (none: not counted); keys that
// did not change are left out.
func restRequestsDelta(before, after stack.Metrics, keysOf func(labels map[string]string) []string) map[string]float64 {
	count := func(m stack.Metrics) map[string]float64 {
		out := map[string]float64{}
		fam, ok := m["o2ims_rest_client_requests_by_resource_total"]
		if !ok {
			return out
		}
		for _, s := range fam.GetMetric() {
			for _, k := range keysOf(labelsOf(s)) {
				out[k] += s.GetCounter().GetValue()
			}
		}
		return out
	}
	a, b := count(before), count(after)
	out := map[string]float64{}
	for k, v := range b {
		if d := v - a[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// counterDelta is the change of a family's matching series.
func counterDelta(before, after stack.Metrics, name string, want map[string]string) float64 {
	return after.Sum(name, want) - before.Sum(name, want)
}

// histDelta is the change of a histogram (matching series merged): count, sum and cumulative buckets.
type histDelta = promtest.Histogram

func histogramDelta(before, after stack.Metrics, name string, want map[string]string) histDelta {
	return histogramDeltaWhere(before, after, name, func(s *dto.Metric) bool { return matches(s, want) })
}

// histogramDeltaWhere is histogramDelta over the series keep accepts.
func histogramDeltaWhere(before, after stack.Metrics, name string, keep func(*dto.Metric) bool) histDelta {
	return after.HistogramWhere(name, keep).Minus(before.HistogramWhere(name, keep))
}

// quantiles of raw samples (nearest rank).
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return sorted[i]
}
