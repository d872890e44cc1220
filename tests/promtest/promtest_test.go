package promtest

import (
	"bytes"
	"math"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func registry(t *testing.T) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "t_total"}, []string{"from", "to"})
	c.WithLabelValues("", "progressing").Add(2)
	c.WithLabelValues("progressing", "failed").Add(3)
	c.WithLabelValues("", "failed")
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "t_up"})
	g.Set(1)
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "t_seconds", Buckets: []float64{1, 2, 4}})
	for _, v := range []float64{0.5, 1.5, 1.5, 3, 3, 3, 3, 3, 3, 10} {
		h.Observe(v)
	}
	d := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "t_depth"}, []string{"callback"})
	d.WithLabelValues("a")
	d.WithLabelValues("b").Set(7)
	reg.MustRegister(c, g, h, d)
	return reg
}

func check(t *testing.T, f Families) {
	v, ok := f.Value("t_total", map[string]string{"from": "", "to": "failed"})
	assert.True(t, ok, "a series at zero exists")
	assert.Zero(t, v, "the empty label is matched exactly, not as a wildcard")
	v, ok = f.Value("t_total", map[string]string{"from": "progressing", "to": "failed"})
	assert.True(t, ok)
	assert.Equal(t, 3.0, v)
	_, ok = f.Value("t_total", map[string]string{"from": "failed", "to": "progressing"})
	assert.False(t, ok)
	_, ok = f.Value("absent", nil)
	assert.False(t, ok)
	assert.Equal(t, 5.0, f.Sum("t_total", nil))
	assert.Equal(t, 3.0, f.Sum("t_total", map[string]string{"to": "failed"}))
	assert.Equal(t, map[string]float64{"a": 0, "b": 7}, f.ByLabel("t_depth", "callback"))
	up, ok := f.Value("t_up", nil)
	assert.True(t, ok)
	assert.Equal(t, 1.0, up)

	h := f.Histogram("t_seconds", nil)
	assert.Equal(t, 10.0, h.Count)
	assert.InDelta(t, 31.5, h.Sum, 1e-9)
	assert.InDelta(t, 3.15, h.Mean(), 1e-9)
	b, ok := h.Bound(0.5)
	assert.True(t, ok)
	assert.Equal(t, 4.0, b, "the 5th of 10 is in (2, 4]")
	q, ok := h.Quantile(0.5)
	assert.True(t, ok)
	assert.InDelta(t, 2+2*(5.0-3)/6, q, 1e-9, "interpolated inside (2, 4]: 3 below, 6 inside")
	b, _ = h.Bound(0.99)
	assert.True(t, math.IsInf(b, 1), "beyond the last finite bucket, read or scraped alike: %v", b)
	assert.Equal(t, 10.0, f.Sum("t_seconds", nil), "a histogram counts its samples")

	none := h.Minus(h)
	_, ok = none.Quantile(0.5)
	assert.False(t, ok, "nothing observed between two equal readings")
	assert.Zero(t, none.Mean())
}

func TestGatherAndParseReadTheSame(t *testing.T) {
	reg := registry(t)
	check(t, Gather(t, reg))

	mfs, err := reg.Gather()
	require.NoError(t, err)
	var buf bytes.Buffer
	for _, mf := range mfs {
		_, err := expfmt.MetricFamilyToText(&buf, mf)
		require.NoError(t, err)
	}
	f, err := Parse(&buf)
	require.NoError(t, err)
	check(t, f)
}
