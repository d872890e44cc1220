package stack

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// RestartAPIServer stops kube-apiserver (etcd keeps the data) for down, then starts it again on the same
// port: clients see connection errors, then a server that lost every watch.
func (s *Stack) RestartAPIServer(ctx context.Context, down time.Duration) error {
	s.API.StopAPIServer()
	select {
	case <-ctx.Done():
	case <-time.After(down):
	}
	return s.API.StartAPIServer(ctx)
}

// Memory is a process's resident set: now and its peak (VmRSS, VmHWM).
type Memory struct{ RSS, Peak uint64 }

// Memory reads the operator's resident memory from /proc.
func (o *Operator) Memory() (Memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", o.Pid()))
	if err != nil {
		return Memory{}, err
	}
	defer f.Close()
	var m Memory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseUint(fields[1], 10, 64)
		switch fields[0] {
		case "VmRSS:":
			m.RSS = kb * 1024
		case "VmHWM:":
			m.Peak = kb * 1024
		}
	}
	return m, sc.Err()
}

// Metrics is one scrape of the operator's /metrics.
type Metrics map[string]*dto.MetricFamily

// Scrape reads the operator's metrics.
func (o *Operator) Scrape() (Metrics, error) {
	resp, err := http.Get(o.HealthURL + "/metrics") //nolint:noctx // loopback, bounded by the operator
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/metrics answered %d", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	return Metrics(fams), err
}

// Sum adds the values (counter, gauge, or histogram count) of a family's series whose labels match all of
// want ("" matches any value of that label).
func (m Metrics) Sum(name string, want map[string]string) float64 {
	fam, ok := m[name]
	if !ok {
		return 0
	}
	total := 0.0
	for _, s := range fam.GetMetric() {
		if !labelsMatch(s, want) {
			continue
		}
		switch {
		case s.Counter != nil:
			total += s.GetCounter().GetValue()
		case s.Gauge != nil:
			total += s.GetGauge().GetValue()
		case s.Histogram != nil:
			total += float64(s.GetHistogram().GetSampleCount())
		case s.Untyped != nil:
			total += s.GetUntyped().GetValue()
		}
	}
	return total
}

// Writes is the operator's mutating API requests (POST, PUT, PATCH, DELETE) by resource, from
// rest_client_requests_by_resource_total (counted at its client transport).
func (m Metrics) Writes() map[string]float64 {
	out := map[string]float64{}
	fam, ok := m["rest_client_requests_by_resource_total"]
	if !ok {
		return out
	}
	for _, s := range fam.GetMetric() {
		var method, resource string
		for _, l := range s.GetLabel() {
			switch l.GetName() {
			case "method":
				method = l.GetValue()
			case "resource":
				resource = l.GetValue()
			}
		}
		if method == http.MethodGet || method == http.MethodHead || method == "" {
			continue
		}
		out[resource] += s.GetCounter().GetValue()
	}
	return out
}

// Quantile estimates a quantile of a histogram family (series matching want merged) by linear
// interpolation inside the bucket, as Prometheus' histogram_quantile does.
func (m Metrics) Quantile(name string, want map[string]string, q float64) (float64, bool) {
	fam, ok := m[name]
	if !ok {
		return 0, false
	}
	bounds := map[float64]uint64{}
	var count uint64
	for _, s := range fam.GetMetric() {
		if s.Histogram == nil || !labelsMatch(s, want) {
			continue
		}
		count += s.GetHistogram().GetSampleCount()
		for _, b := range s.GetHistogram().GetBucket() {
			bounds[b.GetUpperBound()] += b.GetCumulativeCount()
		}
	}
	if count == 0 {
		return 0, false
	}
	var les []float64
	for le := range bounds {
		les = append(les, le)
	}
	sortFloats(les)
	rank := q * float64(count)
	prevLE, prevCount := 0.0, 0.0
	for _, le := range les {
		c := float64(bounds[le])
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

func labelsMatch(s *dto.Metric, want map[string]string) bool {
	for k, v := range want {
		if v == "" {
			continue
		}
		found := false
		for _, l := range s.GetLabel() {
			if l.GetName() == k && l.GetValue() == v {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func sortFloats(xs []float64) {
	for i := 1; i < len(xs); i++ {
		for j := i; j > 0 && xs[j] < xs[j-1]; j-- {
			xs[j], xs[j-1] = xs[j-1], xs[j]
		}
	}
}
