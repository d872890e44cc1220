// Package world simulates the parts of a Nephio management cluster the operator talks to — Porch
// rendering PackageVariants, Cluster API provisioning Clusters, Metal3 registering BareMetalHosts, CAPM3's
// Machines consuming and giving back hosts (capm3.go) — by writing real objects to a real API server, so tests and the local run exercise the operator against
// what the API server really stores.
package world

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/o2ims-operator/o2ims-operator/api/external"
)

// Options shape the world's behaviour. Templates and hosts can be made to misbehave by name.
type Options struct {
	Dynamic dynamic.Interface
	Logger  *zap.Logger

	PackageVariantNamespace string // default "default"
	ClusterNamespace        string // default "default"
	Metal3Namespace         string // "" = every namespace
	ClusterVersion          string // "v1beta2" (default) or "v1beta1"

	// RenderDelay is how long Porch takes to report Ready=True.
	RenderDelay time.Duration
	// ProvisionDelay is how long CAPI takes from creating the Cluster to provisioned (half of it in
	// Provisioning).
	ProvisionDelay time.Duration
	// PorchFinalizer makes PackageVariants carry Porch's finalizer, removed DeleteDelay after deletion.
	PorchFinalizer bool
	DeleteDelay    time.Duration
	// Metal3 timings: registering → inspecting → available.
	RegisterDelay, InspectDelay time.Duration
	// ImageDelay is how long Metal3 takes to write a consumed host's image (provisioning) and to wipe it
	// (deprovisioning) (capm3.go).
	ImageDelay time.Duration
	// Metal3Finalizer makes BareMetalHosts carry BMO's finalizer, removed DeleteDelay after deletion.
	Metal3Finalizer bool

	// RenderFailure maps a template name to a Ready=False message (rendering fails and keeps failing).
	RenderFailure map[string]string
	// ReadyFirst lists templates whose PackageVariant conditions are written Ready first, Stalled last
	// (Porch v1.5.8 writes Stalled then Ready after its first full reconcile, but a reader must find
	// conditions by type, never by position).
	ReadyFirst map[string]bool
	// NeverRender lists templates Porch never reports on; NeverProvision lists templates whose Cluster
	// never becomes provisioned; NoCluster lists templates that render but create no Cluster.
	NeverRender, NeverProvision, NoCluster map[string]bool
	// ClusterFailure maps a template name to a failureMessage (phase Failed).
	ClusterFailure map[string]string
	// PackageRevisions (when served: porch.kpt.dev, a CRD in tests): drafts are published ApproveDelay after
	// they are created, by Nephio's approval controller (policy initial: only when the package has no
	// Published revision yet) or, when AdminApproves, by an administrator — never for a template in
	// NeverPublish. A Cluster whose published revision changes rolls out for RolloutDelay (default
	// ProvisionDelay): RollingOut=True and its machines not up to date, Available unchanged.
	AdminApproves bool
	// PorchDegradesAfter and ClusterDegradesAfter map a template to how long after Porch first saw its
	// PackageVariant (CAPI its Cluster) it starts reporting a fault and keeps it: Porch Stalled=True /
	// Ready=False as for an upstream revision it cannot find, CAPI Available=False as for a workload
	// cluster it cannot reach.
	PorchDegradesAfter, ClusterDegradesAfter map[string]time.Duration
	NeverPublish                             map[string]bool
	ApproveDelay                             time.Duration
	RolloutDelay                             time.Duration
	// SyncDelay maps a template to how long after a revision's publication the GitOps sync applies it
	// (Config Sync polls its repository, every 15 s by default; else at once): published, not yet applied.
	SyncDelay map[string]time.Duration
	// SameClusterSpec lists templates whose versions all render the same Cluster spec: a version bump
	// changes only the package's other objects (resources.go).
	SameClusterSpec map[string]bool
	// BadCredentialsUser: a BMC Secret with this username makes Metal3 report a registration error.
	BadCredentialsUser string
	// RegistrationRetry is BMO's backoff after a first failed registration (its 1–2 minutes, scaled): the
	// n-th failed attempt is retried RegistrationRetry·2^(n-1) later (default 100ms).
	RegistrationRetry time.Duration
}

// World runs the simulated controllers until Stop.
type World struct {
	opts Options
	// revisionsServed: PackageRevisions can be listed; else Porch creates the Cluster on Ready, as before.
	revisionsServed bool
	// resourcesServed: PackageRevisionResources can be written (resources.go); else revisions have no content.
	resourcesServed bool
	catalogMu       sync.Mutex // the catalog's revision numbers (packagerevision.go)
	log             *zap.Logger
	cancel          context.CancelFunc
	wg              sync.WaitGroup
	players         []*player
	capm3           *capm3

	faultMu sync.Mutex
	faults  map[string]BMCFault // by BMC address
}

// SetBMCFault makes the BMC at address (a BareMetalHost's spec.bmc.address) answer with fault from now
// on (BMCHealthy: answer again). Hosts registering with it fail or recover at their next attempt.
func (w *World) SetBMCFault(address string, fault BMCFault) {
	w.faultMu.Lock()
	defer w.faultMu.Unlock()
	if w.faults == nil {
		w.faults = map[string]BMCFault{}
	}
	w.faults[address] = fault
}

func (w *World) faultAt(address string) BMCFault {
	w.faultMu.Lock()
	defer w.faultMu.Unlock()
	return w.faults[address]
}

