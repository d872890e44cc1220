// Package hosts is the chain's host step on NetBox and Metal3: choose free hosts and record them on the
// request (slots.go), claim them with conditional writes (claim.go) after resolving their BMC credentials
// (credentials.go), quarantine a host with a deterministic defect (quarantine.go), register the claimed
// ones with Metal3 and wait until they are available (metal3.go); on delete, or when the spec asks for
// fewer, undo it in reverse with checkpoints (release.go). gauges.go counts the claimed hosts.
// allocator.go chooses free hosts from the inventory view (Pool), first come first served; consumer.go
// keeps a host a machine consumes from being released; outage.go turns NetBox being unusable into a
// wait that names it, never an error.
//
// The chain (package handlers) sees this package through its Hosts interface; Step is built with
// everything it needs by New. Like the chain, it only fills the pass's patch and events.
package hosts

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/api/spec"
	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/framework"
	"github.com/o2ims-operator/o2ims-operator/handlers/kube"
	"github.com/o2ims-operator/o2ims-operator/internal/ocloud"
	"github.com/o2ims-operator/o2ims-operator/netbox"
)

// Config is what the host step needs of the chain's configuration and of the request's contract; the
// chain fills it (handlers.HostsConfig), so both agree by construction.
type Config struct {
	// Metal3Namespace holds BareMetalHosts and BMC Secrets; CredentialsNamespace the labelled BMC
	// credentials Secrets.
	Metal3Namespace, CredentialsNamespace string
	// OwnerAnnotation carries the request's uid on every object made for it; UIDIndex is the cache's index
	// of requests by uid (a BareMetalHost's change wakes its request through both).
	OwnerAnnotation, UIDIndex string
	// OCloudID is the O-Cloud whose inventory resource ids the request records
	// (oCloudInfrastructureResourceIds): OCLOUD_ID, or derived from NETBOX_URL (internal/ocloud), the
	// same the inventory API answers.
	OCloudID uuid.UUID
	// Requeue is the chain's safety-net interval (REQUEUE_INTERVAL): a waiting request asks again at
	// least this often, so the allocator forgets one silent for a few of them.
	Requeue time.Duration
	// Faults is when a BMC fault quarantines a host (bmcfault.go); BMC where credentials may be sent
	// (bmcpolicy.go).
	Faults FaultPolicy
	BMC    AddressPolicy
}

// Event reasons of the host step. Created, Deleted and Failed are the words the chain uses for any object.
const (
	EventHostClaimed = "HostClaimed"
	EventHostFreed   = "HostReleased"
	EventQuarantined = "HostQuarantined"
	eventCreated     = "Created"
	eventDeleted     = "Deleted"
	eventFailed      = "Failed"
)

// Step is the chain's host step on NetBox and Metal3: it claims, registers and releases the hosts a
// request records. (The inventory is NetBox; inventory is the O-Cloud model, the view of it the inventory API serves.)
type Step struct {
	cfg    Config
	nb     *netbox.Client
	core   kubernetes.Interface // Secrets: live, never cached
	api    kube.Client          // BareMetalHosts
	cache  *framework.Cache     // the requests
	gauges *gauges              // counted at scrape time (gauges.go)
	alloc  *Allocator           // nil without a pool: hosts are found by listing NetBox
	guard  faultGuard           // BMC-fault quarantines within the burst window (this process's, and NetBox's)
	// consumers tell which hosts a machine consumes (consumer.go).
	consumers consumers
	metal3    metal3     // our Metal3 objects of a host (metal3.go)
	faults    faultJudge // whether a BMC fault quarantines a host now (bmcfault.go)
}

