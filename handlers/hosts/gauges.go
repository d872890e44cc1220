package hosts

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
)

// gauges are counted from the requests' own host records at scrape time: right after a restart, no
// bookkeeping on the hot path, no pool scan.
type gauges struct {
	claimed, heldByFailed *prometheus.Desc
}

func newGauges() gauges {
	return gauges{
		claimed: prometheus.NewDesc("o2ims_hosts_claimed",
			"Inventory hosts currently claimed by requests, from the requests' own records (no pool scan).", nil, nil),
		heldByFailed: prometheus.NewDesc("o2ims_hosts_held_by_failed_requests",
			"Inventory hosts claimed by failed requests: they stay claimed until the request is deleted or its spec changes.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (st *Step) Describe(ch chan<- *prometheus.Desc) {
	ch <- st.gauges.claimed
	ch <- st.gauges.heldByFailed
}

// Collect implements prometheus.Collector: one pass over the cached requests per scrape.
func (st *Step) Collect(ch chan<- prometheus.Metric) {
	claimed, failed := 0, 0
	if st.cache != nil {
		if list, err := st.cache.List(v1alpha1.GVR, ""); err == nil {
			for _, u := range list {
				isFailed := v1alpha1.StatusOf(u).State == v1alpha1.StateFailed
				slots, _ := ReadSlots(u)
				for _, s := range slots {
					if s.Phase == PhaseClaimed {
						claimed++
						if isFailed {
							failed++
						}
					}
				}
			}
		}
	}
	ch <- prometheus.MustNewConstMetric(st.gauges.claimed, prometheus.GaugeValue, float64(claimed))
	ch <- prometheus.MustNewConstMetric(st.gauges.heldByFailed, prometheus.GaugeValue, float64(failed))
}
