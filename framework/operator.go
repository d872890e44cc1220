// Package framework is a small kopf-style operator framework on client-go: named create/resume/update/
// delete/timer handlers per watched resource, startup/cleanup/probe activities, progress persisted in
// kopf-compatible annotations, and one observation per pass with the retries, patches, finalizers, events,
// health and metrics owned here rather than by handlers.
//
// Where each part lives: the API clients (kubeclient.go, clientlimits.go) and what travels on them
// (codec.go: one JSON decoding pass per answer, protobuf for built-in kinds; watchdecode.go: watch frames,
// managedFields cut before the decode); every failure classified (apierror.go: config, unauthorized,
// notFound, conflict, invalid, unavailable, protocol, transport, with whether a retry can help and whether
// a write may have landed; a named read answered with something else is a protocol error, never "not
// found"); informers and their Cache (cache.go); the workqueue and the freshness gate (controller.go); the
// pass (pass.go), its outcomes (outcome.go) and patches (patch.go); kopf progress and diff-base
// (progress.go, diffbase.go, on package kopf); finalizers (finalizer.go); events (events.go); health,
// readiness and metrics (health.go, readiness.go, metrics.go: a degraded part is a line in /readyz, never
// a 503); runnables (runnable.go), the phases of Run (run.go) and leader election (election.go) with its
// fence (fence.go; writefence.go at the clients' transport).
//
// Run goes startup (the health listener, the startup activities, the runnables of every replica) → sync
// (every cache synced: ready) → work (the election; once leading, the workers and the leader's runnables)
// → drain (not ready, every runnable's context cancelled, passes and the leader's runnables given until
// the drain deadline, then the lease released, so a successor does not overlap them), then undoes each
// phase in reverse, all within one ShutdownTimeout. A lost lease or an error a runnable returns fails the
// operator (Operator.Fail, the one error path). A Start must return promptly once its context ends.
//
// The framework knows no O2IMS, NetBox, Porch or Metal3 word, imports nothing of ours but package kopf
// and internal/, and never lets a handler see the queue or send the pass's patches.
package framework

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/o2ims-operator/o2ims-operator/framework/kopf"
)

// Options configure an Operator. Zero values take the defaults noted.
type Options struct {
	// Name identifies the operator: event source, lease holder prefix (default "operator").
	Name string
	// MetricsNamespace prefixes the framework's metrics (default "operator").
	MetricsNamespace string
	// Prefix is the annotation prefix for progress and diff-base (kopf's persistence prefix). Required.
	Prefix string
	// TimeForm is how progress records we start write their times (kopf >= 1.37's aware form by default;
	// kopf.TimeNaive for a kopf 1.36 image). A record read from the object keeps the form it was read in.
	TimeForm kopf.TimeForm
	// Workers is the number of concurrent passes per watched resource (default 4).
	Workers int
	// Liveness is kopf's --liveness URL; "" disables the listener.
	Liveness string
	// MetricsAuth guards the listener's /metrics: "" open, MetricsAuthKubernetes a TokenReview and a
	// SubjectAccessReview (get on /metrics) per caller. /healthz and /readyz stay open.
	MetricsAuth string
	// HealthTimeouts bound the listener's connections (zero fields: defaultHealthTimeouts).
	HealthTimeouts ServerTimeouts
	// LeaderElect gates the workers on a coordination.k8s.io Lease.
	LeaderElect             bool
	LeaderElectionNamespace string
	LeaderElectionID        string
	// LeaseDuration: another replica takes the Lease once it went unrenewed this long. RenewDeadline:
	// this one stops writing this long after its last successful renewal (at most LeaseDuration - 1 s),
	// before the Lease can be taken; the difference is the margin for writes in flight (fence.go).
	LeaseDuration time.Duration // default 15s
	RenewDeadline time.Duration // default 10s
	RetryPeriod   time.Duration // default 2s
	// Namespace is the operator's own namespace (POD_NAMESPACE; default "default"): the lease lives there.
	Namespace string
	// ShutdownTimeout is the one deadline of a stop, from the signal (or failure) on: passes in flight,
	// cleanup activities (the NBI's drain), the lease release and the health listener all end within it
	// (default 4s, inside the Deployment's 5s grace period). Passes may use it all but the last quarter
	// (at most 1s), which is kept for cleanup.
	ShutdownTimeout time.Duration
	// FreshnessTimeout bounds waiting for our own write to reach the cache (default 10s).
	FreshnessTimeout time.Duration
	// BackoffBase/BackoffMax bound the retry of handlers that failed with an ordinary error (1s, 5m).
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// KeepSyncGarbage skips returning the initial sync's garbage to the OS. That return collects the
	// whole process's heap, so a process running several operators (the model test restarts dozens)
	// would pay for every other's heap at each start.
	KeepSyncGarbage bool
	Clock           clock.WithTicker
	Logger          *zap.Logger
	// Remedy says what grants a watch the API server refused (403, or 404 for an absent CRD), for the
	// one line the log and /readyz show; a generic sentence when nil.
	Remedy RemedyFunc
	// Registry collects the metrics (a fresh one with Go/process collectors when nil).
	Registry *prometheus.Registry
	// Redact masks what must not leave the process (internal addresses, DNS servers) in every error
	// text the framework writes to an object (progress records), posts as an event or logs above DEBUG;
	// the unmasked text is logged at DEBUG only. nil: texts are written as they are.
	Redact func(string) string
}

