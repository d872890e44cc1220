// Command peer is the benchmark's controller-runtime peer: the operator's provisioning chain without
// NetBox (validate, Porch PackageVariant, CAPI Cluster, fulfilled; the PackageVariant deleted and the
// finalizer removed on delete; the operator's statuses and Events, Created and Deleted included),
// written the way a controller-runtime operator is, so that `make bench`
// measures both side by side at the same client limits against the same world. It is a module of its
// own: controller-runtime is never a dependency of the operator.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

type options struct {
	metrics, probes string
	qps             float64
	burst, workers  int
	kopfAnnotations bool
}

func main() {
	var o options
	flag.Float64Var(&o.qps, "kube-api-qps", 100, "client-side limit of each kind's client (controller-runtime's per-kind REST clients)")
	flag.IntVar(&o.burst, "kube-api-burst", 200, "client-side burst of each kind's client")
	flag.IntVar(&o.workers, "workers", 8, "MaxConcurrentReconciles (the operator's --workers)")
	flag.BoolVar(&o.kopfAnnotations, "kopf-annotations", false, "carry the annotations the operator keeps for kopf (the bench's control: requests of the operator's size)")
	flag.StringVar(&o.metrics, "metrics-bind-address", "127.0.0.1:0", "metrics listener (/metrics)")
	flag.StringVar(&o.probes, "health-probe-bind-address", "127.0.0.1:0", "probe listener (/readyz: caches synced)")
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseDevMode(false)))
	if err := run(ctrl.SetupSignalHandler(), o); err != nil {
		fmt.Fprintln(os.Stderr, "peer:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	// --kubeconfig is controller-runtime's own flag (pkg/client/config), read by GetConfig.
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst, cfg.UserAgent = float32(o.qps), o.burst, "o2ims-bench-peer"
	// PROVISIONING_REQUEST_SELECTOR: the requests this instance handles, as the operator's setting.
	sel, err := labels.Parse(os.Getenv("PROVISIONING_REQUEST_SELECTOR"))
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: o.metrics},
		HealthProbeBindAddress: o.probes,
		// The shipped RBAC grants PackageVariants and Clusters in their namespace only, as the operator reads them.
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			newRequest():       {Label: sel},
			object(pvGVK):      {Namespaces: map[string]cache.Config{namespace: {}}},
			object(clusterGVK): {Namespaces: map[string]cache.Config{namespace: {}}},
		}},
		// Reads of unstructured objects from the cache, as typed ones are (else every Get is a GET).
		Client: client.Options{Cache: &client.CacheOptions{Unstructured: true}},
	})
	if err != nil {
		return err
	}
	if err := setup(ctx, mgr, o.workers, o.kopfAnnotations); err != nil {
		return err
	}
	var synced atomic.Bool
	if err := mgr.Add(readiness(mgr, &synced)); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("synced", func(*http.Request) error {
		if !synced.Load() {
			return errors.New("caches not synced")
		}
		return nil
	}); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// readiness marks the peer ready once its caches are synced.
func readiness(mgr ctrl.Manager, synced *atomic.Bool) runnableFunc {
	return func(ctx context.Context) error {
		if mgr.GetCache().WaitForCacheSync(ctx) {
			synced.Store(true)
		}
		<-ctx.Done()
		return nil
	}
}

type runnableFunc func(context.Context) error

func (f runnableFunc) Start(ctx context.Context) error { return f(ctx) }

func newRequest() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(requestGVK)
	return u
}
