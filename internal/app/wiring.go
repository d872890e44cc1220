package app

import (
	"context"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/o2ims-operator/o2ims-operator/framework"
	"github.com/o2ims-operator/o2ims-operator/handlers"
	"github.com/o2ims-operator/o2ims-operator/handlers/hosts"
	"github.com/o2ims-operator/o2ims-operator/internal/netcause"
	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/provisioning"
	"github.com/o2ims-operator/o2ims-operator/netbox"
)

// defaultNamespace is the operator's namespace without POD_NAMESPACE (the framework's default too).
const defaultNamespace = "default"

// wiring is the process's one set of dependencies: each part is built once, by one of run's steps in
// order, and read from here by the steps after it (none is passed on as a parameter); the long-running
// parts are added to the operator in one place, addRunnables.
type wiring struct {
	opts    *options
	cfg     *config
	getenv  func(string) string
	log     *zap.Logger
	version string // as built: --version, the log's first line, the API clients' User-Agent

	clients        *framework.Clients
	clusterVersion string
	namespace      string // POD_NAMESPACE, else defaultNamespace: the Lease, the O-Cloud id, subscriptions, alarms
	op             *framework.Operator
	store          cacheStore // the NBI's and the inventory's reads of ProvisioningRequests

	// With NETBOX_URL only (nil without).
	netbox         *netbox.Client
	inv            *inventoryWiring // inventory.go
	alarmsAPI      nbi.API          // alarms.go
	performanceAPI nbi.API          // performance.go
	hostStep       handlers.Hosts

	nbiServer *nbi.Server // nil while not built, and when not served (nbiExposure)
	runnables runnables
}

// runnables are the long-running parts, each set by the step that builds it (nil: not built) and added
// by addRunnables in this order. Where each runs is its NeedLeaderElection (docs/architecture.md, "Who
// leads").
type runnables struct {
	refresher           framework.Runnable // the inventory view's refresh: every replica
	alarmRaiser         framework.Runnable // the leader
	alarmNotifier       framework.Runnable // the leader
	evaluator           framework.Runnable // the performance jobs' collection: the leader
	performanceNotifier framework.Runnable // the leader
	inventoryNotifier   framework.Runnable // the leader
	smoRegistrar        framework.Runnable // the leader
	northbound          framework.Runnable // the NBI's listener: every replica
}

// addRunnables adds every long-running part built to the operator: the one place they are added.
func (w *wiring) addRunnables() error {
	r := w.runnables
	for _, x := range []framework.Runnable{r.refresher, r.alarmRaiser, r.alarmNotifier, r.evaluator,
		r.performanceNotifier, r.inventoryNotifier, r.smoRegistrar, r.northbound} {
		if x != nil {
			w.op.Add(x)
		}
	}
	return nil
}

// tuneProcess sets Go's memory limit from the container's and serves the profiles if asked to.
func (w *wiring) tuneProcess() error {
	if soft := applyMemoryLimit(w.getenv, os.ReadFile); soft > 0 {
		w.log.Info("Go memory limit set from the container's memory limit", zap.Int64("bytes", soft))
	}
	if w.opts.debugPprof != "" {
		if _, err := startPprof(w.opts.debugPprof, w.log); err != nil {
			return err
		}
	}
	return nil
}

// connect builds the API clients and settles the Cluster API version, which decides which informer is
// started, before the watches are.
func (w *wiring) connect() error {
	restCfg, err := framework.LoadConfig(w.opts.kubeconfig, w.getenv)
	if err != nil {
		return err
	}
	clientOpts := framework.DefaultClientOptions()
	clientOpts.QPS, clientOpts.Burst, clientOpts.Timeout = float32(w.opts.qps), w.opts.burst, w.opts.apiTimeout
	clientOpts.UserAgent = "o2ims-operator/" + w.version
	if w.clients, err = framework.NewClients(restCfg, clientOpts); err != nil {
		return err
	}
	w.clusterVersion, err = handlers.DetectClusterVersion(w.clients.Kubernetes.Discovery(), w.cfg.chain.ClusterAPIVersion)
	return err
}

// newOperator builds the framework's operator: its lease in --leader-elect-namespace, else the
// operator's namespace.
func (w *wiring) newOperator() error {
	o := w.opts
	if w.namespace = w.getenv("POD_NAMESPACE"); w.namespace == "" {
		w.namespace = defaultNamespace
	}
	leNS := o.leaderElectNS
	if leNS == "" {
		leNS = w.namespace
	}
	var err error
	w.op, err = framework.New(w.clients, framework.Options{
		Name: "o2ims-operator", MetricsNamespace: "o2ims", Prefix: handlers.Prefix,
		Workers: o.workers, Liveness: o.liveness, MetricsAuth: w.cfg.metricsAuth, Namespace: w.namespace,
		LeaderElect: o.leaderElect, LeaderElectionID: o.leaderElectID, LeaderElectionNamespace: leNS,
		ShutdownTimeout: o.shutdownTimeout, Logger: w.log, TimeForm: w.cfg.timeForm, Remedy: remedy(),
		Redact: netcause.Redact,
	})
	w.store = cacheStore{w.op}
	return err
}

