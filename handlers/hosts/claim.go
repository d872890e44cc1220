package hosts

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"go.uber.org/zap"

	"github.com/o2ims-operator/o2ims-operator/api/spec"
	"github.com/o2ims-operator/o2ims-operator/framework"
	"github.com/o2ims-operator/o2ims-operator/netbox"
)

// candidateSpread free hosts are listed per empty slot and the slot's candidate drawn among them, within
// one listing page (maxCandidates): only without the pool's view or before its first full listing
// (listed).
const (
	candidateSpread = 8
	maxCandidates   = 100
)

// choice is what one pass chose: whether any candidate was recorded (it is claimed in the next pass, as
// soon as the record is visible), how many hosts each role still lacks, and since when the earliest
// position of those has waited.
type choice struct {
	any     bool
	missing map[string]int
	since   time.Time
}

// choose picks candidates for the empty slots, role by role, from the pool's view (allocator.go); the
// candidates are only recorded here, the record lands before the claim (claimCandidates, next pass).
// Positions left empty record since when they wait.
func (st *Step) choose(ctx context.Context, c *framework.Cause, req spec.Request, slots []Slot) (choice, error) {
	out := choice{missing: map[string]int{}}
	waiting := map[string]bool{}
	for _, h := range req.Hosts {
		var empty []*Slot
		for i := range slots {
			if !slots[i].Surplus && slots[i].Role == h.Role && slots[i].ID == "" {
				empty = append(empty, &slots[i])
			}
		}
		if len(empty) == 0 {
			continue
		}
		found, since, err := st.candidates(ctx, c, h, slots, empty)
		if err != nil {
			return choice{}, err
		}
		for i, id := range found {
			empty[i].ID, empty[i].Phase = netbox.Identity(id), PhaseCandidate
			out.any = true
		}
		if len(found) == len(empty) {
			continue
		}
		out.missing[h.Role], waiting[h.Role] = len(empty)-len(found), true
		for _, s := range empty[len(found):] {
			s.WaitingSince = since.UTC().Format(time.RFC3339)
		}
		if out.since.IsZero() || since.Before(out.since) {
			out.since = since
		}
	}
	if st.alloc != nil {
		st.alloc.Keep(string(c.Object.GetUID()), waiting)
	}
	return out, nil
}

// candidates answers hosts for the empty positions of one role, and since when the role waits for the
// rest. From the view: no NetBox call while the role waits (its selector was checked against NetBox's
// schema when it began to). Before the view's first full listing (a moment at start; for good if the
// inventory cannot list NetBox), by listing NetBox as before.
func (st *Step) candidates(ctx context.Context, c *framework.Cause, h spec.HostRequest, slots []Slot, empty []*Slot) ([]int32, time.Time, error) {
	since := waitingSince(empty, c.Now)
	if st.alloc == nil || !st.alloc.Synced() {
		ids, err := st.listed(ctx, h, slots, len(empty))
		return ids, since, err
	}
	uid := string(c.Object.GetUID())
	match, err := st.nb.Search.Matcher(ctx, netbox.Selector(h.Selector), !st.alloc.Waiting(uid, h.Role))
	if err != nil {
		return nil, time.Time{}, inventoryError(err)
	}
	recorded := time.Time{}
	if since.Before(c.Now) {
		recorded = since
	}
	ids, waitingFrom := st.alloc.Take(Want{UID: uid, Namespace: c.Object.GetNamespace(), Name: c.Object.GetName(),
		Role: h.Role, Match: match, Selector: fmt.Sprint(h.Selector), N: len(empty), Skip: idsInUse(slots), Since: recorded})
	if !waitingFrom.IsZero() {
		since = waitingFrom
	}
	return ids, since, nil
}

// waitingSince is the earliest time recorded on the positions, else now.
func waitingSince(empty []*Slot, now time.Time) time.Time {
	out := now
	for _, s := range empty {
		if t, err := time.Parse(time.RFC3339, s.WaitingSince); err == nil && t.Before(out) {
			out = t
		}
	}
	return out
}

