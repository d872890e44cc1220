package main

import (
	"net/http"
	"sort"

	dto "github.com/prometheus/client_model/go"

	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

// Helpers over two scrapes of an operator's /metrics (deltas: what happened between them).

func labelsOf(s *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range s.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func matches(s *dto.Metric, want map[string]string) bool {
	have := labelsOf(s)
	for k, v := range want {
		if v != "" && have[k] != v {
			return false
		}
	}
	return true
}

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

// restRequestsDelta is the change of the operator's rest_client_requests_by_resource_total between two
// scrapes, each series counted under the keys keysOf gives its labels (none: not counted); keys that
// did not change are left out.
func restRequestsDelta(before, after stack.Metrics, keysOf func(labels map[string]string) []string) map[string]float64 {
	count := func(m stack.Metrics) map[string]float64 {
		out := map[string]float64{}
		fam, ok := m["rest_client_requests_by_resource_total"]
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
type histDelta struct {
	Count   float64
	Sum     float64
	buckets map[float64]float64
}

func histogramDelta(before, after stack.Metrics, name string, want map[string]string) histDelta {
	return histogramDeltaWhere(before, after, name, func(s *dto.Metric) bool { return matches(s, want) })
}

// histogramDeltaWhere is histogramDelta over the series keep accepts.
func histogramDeltaWhere(before, after stack.Metrics, name string, keep func(*dto.Metric) bool) histDelta {
	read := func(m stack.Metrics) histDelta {
		h := histDelta{buckets: map[float64]float64{}}
		fam, ok := m[name]
		if !ok {
			return h
		}
		for _, s := range fam.GetMetric() {
			if s.Histogram == nil || !keep(s) {
				continue
			}
			h.Count += float64(s.GetHistogram().GetSampleCount())
			h.Sum += s.GetHistogram().GetSampleSum()
			for _, b := range s.GetHistogram().GetBucket() {
				h.buckets[b.GetUpperBound()] += float64(b.GetCumulativeCount())
			}
		}
		return h
	}
	a, b := read(before), read(after)
	d := histDelta{Count: b.Count - a.Count, Sum: b.Sum - a.Sum, buckets: map[float64]float64{}}
	for le, c := range b.buckets {
		d.buckets[le] = c - a.buckets[le]
	}
	return d
}

// Quantile interpolates inside the bucket, as histogram_quantile does; ok is false without samples.
func (h histDelta) Quantile(q float64) (float64, bool) {
	if h.Count <= 0 {
		return 0, false
	}
	var les []float64
	for le := range h.buckets {
		les = append(les, le)
	}
	sort.Float64s(les)
	rank := q * h.Count
	prevLE, prevCount := 0.0, 0.0
	for _, le := range les {
		c := h.buckets[le]
		if c >= rank {
			if c == prevCount {
				return le, true
			}
			return prevLE + (le-prevLE)*(rank-prevCount)/(c-prevCount), true
		}
		prevLE, prevCount = le, c
	}
	return prevLE, true
}

// Bound is the upper bound of the bucket holding the q-quantile: "at most this" (ok false without samples).
func (h histDelta) Bound(q float64) (float64, bool) {
	if h.Count <= 0 {
		return 0, false
	}
	var les []float64
	for le := range h.buckets {
		les = append(les, le)
	}
	sort.Float64s(les)
	for _, le := range les {
		if h.buckets[le] >= q*h.Count {
			return le, true
		}
	}
	return les[len(les)-1], true
}

// Mean is the average observation.
func (h histDelta) Mean() float64 {
	if h.Count <= 0 {
		return 0
	}
	return h.Sum / h.Count
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