// New builds the step on a NetBox client, the pool's view hosts are chosen from (nil: they are found by
// listing NetBox) and the operator's clients and cache, and registers its gauges on reg (when not nil).
func New(cfg Config, nb *netbox.Client, pool Pool, clients *framework.Clients, cache *framework.Cache, reg prometheus.Registerer) *Step {
	st := &Step{
		cfg: cfg, nb: nb, core: clients.Kubernetes, cache: cache, gauges: newGauges(cache),
		api: kube.New(clients.Dynamic, map[schema.GroupResource]string{external.BareMetalHostGVR.GroupResource(): external.BareMetalHostKind,
			external.Metal3MachineGVR("").GroupResource(): external.Metal3MachineKind}),
	}
	st.consumers = consumers{namespace: cfg.Metal3Namespace, api: st.api}
	st.faults = faultJudge{policy: cfg.Faults, namespace: cfg.Metal3Namespace, guard: &st.guard}
	st.metal3 = metal3{cfg: cfg, core: st.core, api: st.api, consumers: st.consumers}
	if pool != nil {
		st.alloc = NewAllocator(pool, clock.RealClock{}, max(3*cfg.Requeue, time.Minute))
		st.alloc.AliveWith(st.requestAlive)
		st.guard.pool = pool
	}
	if reg != nil {
		reg.MustRegister(st.gauges)
	}
	return st
}

// Ensured is one observation of the host step.
type Ensured struct {
	// Ready: every requested host is claimed and available, and nothing is left to release.
	Ready   bool
	Message string
	// IDs are the claimed hosts' inventory resource ids (ResourceIDs), the request's
	// oCloudInfrastructureResourceIds; status.extensions.hosts keeps their identities (netbox-<id>).
	IDs []string
	// Soon asks for the next pass right after this one's writes land (candidates were just recorded and
	// are claimed next, or a release checkpoint was recorded).
	Soon bool
}

// Related is a resource to watch on behalf of requests.
type Related struct {
	GVR       schema.GroupVersionResource
	Namespace string
	Map       framework.MapFunc
}

// requestAlive: the request of uid is cached and not being deleted (a cache that cannot answer says yes:
// the allocator's ttl still ends a silent waiter).
func (st *Step) requestAlive(uid string) bool {
	objs, err := st.cache.ByIndex(v1alpha1.GVR, st.cfg.UIDIndex, uid)
	return err != nil || (len(objs) > 0 && objs[0].GetDeletionTimestamp() == nil)
}

// WakeWith sets how a request waiting for hosts is woken (the chain's watch).
func (st *Step) WakeWith(wake func(namespace, name string)) {
	if st.alloc != nil {
		st.alloc.WakeWith(wake)
	}
}

// Forget: the request waits for no host any more.
func (st *Step) Forget(uid string) {
	if st.alloc != nil {
		st.alloc.Forget(uid)
	}
}

// Reserved: the inventory's own fields cannot select hosts.
func (st *Step) Reserved() map[string]bool {
	f := st.nb.Schema.Fields()
	return map[string]bool{f.Managed: true, f.RequestUID: true, f.BMCAddress: true, f.BootMAC: true}
}

// Related wakes a request when one of its BareMetalHosts changes (registering → available).
func (st *Step) Related() []Related {
	return []Related{{GVR: external.BareMetalHostGVR, Namespace: st.cfg.Metal3Namespace,
		Map: framework.ByAnnotation(st.cfg.OwnerAnnotation, st.cfg.UIDIndex)}}
}

// Settled: the request's records already hold a claimed host for every requested position and no surplus,
// so a pass would claim, choose and release nothing.
func (st *Step) Settled(req spec.Request, u *unstructured.Unstructured) bool {
	recorded, _ := ReadSlots(u)
	return settled(req, recorded)
}

// Ensure moves every requested host one step on: hosts no longer requested go back first, then the
// recorded candidates are claimed, empty positions get candidates, and claimed hosts are registered with
// Metal3. The records change only in the pass's status patch (see the phases in slots.go). NetBox being
// unusable is a wait naming why (outage.go), not an error.
func (st *Step) Ensure(ctx context.Context, c *framework.Cause, req spec.Request) (Ensured, error) {
	res, err := st.ensure(ctx, c, req)
	if msg, ok := st.netboxWait(err); ok {
		return Ensured{Message: msg}, nil
	}
	res.IDs, _ = st.ResourceIDs(res.IDs)
	return res, err
}

// ResourceIDs maps host identities (netbox-<id>, the form requests recorded before the ids were the
// inventory's) to the inventory resource ids of the O-Cloud, computed as the inventory API computes them
// (internal/ocloud), never looked up; other ids pass unchanged. changed: at least one was mapped.
func (st *Step) ResourceIDs(ids []string) (out []string, changed bool) {
	if ids == nil {
		return nil, false
	}
	out = make([]string, len(ids))
	for i, id := range ids {
		out[i] = id
		if n, err := netbox.ParseIdentity(id); err == nil {
			out[i], changed = ocloud.ResourceID(st.cfg.OCloudID, n), true
		}
	}
	return out, changed
}

