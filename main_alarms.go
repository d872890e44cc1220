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
	// Alertmanager's webhook (alarmsapi.AlertmanagerPath): alerts mapped to what their labels name.
	return alarmsapi.New(st, metrics).WithAlertmanager(alarms.NewReceiver(iw.cfg, facts)), nil
}

// alarms is the alarms API: alarmsapi.Unserved without an inventory (no alarms; its root's errors in
// the reference's shape).
func (w *wiring) alarms() nbi.API {
	if w.alarmsAPI == nil {
		return alarmsapi.Unserved()
	}
	return w.alarmsAPI
}