// listed finds up to n free hosts by listing NetBox. The candidates are drawn at random from a wider
// choice (the same one page of the listing): requests competing for a pool would otherwise all pick its
// first free host, and all but one lose it, round after round.
func (st *Step) listed(ctx context.Context, h spec.HostRequest, slots []Slot, n int) ([]int32, error) {
	found, err := st.nb.Search.FindFreeHosts(ctx, netbox.Selector(h.Selector), idsInUse(slots), max(n, min(n*candidateSpread, maxCandidates)))
	if err != nil {
		return nil, inventoryError(err)
	}
	rand.Shuffle(len(found), func(i, j int) { found[i], found[j] = found[j], found[i] })
	ids := make([]int32, 0, n)
	for _, d := range found[:min(n, len(found))] {
		ids = append(ids, d.ID)
	}
	return ids, nil
}

func idsInUse(slots []Slot) map[int32]bool {
	out := map[int32]bool{}
	for _, s := range slots {
		if id, err := netbox.ParseIdentity(s.ID); err == nil {
			out[id] = true
		}
	}
	return out
}

// claimCandidates claims the candidates recorded by an earlier pass (the record landed first; now the
// claim); held says why a candidate the BMC address policy refuses is kept unquarantined (bmcfault.go).
func (st *Step) claimCandidates(ctx context.Context, c *framework.Cause, slots []Slot, cluster string) (held string, err error) {
	uid := string(c.Object.GetUID())
	for i := range slots {
		s := &slots[i]
		if s.Surplus || s.Phase != PhaseCandidate {
			continue
		}
		h, err := st.claim(ctx, c, s, uid, cluster)
		if err != nil {
			return "", err
		}
		if h != "" {
			held = h
		}
	}
	return held, nil
}

// claim takes one recorded candidate: read it with its ETag, check it is still free, resolve its BMC
// credentials, quarantine it on a deterministic defect or a BMC address the policy refuses, else claim it
// conditionally and register it.
func (st *Step) claim(ctx context.Context, c *framework.Cause, s *Slot, uid, cluster string) (string, error) {
	id, err := netbox.ParseIdentity(s.ID)
	if err != nil {
		s.forget()
		return "", nil
	}
	dev, err := st.nb.Claims.GetDevice(ctx, id)
	if netbox.IsKind(err, netbox.KindNotFound) {
		s.forget()
		return "", nil
	}
	if err != nil {
		return "", inventoryError(err)
	}
	if dev.Status == netbox.StatusActive && dev.OwnedBy(uid) {
		// Our claim landed though its answer did not: resume it.
		s.claimed()
		return "", st.metal3.register(ctx, c, s, dev, cluster, nil)
	}
	// Free, or staged with our uid still on it (an admin's half-reset): ours to take, never forgotten with
	// our uid on it (no other request could ever claim it then).
	if !dev.ClaimableBy(uid) {
		c.Logger.Info("candidate taken by another request; choosing again", zap.String("host", s.ID))
		s.forget()
		return "", nil
	}
	if reason, msg, bad := dev.BMCDataProblem(); bad {
		return "", st.setAside(ctx, c, s, dev, uid, defect{reason, msg})
	}
	if why := st.cfg.BMC.refusal(dev.BMCAddress); why != "" {
		return st.refuseAddress(ctx, c, s, dev, uid, why)
	}
	creds, err := resolveCredentials(ctx, st.core, st.cfg.CredentialsNamespace, id)
	var problem *credentialsProblem
	if errors.As(err, &problem) {
		return st.setAsideGuarded(ctx, c, s, dev, uid, defect{problem.reason, problem.message})
	}
	if err != nil {
		return "", err
	}
	res, err := st.nb.Claims.Claim(ctx, dev, uid)
	if err != nil {
		// A lost answer keeps the candidate: the next pass reads whether the claim landed. Never replayed.
		return "", inventoryError(err)
	}
	if res == netbox.RaceLost {
		s.forget()
		return "", nil
	}
	s.claimed()
	c.Normal(EventHostClaimed, fmt.Sprintf("Claimed host %s (role %s)", s.ID, s.Role))
	return "", st.metal3.register(ctx, c, s, dev, cluster, creds)
}
