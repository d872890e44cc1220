package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/handlers"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

const ownerField = "o2ims_request_uid"

// invariant is one property checked at the end, with what was measured.
type invariant struct {
	Name     string
	Measured string
	OK       bool
	Evidence []string
}

func owner(d netboxsim.Device) string {
	s, _ := d.Custom[ownerField].(string)
	return s
}

// checkProvisioned: after the provisioning chaos every request is terminal or still converging, the
// terminal ones ended as their template decides, and NetBox holds exactly the hosts they asked for.
func (h *harness) checkProvisioned(_ context.Context, plan []plannedRequest, states, messages map[string]string) {
	count := map[string]int{}
	var other, unexpected []string
	for _, p := range plan {
		s := states[p.Name]
		count[s]++
		switch s {
		case "fulfilled", "failed", "progressing":
		default:
			other = append(other, fmt.Sprintf("%s is %q: %s", p.Name, s, messages[p.Name]))
		}
		if (s == "failed" && !p.Broken) || (s == "fulfilled" && p.Broken) {
			unexpected = append(unexpected, fmt.Sprintf("%s (template %s) is %s: %s", p.Name, p.template(), s, messages[p.Name]))
		}
	}
	h.rep.Phase1States = count
	h.rep.Invariants = append(h.rep.Invariants, invariant{
		Name: "after provisioning: every request terminal (fulfilled or failed) or converging (progressing)",
		Measured: fmt.Sprintf("%d fulfilled, %d failed, %d converging, %d other",
			count["fulfilled"], count["failed"], count["progressing"], len(other)),
		OK: len(other) == 0, Evidence: other,
	})
	var broken, good int
	for _, p := range plan {
		if p.Broken {
			broken++
		} else {
			good++
		}
	}
	h.rep.Invariants = append(h.rep.Invariants, invariant{
		Name: "after provisioning: a settled request ended as its template decides (good → fulfilled, failing template → failed)",
		Measured: fmt.Sprintf("%d of %d good requests fulfilled, %d of %d failing-template requests failed, %d otherwise",
			countIf(plan, states, false, "fulfilled"), good, countIf(plan, states, true, "failed"), broken, len(unexpected)),
		OK: len(unexpected) == 0, Evidence: unexpected,
	})

	// NetBox holds, for every settled request, exactly the hosts it asked for; nobody else holds any.
	uids := map[string]plannedRequest{}
	for _, p := range plan {
		if p.UID != "" {
			uids[p.UID] = p
		}
	}
	held := map[string]int{}
	var stray []string
	for _, d := range h.st.NetBox.Devices() {
		o := owner(d)
		switch {
		case d.Status == "active" && o != "":
			if _, ours := uids[o]; !ours {
				stray = append(stray, fmt.Sprintf("device %d active for unknown uid %s", d.ID, o))
			}
			held[o]++
		case d.Status == "active":
			stray = append(stray, fmt.Sprintf("device %d active without owner", d.ID))
		case o != "":
			stray = append(stray, fmt.Sprintf("device %d %s with owner %s", d.ID, d.Status, o))
		case d.Status != "staged":
			stray = append(stray, fmt.Sprintf("device %d is %s", d.ID, d.Status))
		}
	}
	asked, total := 0, 0
	for _, p := range plan {
		total += held[p.UID]
		s := states[p.Name]
		if s != "fulfilled" && s != "failed" {
			continue // still converging: its hosts may be on their way
		}
		asked += p.hostCount()
		if held[p.UID] != p.hostCount() {
			stray = append(stray, fmt.Sprintf("%s (%s) asked for %d hosts and holds %d", p.Name, s, p.hostCount(), held[p.UID]))
		}
	}
	h.rep.Invariants = append(h.rep.Invariants, invariant{
		Name:     "after provisioning: NetBox holds exactly the hosts the settled requests asked for, nothing else is held",
		Measured: fmt.Sprintf("%d hosts active for %d asked by settled requests; %d discrepancies", total, asked, len(stray)),
		OK:       len(stray) == 0, Evidence: stray,
	})
}

