package handlers

import (
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/framework"
)

// Metrics of the chain. The per-state gauge is computed from the informer cache at scrape time, so it is
// always right after a restart and costs no bookkeeping on the hot path.
type Metrics struct {
	Transitions    *prometheus.CounterVec
	BudgetExpiries *prometheus.CounterVec
	byState        *prometheus.Desc
	cache          *framework.Cache
}

func newMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "o2ims", Name: "provisioning_state_transitions_total",
			Help: "ProvisioningRequest state changes written by this operator, by previous and new state (\"\" = none yet).",
		}, []string{"from", "to"}),
		BudgetExpiries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "o2ims", Name: "provisioning_budget_expiries_total",
			Help: "Requests failed because CREATION_TIMEOUT ran out, by the stage they were waiting in (hosts, rendering, cluster).",
		}, []string{"stage"}),
		byState: prometheus.NewDesc("o2ims_provisioning_requests",
			"ProvisioningRequests in the cache by provisioningState (pending = no state written yet).", []string{"state"}, nil),
	}
	if reg != nil {
		reg.MustRegister(m.Transitions, m.BudgetExpiries, m)
	}
	return m
}

func (m *Metrics) transition(from, to string) { m.Transitions.WithLabelValues(from, to).Inc() }

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) { ch <- m.byState }

// Collect implements prometheus.Collector: one pass over the cache per scrape.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	counts := map[string]float64{StateProgressing: 0, StateFulfilled: 0, StateFailed: 0, StateDeleting: 0, "pending": 0}
	if m.cache != nil {
		list, err := m.cache.List(ProvisioningRequestGVR, "")
		if err == nil {
			for _, u := range list {
				s, _, _ := unstructured.NestedString(u.Object, "status", "provisioningStatus", "provisioningState")
				if s == "" {
					s = "pending"
				}
				counts[s]++
			}
		}
	}
	for s, n := range counts {
		ch <- prometheus.MustNewConstMetric(m.byState, prometheus.GaugeValue, n, s)
	}
}

func errField(err error) zap.Field      { return zap.Error(err) }
func stringField(k, v string) zap.Field { return zap.String(k, v) }
