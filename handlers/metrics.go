package handlers

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/clock"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/framework"
)

// Metrics of the chain. The gauges are computed from the informer cache at scrape time (one pass over the
// requests), so they are right after a restart and cost no bookkeeping on the hot path.
type Metrics struct {
	Transitions    *prometheus.CounterVec
	BudgetExpiries *prometheus.CounterVec
	byState        *prometheus.Desc
	oldest         *prometheus.Desc
	waitingHosts   *prometheus.Desc
	timeout        *prometheus.Desc
	cache          *framework.Cache
	// handlers gives the budget rules (CREATION_TIMEOUT, an update's budget start); set by Register.
	handlers *Handlers
	clock    clock.PassiveClock // the ages of the oldest requests
}

// metricStates are the state label values, pending being "no state written yet".
var metricStates = append([]string{"pending"}, v1alpha1.States...)

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
		oldest: prometheus.NewDesc("o2ims_provisioning_request_oldest_age_seconds",
			"Age of the oldest request in each state (0 when none): pending and progressing from the start of their CREATION_TIMEOUT budget, "+
				"deleting from deletionTimestamp, fulfilled and failed from provisioningUpdateTime.", []string{"state"}, nil),
		waitingHosts: prometheus.NewDesc("o2ims_provisioning_requests_waiting_for_hosts",
			"Progressing requests waiting for free inventory hosts (no free host matches a role's selector).", nil, nil),
		timeout: prometheus.NewDesc("o2ims_creation_timeout_seconds",
			"CREATION_TIMEOUT: the budget of a request, for alert thresholds relative to it.", nil, nil),
		clock: clock.RealClock{},
	}
	// Every known series exists at zero from the start (increase() and alerts see the first event).
	for _, from := range append([]string{""}, metricStates[1:]...) {
		for _, to := range metricStates[1:] {
			if from != to {
				m.Transitions.WithLabelValues(from, to)
			}
		}
	}
	for _, stage := range []string{"hosts", "rendering", "cluster"} {
		m.BudgetExpiries.WithLabelValues(stage)
	}
	if reg != nil {
		reg.MustRegister(m.Transitions, m.BudgetExpiries, m)
	}
	return m
}

func (m *Metrics) transition(from, to string) { m.Transitions.WithLabelValues(from, to).Inc() }

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.byState
	ch <- m.oldest
	ch <- m.waitingHosts
	ch <- m.timeout
}

// Collect implements prometheus.Collector: one pass over the cache per scrape.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	counts, oldest := map[string]float64{}, map[string]float64{}
	for _, s := range metricStates {
		counts[s], oldest[s] = 0, 0
	}
	waiting := 0.0
	now := m.clock.Now()
	if m.cache != nil {
		list, err := m.cache.List(v1alpha1.GVR, "")
		if err == nil {
			for _, u := range list {
				st := v1alpha1.StatusOf(u)
				s := st.State
				if s == "" {
					s = "pending"
				}
				if _, known := counts[s]; !known {
					continue // someone else's value: not a label of ours
				}
				counts[s]++
				if since, ok := m.inStateSince(u, s, st); ok {
					oldest[s] = max(oldest[s], now.Sub(since).Seconds())
				}
				if s == v1alpha1.StateProgressing && strings.Contains(st.Message, v1alpha1.WaitingForFreeHosts) {
					waiting++
				}
			}
		}
	}
	for _, s := range metricStates {
		ch <- prometheus.MustNewConstMetric(m.byState, prometheus.GaugeValue, counts[s], s)
		ch <- prometheus.MustNewConstMetric(m.oldest, prometheus.GaugeValue, oldest[s], s)
	}
	ch <- prometheus.MustNewConstMetric(m.waitingHosts, prometheus.GaugeValue, waiting)
	if m.handlers != nil {
		ch <- prometheus.MustNewConstMetric(m.timeout, prometheus.GaugeValue, m.handlers.cfg.CreationTimeout.Seconds())
	}
}

// inStateSince is the clock a state's age runs on: what CREATION_TIMEOUT counts from while a request
// waits (so "progressing for longer than X" compares with the budget), deletion's own start, else the
// last status change.
func (m *Metrics) inStateSince(u *unstructured.Unstructured, state string, st v1alpha1.ProvisioningStatus) (time.Time, bool) {
	switch state {
	case "pending", v1alpha1.StateProgressing:
		if m.handlers != nil {
			return m.handlers.deadline(u).Add(-m.handlers.cfg.CreationTimeout), true
		}
		return u.GetCreationTimestamp().Time, true
	case v1alpha1.StateDeleting:
		if ts := u.GetDeletionTimestamp(); ts != nil {
			return ts.Time, true
		}
	}
	t, err := time.Parse(time.RFC3339, st.UpdateTime)
	return t, err == nil
}

func errField(err error) zap.Field      { return zap.Error(err) }
func stringField(k, v string) zap.Field { return zap.String(k, v) }