func countIf(plan []plannedRequest, states map[string]string, broken bool, state string) int {
	n := 0
	for _, p := range plan {
		if p.Broken == broken && states[p.Name] == state {
			n++
		}
	}
	return n
}

// checkReleased: after the deletion chaos no request, PackageVariant, BareMetalHost or BMC Secret is
// left, and every host is back in the pool.
func (h *harness) checkReleased(ctx context.Context, plan []plannedRequest, left map[string]string) {
	var leftList []string
	for name, s := range left {
		leftList = append(leftList, fmt.Sprintf("%s still there (%s)", name, s))
	}
	sort.Strings(leftList)
	h.rep.Invariants = append(h.rep.Invariants, invariant{
		Name:     "every request deleted",
		Measured: fmt.Sprintf("%d of %d requests left", len(left), len(plan)),
		OK:       len(left) == 0, Evidence: leftList,
	})

	dyn := h.st.API.AdminDynamic()
	pvs, err := dyn.Resource(external.PackageVariantGVR).Namespace("default").List(ctx, metav1.ListOptions{})
	var ourPVs []string
	if err != nil {
		ourPVs = append(ourPVs, "listing PackageVariants: "+err.Error())
	} else {
		for _, pv := range pvs.Items {
			if _, ours := pv.GetAnnotations()[handlers.AnnotationRequestUID]; ours {
				ourPVs = append(ourPVs, pv.GetName())
			}
		}
	}
	h.rep.Invariants = append(h.rep.Invariants, invariant{
		Name:     "no PackageVariant with our request-uid annotation left",
		Measured: fmt.Sprintf("%d left", len(ourPVs)),
		OK:       len(ourPVs) == 0, Evidence: ourPVs,
	})

	bmhs, err := dyn.Resource(external.BareMetalHostGVR).Namespace(stack.Metal3Namespace).List(ctx, metav1.ListOptions{})
	var bmhLeft []string
	if err != nil {
		bmhLeft = append(bmhLeft, "listing BareMetalHosts: "+err.Error())
	} else {
		for _, b := range bmhs.Items {
			bmhLeft = append(bmhLeft, b.GetName())
		}
	}
	h.rep.Invariants = append(h.rep.Invariants, invariant{
		Name:     "no BareMetalHost left in metal3",
		Measured: fmt.Sprintf("%d left", len(bmhLeft)),
		OK:       len(bmhLeft) == 0, Evidence: bmhLeft,
	})

	secrets, err := h.st.API.AdminClientset().CoreV1().Secrets(stack.Metal3Namespace).List(ctx, metav1.ListOptions{})
	var secLeft []string
	if err != nil {
		secLeft = append(secLeft, "listing Secrets: "+err.Error())
	} else {
		for _, s := range secrets.Items {
			if strings.HasPrefix(s.Name, "netbox-") && strings.HasSuffix(s.Name, "-bmc-secret") {
				secLeft = append(secLeft, s.Name)
			}
		}
	}
	h.rep.Invariants = append(h.rep.Invariants, invariant{
		Name:     "no BMC Secret (netbox-<id>-bmc-secret) left in metal3",
		Measured: fmt.Sprintf("%d left", len(secLeft)),
		OK:       len(secLeft) == 0, Evidence: secLeft,
	})

	// Nothing in the seeded data triggers a quarantine, so every host must be staged and unowned.
	var notFree []string
	staged := 0
	devs := h.st.NetBox.Devices()
	for _, d := range devs {
		if d.Status == "staged" && owner(d) == "" {
			staged++
			continue
		}
		notFree = append(notFree, fmt.Sprintf("device %d (%s) is %s, owner %q", d.ID, d.Name, d.Status, owner(d)))
	}
	h.rep.Invariants = append(h.rep.Invariants, invariant{
		Name:     "every host back to staged with no owner (no quarantine trigger in the seeded data)",
		Measured: fmt.Sprintf("%d of %d staged and unowned", staged, len(devs)),
		OK:       len(notFree) == 0, Evidence: notFree,
	})
}

type patchKey struct {
	device  int32
	ifMatch string
}

