package handlers

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"k8s.io/client-go/kubernetes"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/framework"
	"github.com/o2ims-operator/o2ims-operator/netbox"
)

// candidateSpread free hosts are listed per empty slot and the slot's candidate drawn among them, within
// one listing page (maxCandidates).
const (
	candidateSpread = 8
	maxCandidates   = 100
)

// InventoryHosts is the NetBox + Metal3 inventory step: select free hosts, record the candidates on the
// request, claim them with conditional writes, register them with Metal3 and wait until they are
// available; on delete, undo it in reverse with checkpoints.
type InventoryHosts struct {
	cfg    Config
	nb     *netbox.Client
	kube   kubernetes.Interface
	k      kube
	gauges hostGauges
	cache  *framework.Cache
}

// NewInventoryHosts builds the step on a NetBox client.
func NewInventoryHosts(cfg Config, nb *netbox.Client, clients *framework.Clients, reg prometheus.Registerer) *InventoryHosts {
	hs := &InventoryHosts{
		cfg: cfg, nb: nb, kube: clients.Kubernetes, k: kube{dyn: clients.Dynamic},
		gauges: newHostGauges(),
	}
	if reg != nil {
		reg.MustRegister(hs)
	}
	return hs
}

// Reserved: the inventory's own fields cannot select hosts.
func (hs *InventoryHosts) Reserved() map[string]bool {
	f := hs.nb.Fields()
	return map[string]bool{f.Managed: true, f.RequestUID: true, f.BMCAddress: true, f.BootMAC: true}
}

// Related wakes a request when one of its BareMetalHosts changes (registering → available).
func (hs *InventoryHosts) Related() []Related {
	return []Related{{GVR: external.BareMetalHostGVR, Namespace: hs.cfg.Metal3Namespace, Map: framework.ByAnnotation(AnnotationRequestUID, IndexUID)}}
}

// SetCache lets the claimed-hosts gauge read the requests' records.
func (hs *InventoryHosts) SetCache(c *framework.Cache) { hs.cache = c }

