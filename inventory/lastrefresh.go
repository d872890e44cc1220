package inventory

import "github.com/prometheus/client_golang/prometheus"

// lastRefreshDesc is when NetBox last answered a refresh, as Prometheus keeps times: a Unix timestamp
// gauge (`time() - o2ims_inventory_view_last_refresh_timestamp_seconds` is the age), absent until the first
// answer rather than a sentinel value.
var lastRefreshDesc = prometheus.NewDesc("o2ims_inventory_view_last_refresh_timestamp_seconds",
	"Unix time NetBox last answered a refresh of the inventory view; absent before the first.", nil, nil)

// lastRefreshCollector exports lastRefreshDesc from the view.
type lastRefreshCollector struct{ view *View }

func (c lastRefreshCollector) Describe(ch chan<- *prometheus.Desc) { ch <- lastRefreshDesc }

func (c lastRefreshCollector) Collect(ch chan<- prometheus.Metric) {
	if _, last := c.view.Synced(); !last.IsZero() {
		ch <- prometheus.MustNewConstMetric(lastRefreshDesc, prometheus.GaugeValue, float64(last.UnixNano())/1e9)
	}
}
