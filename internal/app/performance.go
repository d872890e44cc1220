package app

import (
	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/performanceapi"
	"github.com/o2ims-operator/o2ims-operator/performance"
	"github.com/o2ims-operator/o2ims-operator/subscriptions"
)

// servePerformance builds the O2IMS Infrastructure Performance API of an operator with an inventory
// (its hosts are what jobs measure) and PROMETHEUS_URL (where they are measured): the jobs stored in one
// ConfigMap in the operator's namespace (the subscriptions' Role covers it), read through an informer of
// it alone (as the alarms' store is), collected by the evaluator, a runnable of the leader. Without
// PROMETHEUS_URL the API answers only its root's errors (performanceapi.Unserved).
func (w *wiring) servePerformance() (nbi.API, error) {
	iw, op := w.inv, w.op
	pc, err := performance.PrometheusConfigFromEnv(w.getenv)
	if err != nil || pc.URL == "" {
		return performanceapi.Unserved(), err
	}
	bounds, err := performance.BoundsFromEnv(w.getenv)
	if err != nil {
		return nil, err
	}
	prom, err := performance.NewPrometheus(pc)
	if err != nil {
		return nil, err
	}
	st := performance.NewStore(op.Clients().Kubernetes, w.namespace)
	targets := func() []performance.Target { return performance.TargetsOf(iw.view.Snapshot()) }
	w.runnables.evaluator = performance.NewEvaluator(st, prom, targets, bounds, iw.log.Named("performance")) // NeedLeaderElection
	// The reports' subscribers: ConfigMaps beside the others, their callbacks under the inventory's
	// policy, delivered by the inventory's notifier machinery, a runnable of the leader.
	subs := subscriptions.NewSubscriptionStore(op.Clients().Kubernetes, w.namespace).WithKind(performance.Subscriptions).
		WithBaselineFunc(st.Snapshot).WithMax(bounds.MaxSubscriptions).WithPolicy(iw.policy)
	n, err := subscriptions.NewPolledNotifier(subscriptions.NotifierConfig{Policy: iw.policy}, subscriptions.Polled{
		API: "performance", What: "Measurement report", Kind: performance.KindJob, Read: st.Snapshot, Order: performance.Order,
		Render: performance.Renderer{Root: iw.view.Config().ServiceURI + performanceapi.RootSpec + "/v2"},
	}, subs, iw.log.Named("performance-notifier"), op.Registry())
	if err != nil {
		return nil, err
	}
	w.runnables.performanceNotifier = n // NeedLeaderElection
	return performanceapi.New(st, bounds).WithSubscriptions(subs, n.AddSubscription), nil
}

// performance is the performance API: performanceapi.Unserved without an inventory or Prometheus.
func (w *wiring) performance() nbi.API {
	if w.performanceAPI == nil {
		return performanceapi.Unserved()
	}
	return w.performanceAPI
}