func (st *Step) ensure(ctx context.Context, c *framework.Cause, req spec.Request) (Ensured, error) {
	recorded, err := ReadSlots(c.Object)
	if err != nil {
		// Someone else's edit must not block the request; the claims themselves are safe in NetBox.
		c.Logger.Warn("ignoring unreadable host records", zap.Error(err))
		c.Warning(eventFailed, "Ignoring unreadable status.extensions.hosts: "+err.Error())
	}
	slots := plan(req, recorded)
	before := slices.Clone(slots)
	defer func() { writeSlots(c, before, slots) }()

	// Hosts the spec no longer asks for go back first, with the checkpoints of a deletion; of a role's
	// hosts, those no machine consumes before those in use.
	st.consumers.preferUnconsumed(c, slots)
	releasing, err := st.releaseSlots(ctx, c, slots, func(s Slot) bool { return s.Surplus })
	if err != nil {
		return Ensured{}, err
	}
	slots = slices.DeleteFunc(slots, func(s Slot) bool { return s.Surplus && !s.holds() })

	held, err := st.claimCandidates(ctx, c, slots, req.ClusterName)
	if err != nil {
		return Ensured{}, err
	}
	chosen, err := st.choose(ctx, c, req, slots)
	if err != nil {
		return Ensured{}, err
	}
	reg, err := st.registerClaimed(ctx, c, slots, req.ClusterName)
	if err != nil {
		return Ensured{}, err
	}
	if reg.held == "" {
		reg.held = held
	}
	return summarise(slots, releasing, chosen, reg), nil
}

// summarise reports one pass: ready only once the surplus is back in the pool (the request reports
// exactly what it holds), else what it waits for.
func summarise(slots []Slot, releasing releaseProgress, chosen choice, reg registration) Ensured {
	total := 0
	for _, s := range slots {
		if !s.Surplus {
			total++
		}
	}
	if reg.available == total && len(releasing.pending) == 0 && len(releasing.quarantining) == 0 && len(reg.refused) == 0 {
		ids := make([]string, 0, total)
		for _, s := range slots {
			ids = append(ids, s.ID)
		}
		return Ensured{Ready: true, IDs: ids, Message: fmt.Sprintf("%d hosts available", total)}
	}
	var parts []string
	parts = append(parts, fmt.Sprintf("%d of %d hosts claimed", reg.claimed, total))
	if n := len(releasing.pending); n > 0 {
		parts = append(parts, fmt.Sprintf("releasing %d hosts no longer requested: %s", n, strings.Join(releasing.pending, "; ")))
	}
	if reg.held != "" {
		parts = append(parts, reg.held)
	}
	if q := append(reg.refused, releasing.quarantining...); len(q) > 0 {
		parts = append(parts, fmt.Sprintf("quarantining %d hosts and choosing others: %s", len(q), strings.Join(q, "; ")))
	}
	if len(chosen.missing) > 0 {
		var m []string
		for _, role := range sortedRoles(chosen.missing) {
			m = append(m, fmt.Sprintf("%d more for role %s", chosen.missing[role], role))
		}
		parts = append(parts, v1alpha1.WaitingForFreeHosts+": "+strings.Join(m, ", ")+", since "+chosen.since.UTC().Format(time.RFC3339))
	}
	if reg.claimed > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d available in Metal3", reg.available, total))
	}
	if len(reg.waiting) > 0 && len(reg.waiting) <= 3 {
		parts = append(parts, strings.Join(reg.waiting, "; "))
	}
	return Ensured{Message: strings.Join(parts, "; "), Soon: chosen.any || releasing.soon || len(reg.refused) > 0}
}

func sortedRoles(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// inventoryError turns a NetBox configuration problem into a permanent failure (retrying cannot fix it)
// and leaves everything else retryable.
func inventoryError(err error) error {
	var nbErr *netbox.Error
	if errors.As(err, &nbErr) {
		switch nbErr.Kind {
		case netbox.KindConfig, netbox.KindSchema, netbox.KindUnsupported:
			return &framework.PermanentError{Message: nbErr.Error()}
		}
	}
	return err
}
