package subscriptions

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/o2ims-operator/o2ims-operator/nbi/callback"
)

// notifierMetrics are the notifier's series: counters per subscription (gone with it) and per refusal
// reason, the delivery latency, and the queue gauges, collected from the subscribers when scraped.
type notifierMetrics struct {
	delivered, failed, filtered *prometheus.CounterVec
	retried, refused            *prometheus.CounterVec
	latency                     prometheus.Histogram
	depthDesc, ageDesc          *prometheus.Desc
}

// newNotifierMetrics names its series o2ims_<api>_notification…; what is the Help's name of the
// notifications ("Inventory change", "Alarm event").
func newNotifierMetrics(api, what string) *notifierMetrics {
	name := func(s string) string { return "o2ims_" + api + "_" + s }
	return &notifierMetrics{
		delivered: prometheus.NewCounterVec(prometheus.CounterOpts{Name: name("notifications_delivered_total"),
			Help: what + " notifications the callback accepted (2xx), per subscription."}, []string{"subscription"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: name("notifications_failed_total"),
			Help: "Notification POSTs that failed (timeout, transport, non-2xx, redirect), per subscription."}, []string{"subscription"}),
		retried: prometheus.NewCounterVec(prometheus.CounterOpts{Name: name("notifications_retried_total"),
			Help: "Notification POSTs that were retries of a failed one, per subscription."}, []string{"subscription"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: name("notifications_refused_total"),
			Help: "Notification POSTs (counted as failed, and retried) that the callback policy refused to connect, per reason."}, []string{"reason"}),
		filtered: prometheus.NewCounterVec(prometheus.CounterOpts{Name: name("notifications_filtered_total"),
			Help: "Changes a subscription's filter left out, per subscription."}, []string{"subscription"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: name("notification_latency_seconds"),
			Help:    "From a change seen by the operator to its notification accepted by the callback.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 18)}),
		depthDesc: prometheus.NewDesc(name("notification_queue_depth"), "Undelivered notifications per subscription.", []string{"subscription"}, nil),
		ageDesc:   prometheus.NewDesc(name("notification_oldest_undelivered_seconds"), "Age of the oldest undelivered notification per subscription (0: none).", []string{"subscription"}, nil),
	}
}

// register puts the series on reg, with queues as the collector of the queue gauges; every refusal
// reason is there from the start.
func (m *notifierMetrics) register(reg prometheus.Registerer, queues prometheus.Collector) error {
	for _, r := range callback.Reasons {
		m.refused.WithLabelValues(string(r))
	}
	for _, c := range []prometheus.Collector{m.delivered, m.failed, m.retried, m.refused, m.filtered, m.latency, queues} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// forget drops a deleted subscription's counters, so the label takes no more values than there are
// subscriptions (at most INVENTORY_MAX_SUBSCRIPTIONS); the queue gauges go with the subscriber.
func (m *notifierMetrics) forget(id string) {
	for _, c := range []*prometheus.CounterVec{m.delivered, m.failed, m.retried, m.filtered} {
		c.DeleteLabelValues(id)
	}
}
