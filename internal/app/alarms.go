package app

import (
	"github.com/o2ims-operator/o2ims-operator/alarms"
	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/alarmsapi"
	"github.com/o2ims-operator/o2ims-operator/subscriptions"
)

// serveAlarms builds the O2IMS alarms of an operator with an inventory (package alarms, nbi/alarmsapi) and the
// Alertmanager webhook receiver: stored in one ConfigMap in the operator's namespace (the subscriptions'
// Role covers it), read through one more informer, of that ConfigMap's label alone (no other informer's
// label selects it; the first read starts it), raised from the request cache, the inventory view, the
// deployment managers and NetBox's availability by the raiser, a runnable of the leader, a stuck request
// measured on the chain's CREATION_TIMEOUT.
func (w *wiring) serveAlarms() (*alarmsapi.API, error) {
	iw, op := w.inv, w.op
	st := alarms.NewStore(op.Clients().Kubernetes, w.namespace)
	metrics, err := alarms.NewMetrics(op.Registry(), st)
	if err != nil {
		return nil, err
	}
	facts := alarms.NewFacts(w.store, iw.view, iw.dms.List, w.netbox.Gate.Degraded)
	raiser := alarms.NewRaiser(alarms.Config{Inventory: iw.cfg, CreationTimeout: w.cfg.chain.CreationTimeout},
		facts, st, metrics, iw.log.Named("alarms"))
	w.runnables.alarmRaiser = raiser // NeedLeaderElection: only the leader raises and clears
	subs, n, err := w.alarmNotifier(st)
	if err != nil {
		return nil, err
	}
	// Alertmanager's webhook (alarmsapi.AlertmanagerPath): alerts mapped to what their labels name.
	return alarmsapi.New(st, metrics).WithAlertmanager(alarms.NewReceiver(iw.cfg, facts)).
		WithSubscriptions(subs, n.AddSubscription), nil
}

// alarmNotifier is the alarm subscriptions (ConfigMaps beside the inventory's, capped by
// ALARMS_MAX_SUBSCRIPTIONS, their callbacks under the inventory's policy) and the notifier of their
// AlarmEventNotifications: the inventory's machinery over the alarms' ConfigMap, a runnable of the leader.
func (w *wiring) alarmNotifier(st *alarms.Store) (*subscriptions.SubscriptionStore, *subscriptions.PolledNotifier, error) {
	iw, op := w.inv, w.op
	max, err := alarms.MaxSubscriptionsFromEnv(w.getenv)
	if err != nil {
		return nil, nil, err
	}
	subs := subscriptions.NewSubscriptionStore(op.Clients().Kubernetes, w.namespace).WithKind(alarms.Subscriptions).
		WithBaselineFunc(st.Snapshot).WithMax(max).WithPolicy(iw.policy)
	n, err := subscriptions.NewPolledNotifier(subscriptions.NotifierConfig{Policy: iw.policy}, subscriptions.Polled{
		API: "alarm", What: "Alarm event", Kind: alarms.KindAlarm, Read: st.Snapshot, Order: alarms.Order,
		Render: alarms.Renderer{GlobalCloudID: iw.cfg.GlobalCloudID.String(), Root: iw.view.Config().ServiceURI + alarmsapi.Root + "/v1"},
	}, subs, iw.log.Named("alarm-notifier"), op.Registry())
	if err != nil {
		return nil, nil, err
	}
	w.runnables.alarmNotifier = n // NeedLeaderElection: only the leader delivers
	return subs, n, nil
}

// alarms is the alarms API: alarmsapi.Unserved without an inventory (no alarms; its root's errors in
// the reference's shape).
func (w *wiring) alarms() nbi.API {
	if w.alarmsAPI == nil {
		return alarmsapi.Unserved()
	}
	return w.alarmsAPI
}
