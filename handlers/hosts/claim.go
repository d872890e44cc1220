package hosts

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"go.uber.org/zap"

	"github.com/o2ims-operator/o2ims-operator/framework"
	"github.com/o2ims-operator/o2ims-operator/handlers/spec"
	"github.com/o2ims-operator/o2ims-operator/netbox"
)

// candidateSpread free hosts are listed per empty slot and the slot's candidate drawn among them, within
// one listing page (maxCandidates).
const (
	candidateSpread = 8
	maxCandidates   = 100
)

// choice is what one pass chose: whether any candidate was recorded (it is claimed in the next pass, as
// soon as the record is visible), and how many hosts each role still lacks.
type choice struct {
	any     bool
	missing map[string]int
}

// choose picks candidates for the empty slots, role by role: one schema check and one listing each. The
// candidates are only recorded here; the record lands before the claim (claimCandidates, next pass).
func (st *Step) choose(ctx context.Context, req spec.Request, slots []Slot) (choice, error) {
	out := choice{missing: map[string]int{}}
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
		// Take the candidates at random from a wider choice (the same one page of the listing): requests
		// competing for a pool would otherwise all pick its first free host, and all but one lose it,
		// round after round.
		found, err := st.nb.FindFreeHosts(ctx, netbox.Selector(h.Selector), idsInUse(slots), max(len(empty), min(len(empty)*candidateSpread, maxCandidates)))
		if err != nil {
			return choice{}, inventoryError(err)
		}
		rand.Shuffle(len(found), func(i, j int) { found[i], found[j] = found[j], found[i] })
		if len(found) > len(empty) {
			found = found[:len(empty)]
		}
		for i, d := range found {
			empty[i].ID, empty[i].Phase = netbox.Identity(d.ID), PhaseCandidate
			out.any = true
		}
		if len(found) < len(empty) {
			out.missing[h.Role] = len(empty) - len(found)
		}
	}
	return out, nil
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

// claimCandidates claims the candidates recorded by an earlier pass (the record landed first; now the claim).
func (st *Step) claimCandidates(ctx context.Context, c *framework.Cause, slots []Slot, cluster string) error {
	uid := string(c.Object.GetUID())
	for i := range slots {
		s := &slots[i]
		if s.Surplus || s.Phase != PhaseCandidate {
			continue
		}
		if err := st.claim(ctx, c, s, uid, cluster); err != nil {
			return err
		}
	}
	return nil
}

// claim takes one recorded candidate: read it with its ETag, check it is still free, resolve its BMC
// credentials, quarantine it on a deterministic defect, else claim it conditionally and register it.
func (st *Step) claim(ctx context.Context, c *framework.Cause, s *Slot, uid, cluster string) error {
	id, err := netbox.ParseIdentity(s.ID)
	if err != nil {
		s.forget()
		return nil
	}
	dev, err := st.nb.GetDevice(ctx, id)
	if netbox.IsKind(err, netbox.KindNotFound) {
		s.forget()
		return nil
	}
	if err != nil {
		return inventoryError(err)
	}
	if dev.Status == netbox.StatusActive && dev.OwnedBy(uid) {
		// Our claim landed though its answer did not: resume it.
		s.Phase = PhaseClaimed
		return st.register(ctx, c, s, dev, cluster, nil)
	}
	// Free, or staged with our uid still on it (an admin's half-reset): ours to take, never forgotten with
	// our uid on it (no other request could ever claim it then).
	if !dev.ClaimableBy(uid) {
		c.Logger.Info("candidate taken by another request; choosing again", zap.String("host", s.ID))
		s.forget()
		return nil
	}
	if reason, msg, bad := dev.BMCDataProblem(); bad {
		return st.setAside(ctx, c, s, dev, uid, defect{reason, msg})
	}
	creds, err := resolveCredentials(ctx, st.core, st.cfg.CredentialsNamespace, id)
	var problem *credentialsProblem
	if errors.As(err, &problem) {
		return st.setAside(ctx, c, s, dev, uid, defect{problem.reason, problem.message})
	}
	if err != nil {
		return err
	}
	res, err := st.nb.Claim(ctx, dev, uid)
	if err != nil {
		// A lost answer keeps the candidate: the next pass reads whether the claim landed. Never replayed.
		return inventoryError(err)
	}
	if res == netbox.RaceLost {
		s.forget()
		return nil
	}
	s.Phase = PhaseClaimed
	c.Normal(EventHostClaimed, fmt.Sprintf("Claimed host %s (role %s)", s.ID, s.Role))
	return st.register(ctx, c, s, dev, cluster, creds)
}
