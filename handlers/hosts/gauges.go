package hosts

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/framework"
)

// gauges are counted from the requests' own host records (in cache) at scrape time: right after a
// restart, no bookkeeping on the hot path, no pool scan.
type gauges struct {
	claimed, heldByFailed *prometheus.Desc
	cache                 *framework.Cache
}

func newGauges(cache *framework.Cache) *gauges {
	return &gauges{cache: cache,
		claimed: prometheus.NewDesc("o2ims_hosts_claimed",
			"Inventory hosts currently claimed by requests, from the requests' own records (no pool scan).", nil, nil),
		heldByFailed: prometheus.NewDesc("o2ims_hosts_held_by_failed_requests",
			"Inventory hosts claimed by failed requests: they stay claimed until the request is deleted or its spec changes.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (g *gauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.claimed
	ch <- g.heldByFailed
}

// Collect implements prometheus.Collector: one pass over the cached requests per scrape.
func (g *gauges) Collect(ch chan<- prometheus.Metric) {
	claimed, failed := 0, 0
	if g.cache != nil {
		if list, err := g.cache.List(v1alpha1.GVR, ""); err == nil {
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
	ch <- prometheus.MustNewConstMetric(g.claimed, prometheus.GaugeValue, float64(claimed))
	ch <- prometheus.MustNewConstMetric(g.heldByFailed, prometheus.GaugeValue, float64(failed))
}