// patchStats walks the simulator's PATCH log (arrival order, which for processed PATCHes is commit
// order) for the two write invariants.
type patchStats struct {
	Total, Committed, Dropped, Abandoned, Precondition, Other int
	Claims, Releases                                          int
	DoubleClaims                                              []string
	// Replays: the same write (device, If-Match and body) sent again after NetBox processed it —
	// committed (answer delivered or lost) or refused. After a lost answer the only safe step is a re-read.
	Replays       []string
	Unconditional []string
	// SamePair counts PATCHes whose (device, If-Match) an earlier PATCH already carried, split by why:
	// another request raced for the same free device with the same fresh read (If-Match lets one win),
	// or the same write went again after an attempt NetBox never processed (abandoned by the client:
	// the ETag was still current, so a re-read returns it).
	SamePair, SamePairRace, SamePairAfterAbandoned int
	// MultiCommit: (device, If-Match) pairs with more than one committed PATCH (If-Match must prevent it).
	MultiCommit []string
}

func bodyKey(b map[string]any) string {
	j, _ := json.Marshal(b) // map keys sorted: a canonical form
	return string(j)
}

func walkPatches(log []netboxsim.PatchRecord) patchStats {
	var ps patchStats
	holder := map[int32]string{}
	pairs := map[patchKey][]int{} // (device, If-Match) → earlier PATCHes carrying it
	commits := map[patchKey]int{}
	for i, p := range log {
		ps.Total++
		k := patchKey{p.DeviceID, p.IfMatch}
		reached := p.Committed || p.Dropped || p.Status != 0
		switch {
		case p.Dropped:
			ps.Dropped++
		case !reached:
			ps.Abandoned++
		case p.Status == http.StatusPreconditionFailed:
			ps.Precondition++
		case !p.Committed:
			ps.Other++
		}
		if p.Committed {
			ps.Committed++
			commits[k]++
			if commits[k] == 2 {
				ps.MultiCommit = append(ps.MultiCommit, fmt.Sprintf("device %d: two PATCHes with If-Match %s committed", p.DeviceID, p.IfMatch))
			}
		}
		if p.IfMatch == "" && reached {
			ps.Unconditional = append(ps.Unconditional, fmt.Sprintf("PATCH #%d to device %d without If-Match", i, p.DeviceID))
		}
		if earlier := pairs[k]; len(earlier) > 0 {
			ps.SamePair++
			replayOf, sameWriter := -1, false
			for _, j := range earlier {
				if bodyKey(log[j].Body) != bodyKey(p.Body) {
					continue // another writer: a request that read the same version of a free device
				}
				sameWriter = true
				if log[j].Committed || log[j].Status == http.StatusPreconditionFailed {
					replayOf = j // NetBox changed the device or refused the version: this ETag is known stale
				}
			}
			switch {
			case replayOf >= 0:
				ps.Replays = append(ps.Replays, fmt.Sprintf("PATCH #%d to device %d re-sent If-Match %s and body %s after PATCH #%d with both (%s)",
					i, p.DeviceID, p.IfMatch, bodyKey(p.Body), replayOf, describe(log[replayOf])))
			case sameWriter:
				ps.SamePairAfterAbandoned++
			default:
				ps.SamePairRace++
			}
		}
		pairs[k] = append(pairs[k], i)
		if !p.Committed {
			continue
		}
		cf, _ := p.Body["custom_fields"].(map[string]any)
		o, has := cf[ownerField]
		if !has {
			continue
		}
		if uid, _ := o.(string); uid != "" {
			ps.Claims++
			if prev := holder[p.DeviceID]; prev != "" && prev != uid {
				ps.DoubleClaims = append(ps.DoubleClaims, fmt.Sprintf("PATCH #%d claimed device %d for %s while %s held it", i, p.DeviceID, uid, prev))
			}
			holder[p.DeviceID] = uid
		} else {
			ps.Releases++
			holder[p.DeviceID] = ""
		}
	}
	return ps
}

func describe(p netboxsim.PatchRecord) string {
	switch {
	case p.Dropped:
		return "committed, answer dropped"
	case p.Committed:
		return "committed"
	default:
		return fmt.Sprintf("answered %d", p.Status)
	}
}
