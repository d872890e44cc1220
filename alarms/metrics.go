package alarms

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics of the alarms, labelled by definition name only (the table's few rows): raised and cleared
// counters, and the active alarms as this replica last read or wrote them (no call at scrape time).
type Metrics struct {
	raised  *prometheus.CounterVec
	cleared *prometheus.CounterVec
	dropped prometheus.Counter
	active  *prometheus.Desc
	store   *Store
}

// NewMetrics registers the metrics on reg (nil: none); store gives the active gauge its state.
func NewMetrics(reg prometheus.Registerer, store *Store) (*Metrics, error) {
	m := &Metrics{
		raised: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "o2ims", Name: "alarms_raised_total",
			Help: "O2IMS alarms raised (or raised again after being cleared) by this replica, by definition.",
		}, []string{"definition"}),
		cleared: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "o2ims", Name: "alarms_cleared_total",
			Help: "O2IMS alarms cleared by this replica, by definition and how (automatic: the fault went; manual: an SMO's PATCH).",
		}, []string{"definition", "how"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "o2ims", Name: "alarms_dropped_total",
			Help: "O2IMS alarms not raised because the store held MaxAlarms active alarms.",
		}),
		active: prometheus.NewDesc("o2ims_alarms_active", "O2IMS alarms raised and not cleared, by definition, as last read or written.",
			[]string{"definition"}, nil),
		store: store,
	}
	for _, d := range Definitions {
		m.raised.WithLabelValues(d.Name)
		m.cleared.WithLabelValues(d.Name, "automatic")
		if d.Clearing == Manual {
			m.cleared.WithLabelValues(d.Name, "manual")
		}
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.raised, m.cleared, m.dropped, m} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) { ch <- m.active }

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	counts := map[string]float64{}
	if s := m.store.Last(); s != nil {
		for _, a := range s.Alarms {
			if d := a.Definition(); d != nil && a.Active() {
				counts[d.Name]++
			}
		}
	}
	for _, d := range Definitions {
		ch <- prometheus.MustNewConstMetric(m.active, prometheus.GaugeValue, counts[d.Name], d.Name)
	}
}

// Cleared counts an alarm of def cleared by hand.
func (m *Metrics) Cleared(def *Definition, manual bool) {
	if m == nil {
		return
	}
	how := "automatic"
	if manual {
		how = "manual"
	}
	m.cleared.WithLabelValues(def.Name, how).Inc()
}

// Counted counts alarms of def raised and cleared automatically outside the raiser (the Alertmanager
// receiver).
func (m *Metrics) Counted(def *Definition, raised, cleared, dropped int) {
	if m == nil {
		return
	}
	m.raised.WithLabelValues(def.Name).Add(float64(raised))
	m.cleared.WithLabelValues(def.Name, "automatic").Add(float64(cleared))
	m.dropped.Add(float64(dropped))
}
