package framework

import (
	"context"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/client-go/tools/leaderelection"
	clientmetrics "k8s.io/client-go/tools/metrics"
	"k8s.io/client-go/util/workqueue"
)

// Metrics are the framework's own series plus the client-go ones (workqueue, REST client, leader election)
// under the names the ecosystem knows from controller-runtime and component-base.
type Metrics struct {
	HandlerRuns       *prometheus.CounterVec
	HandlerDuration   *prometheus.HistogramVec
	HandlerRetries    *prometheus.CounterVec
	PermanentFailures *prometheus.CounterVec
	Writes            *prometheus.CounterVec
	// Yields: status writes that only reported progress and yielded to a busy client-side bucket (yield.go).
	Yields *prometheus.CounterVec
	// Events: handed to the recorder, taken off its queues by the writers (the difference is queued or was
	// dropped), the writers' API calls by result, and what was dropped, by reason.
	EventsPosted     *prometheus.CounterVec
	EventsDispatched prometheus.Counter
	EventWrites      *prometheus.CounterVec
	EventsDropped    *prometheus.CounterVec
	// Fenced: what the lease fence stopped (fence.go): passes not started, writes and events not sent.
	Fenced    *prometheus.CounterVec
	workqueue *workqueueMetrics
}

func newMetrics(namespace string, reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		HandlerRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "handler_runs_total",
			Help: "Handler runs by resource, handler and outcome (success, temporary, error, permanent).",
		}, []string{"resource", "handler", "outcome"}),
		HandlerDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "handler_duration_seconds",
			Help:    "Duration of one handler run (one observation).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"resource", "handler"}),
		HandlerRetries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "handler_retries_total",
			Help: "Handler runs that asked for another pass, by kind: temporary (waiting, with a delay) or error (backoff).",
		}, []string{"resource", "handler", "kind"}),
		PermanentFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "handler_permanent_failures_total",
			Help: "Handlers that failed permanently (no further retries).",
		}, []string{"resource", "handler"}),
		Writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "object_patches_total",
			Help: "Patches the framework sent for watched objects, by resource and subresource (object, status).",
		}, []string{"resource", "subresource"}),
		Yields: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "status_writes_yielded_total",
			Help: "Status writes that only reported progress and were held back because the resource's client-side rate limiter had no token free; each is tried again (newest value first) until written or superseded.",
		}, []string{"resource"}),
		EventsPosted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "events_posted_total",
			Help: "Kubernetes Events handed to the event recorder, by type (Normal, Warning).",
		}, []string{"type"}),
		EventsDispatched: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "events_dispatched_total",
			Help: "Events taken off the recorder's queues by its writers; posted minus dispatched are queued or were dropped (events_dropped_total{reason=\"queue_full\"}).",
		}),
		EventWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "event_writes_total",
			Help: "Event writes (create, patch) sent to the API server, by result (success, error).",
		}, []string{"result"}),
		EventsDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "events_dropped_total",
			Help: "Events that never reached the API server, by reason: queue_full (more than 20000 waiting), budget (client-go's per-object budget: 25, then one per 5 minutes), rejected (refused, or retries spent), stopped (shutdown), fenced (the lease fence lapsed), unreferenceable.",
		}, []string{"reason"}),
		Fenced: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "fenced_total",
			Help: "What this replica did not do because its lease was not renewed within the renew deadline (another may lead): pass (not started), status, object (patches not sent), event (not posted), kube-write (any other API write, refused at the transport), netbox-write (a NetBox write, refused unsent).",
		}, []string{"what"}),
		workqueue: newWorkqueueMetrics(),
	}
	reg.MustRegister(m.HandlerRuns, m.HandlerDuration, m.HandlerRetries, m.PermanentFailures, m.Writes,
		m.Yields, m.EventsPosted, m.EventsDispatched, m.EventWrites, m.EventsDropped, m.Fenced)
	for _, w := range []string{"pass", "status", "object", "event", "kube-write"} {
		m.Fenced.WithLabelValues(w)
	}
	// Known label values are exposed at zero from the start, so increase() and alerts see the first event.
	for _, t := range []string{"Normal", "Warning"} {
		m.EventsPosted.WithLabelValues(t)
	}
	for _, r := range []string{"success", "error"} {
		m.EventWrites.WithLabelValues(r)
	}
	for _, r := range []string{"queue_full", "budget", "rejected", "stopped"} {
		m.EventsDropped.WithLabelValues(r)
	}
	m.workqueue.register(reg)
	registerClientGoMetrics(reg)
	return m
}

