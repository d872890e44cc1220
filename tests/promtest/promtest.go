// Package promtest reads Prometheus metrics in tests and the bench: from a registry in the same process
// (Gather) or from a /metrics answer (Parse), then by family name and labels. One reader for every
// package's tests, so "the series exists", "its value" and "the p99" mean the same everywhere.
package promtest

import (
	"io"
	"math"
	"sort"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

// Families is one reading of a registry or a scrape, by family name.
type Families map[string]*dto.MetricFamily

// Gather reads a registry in this process.
func Gather(t testing.TB, g prometheus.Gatherer) Families {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	out := make(Families, len(mfs))
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// Parse reads the text exposition format (a /metrics answer).
func Parse(r io.Reader) (Families, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(r)
	return Families(fams), err
}

// Labels are a series' labels as a map.
func Labels(s *dto.Metric) map[string]string {
	out := make(map[string]string, len(s.GetLabel()))
	for _, l := range s.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// Matches reports whether the series has every label of want with that value (an absent label reads as
// "", as in PromQL); labels want does not name may have any value.
func Matches(s *dto.Metric, want map[string]string) bool {
	have := Labels(s)
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// value is a series' number: a counter's or gauge's value, a histogram's sample count.
func value(s *dto.Metric) float64 {
	switch {
	case s.Counter != nil:
		return s.GetCounter().GetValue()
	case s.Gauge != nil:
		return s.GetGauge().GetValue()
	case s.Histogram != nil:
		return float64(s.GetHistogram().GetSampleCount())
	case s.Untyped != nil:
		return s.GetUntyped().GetValue()
	}
	return 0
}

// Value is the first series of the family matching want (counter or gauge value, histogram count);
// found is false when the family or every matching series is absent.
func (f Families) Value(name string, want map[string]string) (v float64, found bool) {
	for _, s := range f[name].GetMetric() {
		if Matches(s, want) {
			return value(s), true
		}
	}
	return 0, false
}

// Sum adds the values of the family's series matching want (0 when there are none).
func (f Families) Sum(name string, want map[string]string) float64 {
	total := 0.0
	for _, s := range f[name].GetMetric() {
		if Matches(s, want) {
			total += value(s)
		}
	}
	return total
}

// ByLabel is the family's series values keyed by one label's value (series without it are left out).
func (f Families) ByLabel(name, label string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range f[name].GetMetric() {
		if v, ok := Labels(s)[label]; ok {
			out[v] = value(s)
		}
	}
	return out
}

// Histogram merges the family's histogram series matching want.
func (f Families) Histogram(name string, want map[string]string) Histogram {
	return f.HistogramWhere(name, func(s *dto.Metric) bool { return Matches(s, want) })
}

// HistogramWhere merges the family's histogram series keep accepts.
func (f Families) HistogramWhere(name string, keep func(*dto.Metric) bool) Histogram {
	h := Histogram{Buckets: map[float64]float64{}}
	for _, s := range f[name].GetMetric() {
		if s.Histogram == nil || !keep(s) {
			continue
		}
		h.Count += float64(s.GetHistogram().GetSampleCount())
		h.Sum += s.GetHistogram().GetSampleSum()
		for _, b := range s.GetHistogram().GetBucket() {
			if !math.IsInf(b.GetUpperBound(), 1) {
				h.Buckets[b.GetUpperBound()] += float64(b.GetCumulativeCount())
			}
		}
	}
	// A scrape lists +Inf and a registry leaves it implicit: here it is always there, as the count.
	h.Buckets[math.Inf(1)] = h.Count
	return h
}

// Histogram is a histogram's count, sum and cumulative buckets by upper bound (+Inf among them, = Count).
type Histogram struct {
	Count, Sum float64
	Buckets    map[float64]float64
}

// Minus is what was observed since before (a delta between two readings of the same histogram).
func (h Histogram) Minus(before Histogram) Histogram {
	d := Histogram{Count: h.Count - before.Count, Sum: h.Sum - before.Sum, Buckets: map[float64]float64{}}
	for le, c := range h.Buckets {
		d.Buckets[le] = c - before.Buckets[le]
	}
	return d
}

func (h Histogram) bounds() []float64 {
	les := make([]float64, 0, len(h.Buckets))
	for le := range h.Buckets {
		les = append(les, le)
	}
	sort.Float64s(les)
	return les
}

// Quantile interpolates inside the bucket holding the q-quantile, as Prometheus' histogram_quantile does;
// ok is false without samples.
func (h Histogram) Quantile(q float64) (float64, bool) {
	if h.Count <= 0 {
		return 0, false
	}
	rank := q * h.Count
	prevLE, prevCount := 0.0, 0.0
	for _, le := range h.bounds() {
		c := h.Buckets[le]
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

// Bound is the upper bound of the bucket holding the q-quantile, "at most this" (+Inf beyond the last
// finite bucket); ok is false without samples.
func (h Histogram) Bound(q float64) (float64, bool) {
	if h.Count <= 0 {
		return 0, false
	}
	les := h.bounds()
	for _, le := range les {
		if h.Buckets[le] >= q*h.Count {
			return le, true
		}
	}
	return les[len(les)-1], true
}

// Mean is the average observation (0 without samples).
func (h Histogram) Mean() float64 {
	if h.Count <= 0 {
		return 0
	}
	return h.Sum / h.Count
}
