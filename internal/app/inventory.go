package app

import (
	"context"
	"fmt"

	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/framework"
	"github.com/o2ims-operator/o2ims-operator/handlers"
	"github.com/o2ims-operator/o2ims-operator/inventory"
	"github.com/o2ims-operator/o2ims-operator/nbi/callback"
	"github.com/o2ims-operator/o2ims-operator/nbi/inventoryapi"
	"github.com/o2ims-operator/o2ims-operator/nbi/smoclient"
	"github.com/o2ims-operator/o2ims-operator/subscriptions"
)

// inventoryWiring is the O2IMS Infrastructure Inventory of a NetBox-backed operator: the in-memory
// view, kept by a background refresh and by the NetBox client's own confirmed writes (claims,
// releases, quarantines: netbox.Claims.ObserveWrites), served by the northbound API.
type inventoryWiring struct {
	cfg    inventory.Config
	view   *inventory.View
	dms    *inventoryapi.DeploymentManagers // the Clusters, read by the inventory API, its notifier and the alarms
	policy *callback.Policy                 // CALLBACK_*: which callbacks subscriptions may have
	smo    *smoclient.Client                // SMO_*: the credentials every call to the SMO carries (smo.go)
	smoCfg smoclient.Config
	log    *zap.Logger
}

// newInventory builds the view over the NetBox client and its refresher, a runnable of every replica: it
// starts once the startup activities (the NetBox check first) are done. The O-Cloud id is settled first,
// in the operator's namespace (inventory.SettleOCloudID): every id the view answers and the chain records
// is computed in it.
func (w *wiring) newInventory() error {
	getenv, nbCfg, op, log := w.getenv, w.cfg.netbox, w.op, w.log
	cfg, err := inventory.ConfigFromEnv(getenv, nbCfg.URL)
	if err != nil {
		return err
	}
	oc, note, err := inventory.SettleOCloudID(context.Background(), op.Clients().Kubernetes, w.namespace, getenv, nbCfg.URL)
	switch {
	case apierrors.IsForbidden(err) || apierrors.IsNotFound(err):
		// Without the inventory component's ConfigMap rights (or its namespace) the operator runs as the
		// other refused parts do (saying what grants them), with the id as configured, not fixed: /readyz
		// says so.
		why := fmt.Sprintf("the O-Cloud id is not fixed (derived from OCLOUD_ID or NETBOX_URL at each start): %v; apply the manifests/inventory component and restart", err)
		log.Error(why)
		op.OnDegraded("ocloud-id", func() string { return why })
	case err != nil:
		return err
	default:
		if note != "" {
			log.Info(note)
		}
		cfg.OCloudID = oc
	}
	policyCfg, err := callback.ConfigFromEnv(getenv)
	if err != nil {
		return err
	}
	policy, err := callback.New(policyCfg)
	if err != nil {
		return err
	}
	view := inventory.NewView(cfg, func(uid string) string { return requestName(op, uid) })
	w.netbox.Claims.ObserveWrites(view.Written)
	r, err := inventory.NewRefresher(view, w.netbox.Search, log.Named("inventory"), op.Registry())
	if err != nil {
		return err
	}
	w.runnables.refresher = r
	op.OnProbe("inventory", view.Probe)
	// A refresh that keeps failing (NetBox down, or a token that cannot read sites or device types) is
	// a /readyz line saying why; the ids the NBI answers are computed and answered all the same.
	op.OnDegraded("inventory", r.Degraded)
	// The deployment managers are the Clusters the chain made, read from the operator's cache.
	gvr := external.ClusterGVR(w.clusterVersion)
	dms := inventoryapi.NewDeploymentManagers(view.Config(), w.store, func(name string) (*unstructured.Unstructured, bool, error) {
		return op.Cache().Peek(gvr, w.cfg.chain.ClusterNamespace, name) // read only, as inventoryapi.ClusterGetter allows
	})
	w.inv = &inventoryWiring{cfg: cfg, view: view, dms: dms, policy: policy, log: log.Named("inventory")}
	return w.newSMOClient(policyCfg)
}

// serveInventory builds the inventory API with its subscriptions (ConfigMaps in the operator's namespace)
// and its notifier, a runnable of the leader: only the replica holding the lease delivers. Without an
// inventory the API serves no route, only its root's errors (inventoryapi.Unserved).
func (w *wiring) serveInventory() (*inventoryapi.API, error) {
	iw, op := w.inv, w.op
	if iw == nil {
		return inventoryapi.Unserved(), nil
	}
	kube := op.Clients().Kubernetes
	// Callbacks never reach the API server (in-cluster Service, and the address this process uses) nor
	// the operator itself (its listeners, read at each check as they bind later, and its pod IP).
	iw.policy.WithAPIServer(context.Background(), w.getenv("KUBERNETES_SERVICE_HOST"), op.Clients().Config.Host).
		WithOwn(func() []string { return []string{w.nbiAddr(), op.HealthAddr(), w.getenv("POD_IP")} })
	subs := subscriptions.NewSubscriptionStore(kube, w.namespace).WithBaseline(iw.view, iw.dms.List).
		WithMax(iw.cfg.MaxSubscriptions).WithPolicy(iw.policy)
	n, err := subscriptions.NewNotifier(subscriptions.NotifierConfig{APIRoot: inventoryapi.Root + "/v1", Policy: iw.policy}, iw.view, subs,
		iw.dms.List, iw.log.Named("notifier"), op.Registry())
	if err != nil {
		return nil, err
	}
	w.runnables.inventoryNotifier = n
	w.registerWithSMO()
	return inventoryapi.New(iw.view, iw.dms, subs, n.AddSubscription), nil
}

// requestName is the name of the cached ProvisioningRequest with uid ("" when none is cached).
func requestName(op *framework.Operator, uid string) string {
	objs, err := op.Cache().ByIndex(v1alpha1.GVR, handlers.IndexUID, uid)
	if err != nil || len(objs) == 0 {
		return ""
	}
	return objs[0].GetName()
}