// initWatch exposes every series a registered handler can produce at zero before its first run, so an
// alert on increase() or rate() works against a fresh operator (a counter absent until its first event
// has no HELP/TYPE and no earlier sample to compare with).
func (m *Metrics) initWatch(resource string, w *Watch) {
	ids := map[string]bool{}
	for _, hs := range w.handlers {
		for _, h := range hs {
			ids[h.id] = true
		}
	}
	for _, t := range w.timers {
		ids[t.id] = true
	}
	for id := range ids {
		for _, o := range []outcomeKind{outcomeSuccess, outcomeTemporary, outcomeError, outcomePermanent} {
			m.HandlerRuns.WithLabelValues(resource, id, string(o))
		}
		for _, o := range []outcomeKind{outcomeTemporary, outcomeError} {
			m.HandlerRetries.WithLabelValues(resource, id, string(o))
		}
		m.PermanentFailures.WithLabelValues(resource, id)
	}
	for _, sub := range []string{"object", "status"} {
		m.Writes.WithLabelValues(resource, sub)
	}
	m.Yields.WithLabelValues(resource)
}

// registerOperatorGauges adds the gauges an SRE pages on when the operator itself is in trouble: ready
// (startup done and caches synced: the NBI answers) and leading (this instance handles objects; always 1
// once running without leader election). Read at scrape time from the operator's own flags.
func registerOperatorGauges(namespace string, reg prometheus.Registerer, o *Operator) {
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Name: "operator_ready",
			Help: "1 while /readyz answers 200: startup activities succeeded, the informer caches synced and no watch is refused; 0 otherwise.",
		}, func() float64 { return b(o.NotReadyReason() == "") }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Name: "operator_leading",
			Help: "1 while this instance handles objects (holds the Lease with --leader-elect; always once running without it).",
		}, func() float64 { return b(o.Leading()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Name: "operator_leader_election_enabled",
			Help: "1 when --leader-elect is on (replicas other than the leader stand by).",
		}, func() float64 { return b(o.opts.LeaderElect) }),
	)
}

// ---- workqueue (client-go MetricsProvider, per queue; names as component-base/controller-runtime) ----

type workqueueMetrics struct {
	depth, adds, latency, workDuration, unfinished, longest, retries prometheus.Collector
}

func newWorkqueueMetrics() *workqueueMetrics {
	return &workqueueMetrics{
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "workqueue", Name: "depth", Help: "Current depth of the workqueue.",
		}, []string{"name"}),
		adds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "workqueue", Name: "adds_total", Help: "Total adds handled by the workqueue.",
		}, []string{"name"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "workqueue", Name: "queue_duration_seconds",
			Help:    "How long an item stays in the workqueue before being requested.",
			Buckets: prometheus.ExponentialBuckets(10e-9, 10, 12),
		}, []string{"name"}),
		workDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "workqueue", Name: "work_duration_seconds",
			Help:    "How long processing an item from the workqueue takes.",
			Buckets: prometheus.ExponentialBuckets(10e-9, 10, 12),
		}, []string{"name"}),
		unfinished: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "workqueue", Name: "unfinished_work_seconds",
			Help: "Seconds of work in progress not yet observed by work_duration.",
		}, []string{"name"}),
		longest: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "workqueue", Name: "longest_running_processor_seconds",
			Help: "Seconds the longest running processor has been running.",
		}, []string{"name"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "workqueue", Name: "retries_total", Help: "Total retries handled by the workqueue.",
		}, []string{"name"}),
	}
}

func (w *workqueueMetrics) register(reg prometheus.Registerer) {
	reg.MustRegister(w.depth, w.adds, w.latency, w.workDuration, w.unfinished, w.longest, w.retries)
}