// Ensure moves every requested host one step on. See the phases in hoststate.go.
func (hs *InventoryHosts) Ensure(ctx context.Context, c *framework.Cause, req Request) (HostsResult, error) {
	recorded, err := readSlots(c.Object)
	if err != nil {
		// Someone else's edit must not block the request; the claims themselves are safe in NetBox.
		c.Logger.Warn("ignoring unreadable host records", zap.Error(err))
		c.Warning(EventFailed, "Ignoring unreadable status.extensions.hosts: "+err.Error())
	}
	slots := plan(req, recorded)
	before := append([]hostSlot(nil), slots...)
	defer func() { writeSlots(c, before, slots) }()
	uid := string(c.Object.GetUID())
	cluster := req.ClusterName

	// Claim the candidates recorded by an earlier pass (the record landed first; now the claim).
	// Hosts the spec no longer asks for go back first, with the checkpoints of a deletion.
	releasing, releaseSoon, err := hs.releaseSlots(ctx, c, slots, func(s hostSlot) bool { return s.Surplus })
	if err != nil {
		return HostsResult{}, err
	}
	slots = slices.DeleteFunc(slots, func(s hostSlot) bool { return s.Surplus && !s.holds() })

	for i := range slots {
		s := &slots[i]
		if s.Surplus || s.Phase != phaseCandidate {
			continue
		}
		if err := hs.claim(ctx, c, s, uid, cluster); err != nil {
			return HostsResult{}, err
		}
	}

	// Choose candidates for the empty slots, role by role: one schema check and one listing each.
	chose, missing := false, map[string]int{}
	for _, h := range req.Hosts {
		var empty []*hostSlot
		for i := range slots {
			if !slots[i].Surplus && slots[i].Role == h.Role && slots[i].ID == "" {
				empty = append(empty, &slots[i])
			}
		}
		if len(empty) == 0 {
			continue
		}
		// Take the candidates at random from a wider choice (the same one page of the listing): requests
		// competing for a pool would otherwise all pick its first free host, and all but one lose it,
		// round after round.
		found, err := hs.nb.FindFreeHosts(ctx, netbox.Selector(h.Selector), idsInUse(slots), max(len(empty), min(len(empty)*candidateSpread, maxCandidates)))
		if err != nil {
			return HostsResult{}, inventoryError(err)
		}
		rand.Shuffle(len(found), func(i, j int) { found[i], found[j] = found[j], found[i] })
		if len(found) > len(empty) {
			found = found[:len(empty)]
		}
		for i, d := range found {
			empty[i].ID, empty[i].Phase = netbox.Identity(d.ID), phaseCandidate
			chose = true
		}
		if len(found) < len(empty) {
			missing[h.Role] = len(empty) - len(found)
		}
	}

	// Register claimed hosts with Metal3 and look at their state.
	var waiting []string
	claimed, available := 0, 0
	for i := range slots {
		s := &slots[i]
		if s.Surplus || s.Phase != phaseClaimed {
			continue
		}
		claimed++
		ready, detail, err := hs.registered(ctx, c, s, cluster)
		if err != nil {
			return HostsResult{}, err
		}
		if ready {
			available++
		} else {
			waiting = append(waiting, s.ID+": "+detail)
		}
	}

	total := 0
	for _, s := range slots {
		if !s.Surplus {
			total++
		}
	}
	if available == total && len(releasing) == 0 {
		// Ready only once the surplus is back in the pool: the request reports exactly what it holds.
		ids := make([]string, 0, total)
		for _, s := range slots {
			ids = append(ids, s.ID)
		}
		return HostsResult{Ready: true, IDs: ids, Message: fmt.Sprintf("%d hosts available", total)}, nil
	}
	var parts []string
	parts = append(parts, fmt.Sprintf("%d of %d hosts claimed", claimed, total))
	if len(releasing) > 0 {
		parts = append(parts, fmt.Sprintf("releasing %d hosts no longer requested: %s", len(releasing), strings.Join(releasing, "; ")))
	}
	if len(missing) > 0 {
		var m []string
		for _, role := range sortedRoles(missing) {
			m = append(m, fmt.Sprintf("%d more for role %s", missing[role], role))
		}
		parts = append(parts, "waiting for free hosts: "+strings.Join(m, ", "))
	}
	if claimed > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d available in Metal3", available, total))
	}
	if len(waiting) > 0 && len(waiting) <= 3 {
		parts = append(parts, strings.Join(waiting, "; "))
	}
	return HostsResult{Message: strings.Join(parts, "; "), Soon: chose || releaseSoon}, nil
}

// claim takes one recorded candidate: read it with its ETag, check it is still free, resolve its BMC
// credentials, quarantine it on a deterministic defect, else claim it conditionally and register it.
func (hs *InventoryHosts) claim(ctx context.Context, c *framework.Cause, s *hostSlot, uid, cluster string) error {
	id, err := netbox.ParseIdentity(s.ID)
	if err != nil {
		*s = hostSlot{Role: s.Role, Index: s.Index}
		return nil
	}
	dev, err := hs.nb.GetDevice(ctx, id)
	if netbox.IsKind(err, netbox.KindNotFound) {
		*s = hostSlot{Role: s.Role, Index: s.Index}
		return nil
	}
	if err != nil {
		return inventoryError(err)
	}
	if dev.Status == netbox.StatusActive && dev.OwnedBy(uid) {
		// Our claim landed though its answer did not: resume it.
		s.Phase = phaseClaimed
		return hs.register(ctx, c, s, dev, cluster, nil)
	}
	// Free, or staged with our uid still on it (an admin's half-reset): ours to take, never forgotten with
	// our uid on it (no other request could ever claim it then).
	if !dev.ClaimableBy(uid) {
		c.Logger.Info("candidate taken by another request; choosing again", zap.String("host", s.ID))
		*s = hostSlot{Role: s.Role, Index: s.Index}
		return nil
	}
	if reason, msg, bad := dev.BMCDataProblem(); bad {
		return hs.setAside(ctx, c, s, dev, uid, reason, msg)
	}
	creds, err := resolveCredentials(ctx, hs.kube, hs.cfg.CredentialsNamespace, id)
	var problem *credentialsProblem
	if errors.As(err, &problem) {
		return hs.setAside(ctx, c, s, dev, uid, problem.reason, problem.message)
	}
	if err != nil {
		return err
	}
	res, err := hs.nb.Claim(ctx, dev, uid)
	if err != nil {
		// A lost answer keeps the candidate: the next pass reads whether the claim landed. Never replayed.
		return inventoryError(err)
	}
	if res == netbox.RaceLost {
		*s = hostSlot{Role: s.Role, Index: s.Index}
		return nil
	}
	s.Phase = phaseClaimed
	c.Normal(EventHostClaimed, fmt.Sprintf("Claimed host %s (role %s)", s.ID, s.Role))
	return hs.register(ctx, c, s, dev, cluster, creds)
}

