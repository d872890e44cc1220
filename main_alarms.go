package main

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/framework"
	"github.com/o2ims-operator/o2ims-operator/handlers"
	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/alarms"
	"github.com/o2ims-operator/o2ims-operator/nbi/alarmsapi"
	"github.com/o2ims-operator/o2ims-operator/nbi/inventoryapi"
	"github.com/o2ims-operator/o2ims-operator/netbox"
	"github.com/o2ims-operator/o2ims-operator/subscriptions"
)

// serveAlarms builds the O2IMS alarms of an operator with an inventory (nbi/alarms, nbi/alarmsapi) and the
// Alertmanager webhook receiver: stored in one ConfigMap in namespace (the subscriptions' Role covers it), raised from the request cache
// (store), the inventory view, the deployment managers and NetBox's availability (nb) by the raiser, a
// runnable of the leader, a stuck request measured on the chain's CREATION_TIMEOUT.
func (iw *inventoryWiring) serveAlarms(store nbi.Store, nb *netbox.Client, op *framework.Operator, chainCfg handlers.Config, clusterVersion, namespace string) (*alarmsapi.API, error) {
	gvr := external.ClusterGVR(clusterVersion)
	dms := inventoryapi.NewDeploymentManagers(iw.view.Config(), store, func(name string) (*unstructured.Unstructured, bool, error) {
		return op.Cache().Peek(gvr, chainCfg.ClusterNamespace, name) // read only, as inventoryapi.ClusterGetter allows
	})
	st := alarms.NewStore(op.Clients().Kubernetes, namespace)
	metrics, err := alarms.NewMetrics(op.Registry(), st)
	if err != nil {
		return nil, err
	}
	facts := alarms.NewFacts(store, iw.view, dms.List, nb.Degraded)
	raiser := alarms.NewRaiser(alarms.Config{Inventory: iw.cfg, CreationTimeout: chainCfg.CreationTimeout},
		facts, st, metrics, iw.log.Named("alarms"))
	op.Add(raiser) // NeedLeaderElection: only the leader raises and clears
	subs, n, err := iw.alarmNotifier(st, op, namespace)
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
func (iw *inventoryWiring) alarmNotifier(st *alarms.Store, op *framework.Operator, namespace string) (*subscriptions.SubscriptionStore, *subscriptions.PolledNotifier, error) {
	if namespace == "" {
		namespace = "default"
	}
	max, err := alarms.MaxSubscriptionsFromEnv(iw.getenv)
	if err != nil {
		return nil, nil, err
	}
	subs := subscriptions.NewSubscriptionStore(op.Clients().Kubernetes, namespace).WithKind(alarms.Subscriptions).
		WithBaselineFunc(st.Snapshot).WithMax(max).WithPolicy(iw.policy)
	n, err := subscriptions.NewPolledNotifier(subscriptions.NotifierConfig{Policy: iw.policy}, subscriptions.Polled{
		API: "alarm", What: "Alarm event", Kind: alarms.KindAlarm, Read: st.Snapshot, Order: alarms.Order,
		Render: alarms.Renderer{GlobalCloudID: iw.cfg.GlobalCloudID.String(), Root: iw.view.Config().ServiceURI + alarmsapi.Root + "/v1"},
	}, subs, iw.log.Named("alarm-notifier"), op.Registry())
	if err != nil {
		return nil, nil, err
	}
	op.Add(n) // NeedLeaderElection: only the leader delivers
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
