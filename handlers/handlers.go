package handlers

import (
	"context"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/api/spec"
	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/framework"
	"github.com/o2ims-operator/o2ims-operator/handlers/hosts"
	"github.com/o2ims-operator/o2ims-operator/handlers/kube"
)

// Request and HostRequest are a request's validated spec (package spec).
type (
	Request     = spec.Request
	HostRequest = spec.HostRequest
)

// ParseRequest validates a request's spec; reserved are selector keys the inventory owns.
func ParseRequest(s map[string]any, reserved map[string]bool) (Request, error) {
	return spec.Parse(s, reserved)
}

// Hosts is the inventory step of the chain (package hosts): claim hosts, register them with Metal3, wait
// until they are available; and release them on delete. Each call makes one observation. The chain sees
// the step only through this interface (and hosts.Held, to know without an inventory what is still held).
type Hosts interface {
	// Reserved lists selector keys the inventory owns (they cannot select hosts).
	Reserved() map[string]bool
	// Settled: the request's records hold every requested host, claimed, and nothing to release.
	Settled(req Request, u *unstructured.Unstructured) bool
	// Ensure moves the request's hosts one step on; ready when every requested host is claimed and available.
	// A *framework.PermanentError is a configuration problem that retrying cannot fix.
	Ensure(ctx context.Context, c *framework.Cause, req Request) (hosts.Ensured, error)
	// Release moves the release one step on; done when every host is back in the pool and nothing of
	// ours is left in Metal3.
	Release(ctx context.Context, c *framework.Cause) (hosts.Released, error)
	// GiveBack releases, for a request that ran out of budget waiting for hosts, every host no machine
	// consumes; done when only hosts in use are left (named in the message).
	GiveBack(ctx context.Context, c *framework.Cause) (hosts.Released, error)
	// Related lists the resources whose changes should wake a request (BareMetalHosts).
	Related() []hosts.Related
	// ResourceIDs maps recorded host identities (netbox-<id>) to inventory resource ids; changed: any was.
	ResourceIDs(ids []string) (out []string, changed bool)
	// WakeWith sets how a request waiting for hosts is woken when one it can use comes free.
	WakeWith(wake func(namespace, name string))
	// Forget: the request waits for no host any more (it failed or is being deleted).
	Forget(uid string)
}

// HostsConfig is the host step's configuration: the chain's namespaces and the request's contract
// (resource, failed state, owner annotation, uid index), so the step and the chain agree by construction;
// oCloud is the O-Cloud id the inventory API answers in (inventory.Config.OCloudID), so the resource ids
// the chain records are the ones it answers.
func HostsConfig(cfg Config, oCloud uuid.UUID) hosts.Config {
	return hosts.Config{
		Metal3Namespace: cfg.Metal3Namespace, CredentialsNamespace: cfg.CredentialsNamespace,
		OwnerAnnotation: AnnotationRequestUID, UIDIndex: IndexUID, OCloudID: oCloud, Requeue: cfg.Requeue,
		Faults: cfg.BMCFaults, BMC: cfg.BMCAddresses,
	}
}

// kinds of what the chain reads by name: an answer of another kind is not the object asked for.
var kinds = map[schema.GroupResource]string{
	external.PackageVariantGVR.GroupResource():           external.PackageVariantKind,
	v1alpha1.GVR.GroupResource():                         v1alpha1.Kind,
	external.ClusterGVR("").GroupResource():              external.ClusterKind,
	external.PackageRevisionGVR.GroupResource():          external.PackageRevisionKind,
	external.PackageRevisionResourcesGVR.GroupResource(): external.PackageRevisionResourcesKind,
}

// Handlers holds the chain's dependencies.
type Handlers struct {
	cfg            Config
	clusterVersion string
	clusterGVR     schema.GroupVersionResource
	kube           kube.Client
	hosts          Hosts
	metrics        *Metrics
	porch          porchEvidence
	reporter
}

// New builds the chain. clusterVersion comes from DetectClusterVersion; hosts is nil without an inventory.
func New(cfg Config, clusterVersion string, clients *framework.Clients, hosts Hosts, reg prometheus.Registerer) *Handlers {
	k, m := kube.New(clients.Dynamic, kinds), newMetrics(reg)
	return &Handlers{
		cfg: cfg, clusterVersion: clusterVersion, clusterGVR: external.ClusterGVR(clusterVersion),
		kube: k, hosts: hosts, metrics: m,
		porch: porchEvidence{kube: k, upstreamRepo: cfg.UpstreamRepo, downstreamRepo: cfg.DownstreamRepo,
			clusterNamespace: cfg.ClusterNamespace, clusterVersion: clusterVersion},
		reporter: reporter{creationTimeout: cfg.CreationTimeout, requeue: cfg.Requeue, metrics: m, hosts: hosts},
	}
}

// Register puts the chain on an operator: the ProvisioningRequest watch with its handlers, the index that
// maps Clusters to requests, and the related watches that wake a waiting request within a second of the
// PackageVariant, Cluster or BareMetalHost changing.
func (h *Handlers) Register(op *framework.Operator) *framework.Watch {
	h.metrics.cache, h.metrics.handlers = op.Cache(), h
	w := op.Watch(v1alpha1.GVR, framework.WatchOptions{Finalizer: Finalizer, LabelSelector: h.cfg.Selector})
	w.Index(IndexClusterName, func(u *unstructured.Unstructured) []string {
		cn := v1alpha1.ClusterName(u)
		if cn == "" {
			return nil
		}
		return []string{cn}
	})
	// Resuming: a fulfilled request is looked at again when Porch or CAPI change what they report
	// (rollout.go recheckFulfilled), from the cache.
	w.Related(external.PackageVariantGVR, h.cfg.PackageVariantNamespace,
		framework.AnyOf(framework.ByAnnotation(AnnotationRequestUID, IndexUID), framework.SameName(false)), framework.Resuming())
	w.Related(h.clusterGVR, h.cfg.ClusterNamespace, framework.ByIndexedName(IndexClusterName), framework.Resuming())
	if h.hosts != nil {
		for _, r := range h.hosts.Related() {
			w.Related(r.GVR, r.Namespace, r.Map)
		}
		// A host coming free wakes the request that has waited longest for one it can use.
		h.hosts.WakeWith(w.Wake)
	}
	// The chain reports progress in the request's status and posts an event per state change itself.
	w.OnCreate(HandlerCreate, h.Provision, framework.OwnProgressEvents())
	w.OnResume(HandlerCreate, h.Provision, framework.OwnProgressEvents())
	// Only a spec change is an update (kopf's on.update(field="spec")): GitOps tools' labels and
	// annotations never re-drive a request.
	w.OnUpdate("update_fn", h.Update, framework.Field("spec"), framework.OwnProgressEvents())
	// Deleting a request that holds nothing the garbage collector would not remove needs no finalizer
	// (ownership.go): it is added with the record of what needs releasing, or with the diff-base.
	w.OnDelete(HandlerDelete, h.Release, framework.OwnProgressEvents(), framework.NeededWhen(h.holdsForRelease))
	return w
}