// setAside takes a candidate with a deterministic defect out of the choice: quarantined when it is free;
// when it still carries our uid (half-reset), our uid is cleared first (a quarantine never touches an
// owned device), so it is free for the next pass to quarantine or for someone to fix.
func (hs *InventoryHosts) setAside(ctx context.Context, c *framework.Cause, s *hostSlot, dev *netbox.Device, uid string,
	reason netbox.QuarantineReason, msg string) error {
	if dev.OwnedBy(uid) {
		if _, err := hs.nb.Release(ctx, dev.ID, uid); err != nil {
			return inventoryError(err)
		}
		c.Logger.Info("half-reset candidate has a defect; our uid cleared, choosing another",
			zap.String("host", s.ID), zap.String("reason", string(reason)))
		*s = hostSlot{Role: s.Role, Index: s.Index}
		return nil
	}
	return hs.quarantine(ctx, c, s, dev, reason, msg)
}

func (hs *InventoryHosts) quarantine(ctx context.Context, c *framework.Cause, s *hostSlot, dev *netbox.Device,
	reason netbox.QuarantineReason, msg string) error {
	switch err := hs.nb.Quarantine(ctx, dev, reason, msg); {
	case err == nil:
		// Only a committed quarantine is announced.
		c.Warning(EventQuarantined, fmt.Sprintf("Quarantined host %s (%s): %s; choosing another", s.ID, reason, msg))
	case netbox.IsKind(err, netbox.KindPrecondition):
		// The device changed since our read (412): whoever changed it decides; not quarantined by us.
		c.Logger.Info("candidate changed before its quarantine; choosing again", zap.String("host", s.ID))
	default:
		return inventoryError(err)
	}
	*s = hostSlot{Role: s.Role, Index: s.Index}
	return nil
}

// register creates the BMC Secret and BareMetalHost of a claimed host; creds are read when not at hand.
func (hs *InventoryHosts) register(ctx context.Context, c *framework.Cause, s *hostSlot, dev *netbox.Device, cluster string, creds *bmcCredentials) error {
	if creds == nil {
		var err error
		if creds, err = resolveCredentials(ctx, hs.kube, hs.cfg.CredentialsNamespace, dev.ID); err != nil {
			return hostStepError(s, err)
		}
	}
	if err := hs.ensureBMCSecret(ctx, c, dev.ID, creds, cluster); err != nil {
		return hostStepError(s, err)
	}
	return hostStepError(s, hs.ensureBareMetalHost(ctx, c, *s, dev, cluster))
}