// Start runs Porch, CAPI and Metal3 players; a player whose resource is not served (no CRD) sits out.
func Start(ctx context.Context, opts Options) (*World, error) {
	if opts.PackageVariantNamespace == "" {
		opts.PackageVariantNamespace = "default"
	}
	if opts.ClusterNamespace == "" {
		opts.ClusterNamespace = "default"
	}
	if opts.ClusterVersion == "" {
		opts.ClusterVersion = "v1beta2"
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.RegistrationRetry <= 0 {
		opts.RegistrationRetry = 100 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(ctx)
	if opts.RolloutDelay == 0 {
		opts.RolloutDelay = opts.ProvisionDelay
	}
	w := &World{opts: opts, log: opts.Logger, cancel: cancel}
	w.revisionsServed = served(ctx, opts.Dynamic, external.PackageRevisionGVR)
	w.resourcesServed = served(ctx, opts.Dynamic, external.PackageRevisionResourcesGVR)
	porch := &porch{w: w}
	capi := &capi{w: w, gvr: external.ClusterGVR(opts.ClusterVersion)}
	metal3 := &metal3{w: w}
	w.capm3 = &capm3{w: w}
	for _, p := range []*player{
		w.newPlayer("porch", external.PackageVariantGVR, opts.PackageVariantNamespace, porch.reconcile),
		w.newPlayer("capi", capi.gvr, opts.ClusterNamespace, capi.reconcile),
		w.newPlayer("metal3", external.BareMetalHostGVR, opts.Metal3Namespace, metal3.reconcile),
		w.newPlayer("capm3", m3mGVR, opts.Metal3Namespace, w.capm3.reconcile),
	} {
		if served(ctx, opts.Dynamic, p.gvr) {
			w.players = append(w.players, p)
		} else {
			w.log.Info("resource not served; this player sits out", zap.String("player", p.name))
		}
	}
	for _, p := range w.players {
		p.start(ctx, &w.wg)
	}
	syncCtx, cancelSync := context.WithTimeout(ctx, time.Minute)
	defer cancelSync()
	for _, p := range w.players {
		if !cache.WaitForCacheSync(syncCtx.Done(), p.informer.HasSynced) {
			w.Stop()
			return nil, fmt.Errorf("world: %s cache never synced", p.name)
		}
	}
	return w, nil
}

// served tells whether a resource can be listed (its CRD is installed).
func served(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource) bool {
	_, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
	return err == nil
}

// Stop ends the simulation and waits for it.
func (w *World) Stop() {
	w.cancel()
	for _, p := range w.players {
		p.queue.ShutDown()
	}
	w.wg.Wait()
}

// player reconciles one resource: an informer feeds keys, reconcile says when to look again.
type player struct {
	name      string
	gvr       schema.GroupVersionResource
	informer  cache.SharedIndexInformer
	queue     workqueue.TypedRateLimitingInterface[string]
	reconcile func(ctx context.Context, u *unstructured.Unstructured, firstSeen time.Time) (time.Duration, error)
	mu        sync.Mutex
	seen      map[string]time.Time
	log       *zap.Logger
}

func (w *World) newPlayer(name string, gvr schema.GroupVersionResource, ns string,
	fn func(context.Context, *unstructured.Unstructured, time.Time) (time.Duration, error)) *player {
	inf := dynamicinformer.NewFilteredDynamicInformer(w.opts.Dynamic, gvr, ns, 0, cache.Indexers{}, nil).Informer()
	p := &player{
		name: name, gvr: gvr, informer: inf, reconcile: fn, seen: map[string]time.Time{}, log: w.log.Named(name),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig[string](
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](20*time.Millisecond, 2*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{}),
	}
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			p.queue.Add(key)
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, n any) { enqueue(n) }, DeleteFunc: enqueue,
	})
	return p
}

func (p *player) start(ctx context.Context, wg *sync.WaitGroup) {
	go p.informer.RunWithContext(ctx)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p.next(ctx) {
			}
		}()
	}
}

func (p *player) next(ctx context.Context) bool {
	key, shutdown := p.queue.Get()
	if shutdown {
		return false
	}
	defer p.queue.Done(key)
	obj, exists, _ := p.informer.GetIndexer().GetByKey(key)
	if !exists {
		p.mu.Lock()
		delete(p.seen, key)
		p.mu.Unlock()
		p.queue.Forget(key)
		return true
	}
	u := obj.(*unstructured.Unstructured).DeepCopy()
	p.mu.Lock()
	first, ok := p.seen[key]
	if !ok {
		first = time.Now()
		p.seen[key] = first
	}
	p.mu.Unlock()
	again, err := p.reconcile(ctx, u, first)
	switch {
	case err != nil && ctx.Err() == nil:
		p.log.Debug("reconcile failed; retrying", zap.String("object", key), zap.Error(err))
		p.queue.AddRateLimited(key)
	case again > 0:
		p.queue.Forget(key)
		p.queue.AddAfter(key, again)
	default:
		p.queue.Forget(key)
	}
	return true
}

// due returns how long until firstSeen+delay, or 0 when it has passed.
func due(firstSeen time.Time, delay time.Duration) time.Duration {
	if d := time.Until(firstSeen.Add(delay)); d > 0 {
		return d
	}
	return 0
}
