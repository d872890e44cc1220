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

// wiring is what run builds, step by step, before the operator runs.
type wiring struct {
	opts    *options
	cfg     *config
	getenv  func(string) string
	log     *zap.Logger
	version string // as built: --version, the log's first line, the API clients' User-Agent

	clients        *framework.Clients
	clusterVersion string
	podNamespace   string
	op             *framework.Operator
	inv            *inventoryWiring // inventory.go; nil without NETBOX_URL
	alarmsAPI      nbi.API          // alarms.go; nil without NETBOX_URL
	performanceAPI nbi.API          // performance.go; nil without NETBOX_URL
	hostStep       handlers.Hosts   // nil without NETBOX_URL
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

// newOperator builds the framework's operator: its lease in --leader-elect-namespace, else POD_NAMESPACE.
func (w *wiring) newOperator() error {
	o := w.opts
	w.podNamespace = w.getenv("POD_NAMESPACE")
	leNS := o.leaderElectNS
	if leNS == "" {
		leNS = w.podNamespace
	}
	var err error
	w.op, err = framework.New(w.clients, framework.Options{
		Name: "o2ims-operator", MetricsNamespace: "o2ims", Prefix: handlers.Prefix,
		Workers: o.workers, Liveness: o.liveness, MetricsAuth: w.cfg.metricsAuth, Namespace: w.podNamespace,
		LeaderElect: o.leaderElect, LeaderElectionID: o.leaderElectID, LeaderElectionNamespace: leNS,
		ShutdownTimeout: o.shutdownTimeout, Logger: w.log, TimeForm: w.cfg.timeForm, Remedy: remedy(),
		Redact: netcause.Redact,
	})
	return err
}

// addInventory, with NETBOX_URL, builds the NetBox client, the inventory view and the host step.
func (w *wiring) addInventory() error {
	if !w.cfg.netboxOn {
		return nil
	}
	nb, err := netbox.New(w.cfg.netbox, w.log.Named("netbox"), w.op.Registry())
	if err != nil {
		return err
	}
	// Reachability, version (ETags need ≥ 4.6) and the custom fields, once, before watching starts: a
	// wrong version, token or schema stops the operator; NetBox down does not — the operator runs
	// degraded (requests with hosts wait, /readyz says why) and the check goes on until it passes
	// (netbox/availability.go).
	w.op.OnStartup("netbox", nb.Start)
	w.op.OnDegraded("netbox", nb.Degraded)
	if w.inv, err = newInventory(w.getenv, w.cfg.netbox, nb, w.op, w.podNamespace, w.log); err != nil {
		return err
	}
	if w.alarmsAPI, err = w.inv.serveAlarms(cacheStore{w.op}, nb, w.op, w.cfg.chain, w.clusterVersion, w.podNamespace); err != nil {
		return err
	}
	if w.performanceAPI, err = w.inv.servePerformance(w.op, w.podNamespace); err != nil {
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
	var srv *nbi.Server // its address is read by the callback policy once it listens
	nbiAddr := func() string {
		if srv == nil {
			return "" // not served (nbiExposure)
		}
		return srv.Addr()
	}
	invAPI, err := w.inv.serve(cacheStore{w.op}, nbiAddr, w.op, w.cfg.chain, w.clusterVersion, w.podNamespace)
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
	provAPI, err := provisioning.New(cacheStore{w.op}, w.clients.Dynamic, invAPI.ResourceIDs)
	if err != nil {
		return err
	}
	if srv, err = nbi.New(nbiCfg, w.clients.Kubernetes, w.log.Named("nbi"), w.op.Registry(), provAPI, invAPI, w.alarms(), w.performance()); err != nil {
		return err
	}
	// A port in use, or the serving loop ending by itself, stops the operator; the drain comes after the
	// passes, within the one stop deadline.
	w.op.Add(northbound{srv: srv, log: w.log})
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