// registered looks at a claimed host's BareMetalHost (cache), registering it when it is missing.
func (hs *InventoryHosts) registered(ctx context.Context, c *framework.Cause, s *hostSlot, cluster string) (bool, string, error) {
	id, _ := netbox.ParseIdentity(s.ID)
	bmh, found, err := c.Cache.Get(external.BareMetalHostGVR, hs.cfg.Metal3Namespace, bmhName(id))
	if err != nil {
		return false, "", err
	}
	if !found {
		dev, err := hs.nb.GetDevice(ctx, id)
		if err != nil {
			return false, "", inventoryError(err)
		}
		return false, "registering with Metal3", hs.register(ctx, c, s, dev, cluster, nil)
	}
	if !ownedByRequest(bmh, string(c.Object.GetUID())) {
		return false, "", hostStepError(s, &notOursError{"BareMetalHost", hs.cfg.Metal3Namespace + "/" + bmh.GetName()})
	}
	ready, detail := hostReady(bmh)
	return ready, detail, nil
}

// Release undoes the hosts in reverse: our BareMetalHost and BMC Secret first (confirmed gone), a
// checkpoint on the request, then the device back to the pool. Nothing is ever done to a device or an
// object that is not this request's.
func (hs *InventoryHosts) Release(ctx context.Context, c *framework.Cause) (bool, string, bool, error) {
	slots, err := readSlots(c.Object)
	if err != nil {
		return false, "", false, fmt.Errorf("reading host records: %w", err)
	}
	before := append([]hostSlot(nil), slots...)
	defer func() { writeSlots(c, before, slots) }()
	pending, soon, err := hs.releaseSlots(ctx, c, slots, func(hostSlot) bool { return true })
	if err != nil {
		return false, "", false, err
	}
	if len(pending) > 0 {
		return false, strings.Join(pending, "; "), soon, nil
	}
	return true, "", false, nil
}

// releaseSlots moves every selected slot one release step on, from the last slot to the first: our
// Metal3 objects gone (checkpoint phaseMetal3Released, in a pass of its own), then the device back to the
// pool (phaseReleased). pending says what is still under way; soon asks for a prompt next pass.
func (hs *InventoryHosts) releaseSlots(ctx context.Context, c *framework.Cause, slots []hostSlot, selected func(hostSlot) bool) ([]string, bool, error) {
	uid := string(c.Object.GetUID())
	var pending []string
	soon := false
	for i := len(slots) - 1; i >= 0; i-- {
		s := &slots[i]
		if !selected(*s) || !s.holds() {
			continue
		}
		id, err := netbox.ParseIdentity(s.ID)
		if err != nil {
			s.Phase = phaseReleased
			continue
		}
		switch s.Phase {
		case phaseCandidate, phaseClaimed:
			gone, detail, confirm, err := hs.deleteMetal3(ctx, c, id)
			if err != nil {
				return nil, false, err
			}
			if gone {
				// The checkpoint lands before NetBox hears of it, in a pass of its own.
				s.Phase = phaseMetal3Released
				detail = s.ID + ": removed from Metal3"
				confirm = true
			}
			soon = soon || confirm
			pending = append(pending, detail)
		case phaseMetal3Released:
			res, err := hs.nb.Release(ctx, id, uid)
			if err != nil {
				return nil, false, inventoryError(err)
			}
			s.Phase = phaseReleased
			if res == netbox.Released {
				c.Normal(EventHostFreed, fmt.Sprintf("Released host %s back to the pool", s.ID))
			}
		default:
			// An unknown phase (someone's edit) is released from the start: every step is idempotent.
			s.Phase = phaseClaimed
			pending, soon = append(pending, s.ID+": releasing"), true
		}
	}
	return pending, soon, nil
}

func idsInUse(slots []hostSlot) map[int32]bool {
	out := map[int32]bool{}
	for _, s := range slots {
		if id, err := netbox.ParseIdentity(s.ID); err == nil {
			out[id] = true
		}
	}
	return out
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

// hostStepError makes a Metal3 object we must not adopt a permanent failure naming the host.
func hostStepError(s *hostSlot, err error) error {
	var notOurs *notOursError
	if errors.As(err, &notOurs) {
		return &framework.PermanentError{Message: fmt.Sprintf("host %s: %s", s.ID, notOurs.Error())}
	}
	return err
}