func (w *workqueueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return w.depth.(*prometheus.GaugeVec).WithLabelValues(name)
}
func (w *workqueueMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return w.adds.(*prometheus.CounterVec).WithLabelValues(name)
}
func (w *workqueueMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return w.latency.(*prometheus.HistogramVec).WithLabelValues(name)
}
func (w *workqueueMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return w.workDuration.(*prometheus.HistogramVec).WithLabelValues(name)
}
func (w *workqueueMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return w.unfinished.(*prometheus.GaugeVec).WithLabelValues(name)
}
func (w *workqueueMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return w.longest.(*prometheus.GaugeVec).WithLabelValues(name)
}
func (w *workqueueMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return w.retries.(*prometheus.CounterVec).WithLabelValues(name)
}

// ---- client-go process-wide metrics (REST client, leader election) ----
// client-go accepts these adapters once per process, so they are process-global collectors that every
// operator instance's registry includes (tests run several instances in one process).

var (
	restRequests      *prometheus.CounterVec
	restLatency       *prometheus.HistogramVec
	restRateLimiter   *prometheus.HistogramVec
	leaderMasterGauge *prometheus.GaugeVec
	restByResource    = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "o2ims_rest_client_requests_by_resource_total",
		Help: "Requests this process sent to the Kubernetes API, counted at its transport, by method, resource (subresource after a slash) and status code.",
	}, []string{"method", "resource", "code"})
)

// client-go reads its adapters without locks, so they are installed at init, before any client exists.
func init() {
	{
		restRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rest_client_requests_total",
			Help: "Number of HTTP requests to the Kubernetes API, partitioned by status code, method, and host.",
		}, []string{"code", "method", "host"})
		restLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rest_client_request_duration_seconds",
			Help:    "Request latency to the Kubernetes API in seconds, by verb and host.",
			Buckets: []float64{.005, .025, .1, .25, .5, 1, 2, 4, 8, 15, 30, 60},
		}, []string{"verb", "host"})
		restRateLimiter = prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rest_client_rate_limiter_duration_seconds",
			Help:    "Time spent waiting for the client-side rate limiter (--kube-api-qps/--kube-api-burst), by verb and host.",
			Buckets: []float64{.001, .005, .025, .1, .25, .5, 1, 2, 4, 8, 15, 30, 60},
		}, []string{"verb", "host"})
		leaderMasterGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "leader_election_master_status",
			Help: "1 while this instance holds the named lease, 0 otherwise.",
		}, []string{"name"})
		clientmetrics.Register(clientmetrics.RegisterOpts{
			RequestResult:      restResultAdapter{},
			RequestLatency:     restLatencyAdapter{restLatency},
			RateLimiterLatency: restLatencyAdapter{restRateLimiter},
		})
		leaderelection.SetProvider(leaderProvider{})
	}
}

func registerClientGoMetrics(reg prometheus.Registerer) {
	for _, c := range []prometheus.Collector{restRequests, restLatency, restRateLimiter, leaderMasterGauge, restByResource} {
		if err := reg.Register(c); err != nil {
			if _, dup := err.(prometheus.AlreadyRegisteredError); !dup {
				panic(err)
			}
		}
	}
}

type restResultAdapter struct{}

func (restResultAdapter) Increment(_ context.Context, code, method, host string) {
	restRequests.WithLabelValues(code, method, host).Inc()
}

type restLatencyAdapter struct{ h *prometheus.HistogramVec }

func (a restLatencyAdapter) Observe(_ context.Context, verb string, u url.URL, latency time.Duration) {
	a.h.WithLabelValues(verb, u.Host).Observe(latency.Seconds())
}

type leaderProvider struct{}

func (leaderProvider) NewLeaderMetric() leaderelection.LeaderMetric { return leaderMetric{} }

type leaderMetric struct{}

func (leaderMetric) On(name string)           { leaderMasterGauge.WithLabelValues(name).Set(1) }
func (leaderMetric) Off(name string)          { leaderMasterGauge.WithLabelValues(name).Set(0) }
func (leaderMetric) SlowpathExercised(string) {}

// processCollectors adds the Go runtime and process series to a fresh registry.
func processCollectors(reg prometheus.Registerer) {
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}
