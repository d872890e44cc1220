package main

import (
	"fmt"

	dto "github.com/prometheus/client_model/go"

	"github.com/o2ims-operator/o2ims-operator/tests/promtest"
)

// waits is where a contender's requests waited during one phase (fulfil or delete), read from its own
// /metrics before and after: both expose the same client-go and workqueue families (the operator its
// own adapters, framework/metrics.go; the peer controller-runtime's workqueue metrics and the client-go
// rate-limiter adapter tests/bench/peer/metrics.go installs), with the same buckets.
type waits struct {
	Limiter promtest.Histogram // rest_client_rate_limiter_duration_seconds: each call's wait for its bucket
	Queue   promtest.Histogram // workqueue_queue_duration_seconds: an item's wait from add to a worker
	Work    promtest.Histogram // workqueue_work_duration_seconds: a pass (handler, calls, limiter waits)
	Calls   map[string]float64 // the contender's API calls by method (rest_client_requests_total)
}

// methods are the HTTP methods the calls rows count.
var methods = []string{"GET", "POST", "PUT", "PATCH", "DELETE"}

// waitsBetween is what the contender's metrics say of a phase.
func waitsBetween(before, after promtest.Families) waits {
	every := func(*dto.Metric) bool { return true }
	all := func(name string) promtest.Histogram {
		return after.HistogramWhere(name, every).Minus(before.HistogramWhere(name, every))
	}
	calls := map[string]float64{}
	for _, m := range methods {
		want := map[string]string{"method": m}
		calls[m] = after.Sum("rest_client_requests_total", want) - before.Sum("rest_client_requests_total", want)
	}
	return waits{Limiter: all("rest_client_rate_limiter_duration_seconds"), Queue: all("workqueue_queue_duration_seconds"),
		Work: all("workqueue_work_duration_seconds"), Calls: calls}
}

// waitRows are the breakdown table's rows for one phase: per request (n), and p50/p99 of each wait.
func waitRows(what string, n int, w waits) []string {
	per := func(x float64) float64 { return x / float64(max(n, 1)) }
	q := func(h promtest.Histogram) string {
		p50, ok := h.Quantile(0.5)
		if !ok {
			return "–"
		}
		p99, _ := h.Quantile(0.99)
		return fmt.Sprintf("%s / %s", secs(p50), secs(p99))
	}
	return []string{
		fmt.Sprintf("%s: API calls per request (by method)", what), callsByMethod(w.Calls, n),
		fmt.Sprintf("%s: client-side limiter waits per request / their total per request", what),
		fmt.Sprintf("%.2f / %s", per(w.Limiter.Count), secs(per(w.Limiter.Sum))),
		fmt.Sprintf("%s: limiter wait per call, p50 / p99", what), q(w.Limiter),
		fmt.Sprintf("%s: passes (workqueue items) per request", what), fmt.Sprintf("%.2f", per(w.Queue.Count)),
		fmt.Sprintf("%s: workqueue wait per pass, p50 / p99", what), q(w.Queue),
		fmt.Sprintf("%s: pass duration (handler, calls and their limiter waits), p50 / p99", what), q(w.Work),
		fmt.Sprintf("%s: worker time per request (all its passes)", what), secs(per(w.Work.Sum)),
	}
}

func callsByMethod(calls map[string]float64, n int) string {
	s := ""
	for _, m := range methods {
		if v := calls[m]; v > 0 {
			if s != "" {
				s += ", "
			}
			s += fmt.Sprintf("%s %.2f", m, v/float64(max(n, 1)))
		}
	}
	if s == "" {
		return "none"
	}
	return s
}