func (o *Options) defaults() {
	if o.Name == "" {
		o.Name = "operator"
	}
	if o.MetricsNamespace == "" {
		o.MetricsNamespace = "operator"
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.LeaseDuration <= 0 {
		o.LeaseDuration = 15 * time.Second
	}
	if o.RenewDeadline <= 0 {
		o.RenewDeadline = 10 * time.Second
	}
	if o.RetryPeriod <= 0 {
		o.RetryPeriod = 2 * time.Second
	}
	if o.LeaderElectionID == "" {
		o.LeaderElectionID = o.Name
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.LeaderElectionNamespace == "" {
		o.LeaderElectionNamespace = o.Namespace
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = 4 * time.Second
	}
	if o.FreshnessTimeout <= 0 {
		o.FreshnessTimeout = 10 * time.Second
	}
	if o.BackoffBase <= 0 {
		o.BackoffBase = time.Second
	}
	if o.BackoffMax <= 0 {
		o.BackoffMax = 5 * time.Minute
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
		processCollectors(o.Registry)
	}
}

// Operator runs the registered watches and activities.
type Operator struct {
	opts    Options
	clients *Clients
	log     *zap.Logger
	metrics *Metrics
	cache   *Cache
	events  *eventRecorder
	health  *healthServer

	watches   []*Watch
	startup   []activity
	cleanup   []activity
	probes    []probe
	ctrls     []*controller
	informers *informers // informers.go: every informer, watched or related
	ready     atomic.Bool
	leading   atomic.Bool
	fence     *leaseFence // with leader election: until when this replica may act (fence.go)
	readiness *readiness
	// leaderOnly and everyReplica are the runnables (Add), by where they run.
	leaderOnly, everyReplica *runnableGroup
	failOnce                 sync.Once
	failed                   chan struct{} // closed by Fail, after failErr is set
	failErr                  error
}

// New creates an operator on the given clients.
func New(clients *Clients, opts Options) (*Operator, error) {
	opts.defaults()
	if opts.Prefix == "" {
		return nil, errors.New("framework: Options.Prefix is required")
	}
	o := &Operator{
		opts: opts, clients: clients, log: opts.Logger, cache: newCache(),
		failed: make(chan struct{}), readiness: newReadiness(opts.Logger, opts.Remedy),
	}
	o.informers = &informers{cache: o.cache, readiness: o.readiness, related: map[relatedKey]cache.SharedIndexInformer{}}
	if clients != nil {
		o.informers.client = clients.watch
	}
	o.leaderOnly = &runnableGroup{name: "leader", log: o.log, fail: o.Fail}
	o.everyReplica = &runnableGroup{name: "every replica", log: o.log, fail: o.Fail}
	o.metrics = newMetrics(opts.MetricsNamespace, opts.Registry)
	if opts.LeaderElect {
		if fenceWindow(opts.LeaseDuration, opts.RenewDeadline) <= 0 {
			return nil, fmt.Errorf("framework: a lease duration of %s leaves a leader no time to act: at least 2s", opts.LeaseDuration)
		}
		o.fence = newLeaseFence(fenceWindow(opts.LeaseDuration, opts.RenewDeadline), func() {
			o.log.Error("the lease was not renewed within the renew deadline: nothing more is written, before another replica can take it",
				zap.Duration("renewDeadline", opts.RenewDeadline), zap.Duration("leaseDuration", opts.LeaseDuration))
			o.deposed(errors.New("leader election lost: the lease was not renewed within the renew deadline"))
		})
	}
	if clients != nil && clients.fence != nil {
		clients.fence.set(o.transportMayWrite) // writefence.go
	}
	registerOperatorGauges(opts.MetricsNamespace, opts.Registry, o)
	if opts.Liveness != "" {
		addr, path, err := ParseLiveness(opts.Liveness)
		if err != nil {
			return nil, err
		}
		o.health = &healthServer{addr: addr, path: path, readyz: o.readiness.serve(o.ready.Load),
			gatherer: opts.Registry, clock: opts.Clock, log: o.log, timeouts: opts.HealthTimeouts}
		switch opts.MetricsAuth {
		case "":
		case MetricsAuthKubernetes:
			o.health.metricsIn = newMetricsAuth(clients.Kubernetes, opts.Clock, o.log.Named("metrics-auth")).wrap
		default:
			return nil, fmt.Errorf("METRICS_AUTH=%q: want %q or nothing", opts.MetricsAuth, MetricsAuthKubernetes)
		}
	}
	return o, nil
}

// Cache reads the informer caches (valid once Run has synced them).
func (o *Operator) Cache() *Cache { return o.cache }

// Clients are the operator's API clients.
func (o *Operator) Clients() *Clients { return o.clients }

// Registry is where the operator's metrics are; other components register theirs here too.
func (o *Operator) Registry() *prometheus.Registry { return o.opts.Registry }

// Logger is the operator's logger.
func (o *Operator) Logger() *zap.Logger { return o.log }

// Ready reports whether startup is complete and the caches are synced.
func (o *Operator) Ready() bool { return o.ready.Load() }

// NotReadyReason is why /readyz answers 503 ("" when it answers 200).
func (o *Operator) NotReadyReason() string { return o.readiness.reason(o.ready.Load()) }

// Leading reports whether this instance handles objects (always true without leader election once running).
func (o *Operator) Leading() bool { return o.leading.Load() }

// HealthAddr is the bound liveness listener address.
func (o *Operator) HealthAddr() string {
	if o.health == nil {
		return ""
	}
	return o.health.Addr()
}

// Fail stops the operator with an error, so the process exits non-zero and is restarted: the one error
// path, which a runnable's error and a lost lease take too. It works at any time: during a startup
// activity and while the caches sync as well as while running; the first error is the one reported.
func (o *Operator) Fail(err error) {
	o.failOnce.Do(func() { o.failErr = err; close(o.failed) })
}

// failure is the error Fail was given, nil if it was not called.
func (o *Operator) failure() error {
	select {
	case <-o.failed:
		return o.failErr
	default:
		return nil
	}
}

// buildControllers makes each watch's informer and controller, and the related informers they need.
func (o *Operator) buildControllers() error {
	for _, w := range o.watches {
		if w.usesFinalizer() && w.finalizer == "" {
			return fmt.Errorf("framework: %s has delete handlers or timers but no Finalizer", gvrString(w.gvr))
		}
		// A cluster-scoped resource has no namespace index: every object would sit in the one set of
		// namespace "" (25 MiB with 100 000 cached), and List of all needs none.
		indexers := cache.Indexers{}
		if w.namespaced {
			indexers[cache.NamespaceIndex] = cache.MetaNamespaceIndexFunc
		}
		for name, fn := range w.indexers {
			fn := fn
			indexers[name] = func(obj any) ([]string, error) {
				u, ok := obj.(*unstructured.Unstructured)
				if !ok {
					return nil, nil
				}
				return fn(u), nil
			}
		}
		ns := metav1.NamespaceAll
		if w.namespaced {
			ns = w.namespace
		}
		selector := w.selector
		tweak := func(lo *metav1.ListOptions) { lo.LabelSelector = selector }
		inf := dynamicinformer.NewFilteredDynamicInformer(o.clients.watch, w.gvr, ns, 0, indexers, tweak).Informer()
		if err := inf.SetTransform(stripUnread(true)); err != nil {
			return err
		}
		if err := inf.SetWatchErrorHandlerWithContext(o.readiness.watchErrorHandler(w.gvr, ns, inf)); err != nil {
			return err
		}
		c := newController(o, w, inf)
		if _, err := inf.AddEventHandler(c.eventHandler()); err != nil {
			return err
		}
		o.cache.add(w.gvr, inf)
		o.informers.watched = append(o.informers.watched, watchedInformer{w.gvr, inf})
		if err := o.cache.addUIDIndex(w.gvr, inf); err != nil {
			return err
		}
		for _, r := range w.related {
			rinf := o.informers.relatedInformer(r.gvr, r.namespace)
			if _, err := rinf.AddEventHandler(c.relatedHandler(r)); err != nil {
				return err
			}
		}
		o.ctrls = append(o.ctrls, c)
		w.ctrl.Store(c)
	}
	return nil
}