// addInventory, with NETBOX_URL, builds the NetBox client, the inventory view and the host step.
func (w *wiring) addInventory() error {
	if !w.cfg.netboxOn {
		return nil
	}
	nbCfg := w.cfg.netbox
	nbCfg.WriteFence = w.op.LeaderWrites("netbox-write") // a replica that does not lead writes nothing to NetBox
	nb, err := netbox.New(nbCfg, w.log.Named("netbox"), w.op.Registry())
	if err != nil {
		return err
	}
	// Reachability, version (ETags need ≥ 4.6) and the custom fields, once, before watching starts: a
	// wrong version, token or schema stops the operator; NetBox down does not — the operator runs
	// degraded (requests with hosts wait, /readyz says why) and the check goes on until it passes
	// (netbox/availability.go).
	w.op.OnStartup("netbox", nb.Gate.Start)
	w.op.OnDegraded("netbox", nb.Gate.Degraded)
	w.netbox = nb
	if err := w.newInventory(); err != nil {
		return err
	}
	if w.alarmsAPI, err = w.serveAlarms(); err != nil {
		return err
	}
	if w.performanceAPI, err = w.servePerformance(); err != nil {
		return err
	}
	// The chain records the resource ids the inventory answers: the same O-Cloud id.
	w.hostStep = hosts.New(handlers.HostsConfig(w.cfg.chain, w.inv.cfg.OCloudID), nb, w.inv.view, w.clients, w.op.Cache(), w.op.Registry())
	return nil
}

// addChain registers the provisioning chain's handlers.
func (w *wiring) addChain() error {
	handlers.New(w.cfg.chain, w.clusterVersion, w.clients, w.hostStep, w.op.Registry()).Register(w.op)
	return nil
}

// addNorthbound builds the NBI — the provisioning API and the inventory API (with its notifier when there
// is an inventory, only its root's errors otherwise) — and adds it to the operator: a runnable of every
// replica, drained by a cleanup activity, probed for liveness.
func (w *wiring) addNorthbound() error {
	// The NBI refuses with 400 what the chain would fail, so it needs the chain's rules of this run.
	nbiCfg := w.cfg.nbi
	nbiCfg.Chain = nbi.ChainRules{Inventory: w.hostStep != nil}
	if w.hostStep != nil {
		nbiCfg.Chain.Reserved = w.hostStep.Reserved()
	}
	invAPI, err := w.serveInventory()
	if err != nil {
		return err
	}
	if why := w.cfg.nbiRefused; why != "" {
		// The chain runs without it: /readyz stays 200 with a line saying why, and so does the liveness
		// answer, so neither probe restarts a pod whose only fault is the NBI's address.
		w.op.OnDegraded("northbound", func() string { return why })
		w.op.OnProbe("northbound", func(context.Context) (any, error) {
			return map[string]string{"northbound": "not served: " + why}, nil
		})
		return nil
	}
	provAPI, err := provisioning.New(w.store, w.clients.Dynamic, invAPI.ResourceIDs)
	if err != nil {
		return err
	}
	srv, err := nbi.New(nbiCfg, w.clients.Kubernetes, w.log.Named("nbi"), w.op.Registry(), provAPI, invAPI, w.alarms(), w.performance())
	if err != nil {
		return err
	}
	w.nbiServer = srv
	// A port in use, or the serving loop ending by itself, stops the operator; the drain comes after the
	// passes, within the one stop deadline.
	w.runnables.northbound = northbound{srv: srv, log: w.log}
	w.op.OnCleanup("stop_northbound", srv.Shutdown)
	op := w.op
	op.OnProbe("now", func(context.Context) (any, error) { return time.Now().UTC().Format(time.RFC3339Nano), nil })
	op.OnProbe("northbound", func(ctx context.Context) (any, error) {
		// Until the startup activities before it are done (NetBox's check, bounded by NETBOX_TIMEOUT)
		// there is no API to probe: that is starting, not dead, and the liveness probe must not restart us.
		if srv.Addr() == "" && !op.Ready() {
			return map[string]string{"northbound": "not started yet: waiting for the startup activities"}, nil
		}
		return srv.Probe(ctx)
	})
	return nil
}

// cacheStore serves the NBI's reads from the operator's informer cache; until the cache has synced it

// nbiAddr is the NBI's listening address, read by the callback policy and the SMO registration once it
// listens: "" before, and when it is not served (nbiExposure).
func (w *wiring) nbiAddr() string {
	if w.nbiServer == nil {
		return ""
	}
	return w.nbiServer.Addr()
}
