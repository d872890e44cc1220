package chaos

import (
	"flag"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

type namedDuration struct {
	Name string
	D    time.Duration
}

type killRecord struct {
	Phase, Aim     string
	At, Down       time.Duration
	NetBoxInFlight int
	Busy           int // requests not settled (phase 1) or not yet gone (phase 2) at the kill; -1 unknown
}

type apiRestart struct{ At, Down, Total time.Duration }

// report is what a run measured; markdown renders it for docs/chaos.md.
type report struct {
	Seed          int64
	Started       time.Time
	Plan          []plannedRequest
	Durations     []namedDuration
	Total         time.Duration
	Kills         []killRecord
	APIRestarts   []apiRestart
	Starts        int
	StartFailures []string
	SimCalls      map[string]int
	SelfExits     []string
	Phase1Faults  map[string]int
	Faults        map[string]int
	FaultDetail   []string
	Answers       map[string]routeCount
	Phase1States  map[string]int
	Patches       patchStats
	Invariants    []invariant
	Timeline      []string
}

func newReport(seed int64) *report { return &report{Seed: seed, Started: time.Now()} }

// fill adds the invariants read from the simulator's PATCH log.
func (r *report) fill(log []netboxsim.PatchRecord, c *answerCounter) {
	c.fillAbandonedBodies(log)
	r.Patches = walkPatches(log)
	ps := r.Patches
	r.Invariants = append(r.Invariants, invariant{
		Name: "no host ever claimed twice (no committed claim onto a device another request uid held)",
		Measured: fmt.Sprintf("%d double claims in %d committed claims and %d committed releases",
			len(ps.DoubleClaims), ps.Claims, ps.Releases),
		OK: len(ps.DoubleClaims) == 0, Evidence: ps.DoubleClaims,
	})
	r.Invariants = append(r.Invariants, invariant{
		Name: "PATCH never replayed (no write re-sent with an If-Match NetBox already committed or refused) and never unconditional",
		Measured: fmt.Sprintf("%d replays, %d without If-Match, %d If-Match values committed twice, in %d PATCHes (%d committed of which %d answers dropped, %d refused 412, %d abandoned before NetBox processed them). %d PATCHes repeated a (device, If-Match) pair: %d from another request racing for the same free device, %d the same write after an attempt NetBox never processed",
			len(ps.Replays), len(ps.Unconditional), len(ps.MultiCommit), ps.Total, ps.Committed, ps.Dropped, ps.Precondition, ps.Abandoned,
			ps.SamePair, ps.SamePairRace, ps.SamePairAfterAbandoned),
		OK:       len(ps.Replays) == 0 && len(ps.Unconditional) == 0 && len(ps.MultiCommit) == 0,
		Evidence: append(append(append([]string(nil), ps.Replays...), ps.Unconditional...), ps.MultiCommit...),
	})
}

// command reconstructs how this run was started (make chaos runs
// go test -count=1 -timeout 20m -run . ./tests/chaos/ -args -operator=… -report=…).
func command() string {
	root, _ := kubeapi.RepoRoot()
	rel := func(p string) string {
		if r, err := filepath.Rel(root, p); err == nil && !strings.HasPrefix(r, "..") {
			return r
		}
		return p
	}
	parts := []string{"go test -count=1"}
	if f := flag.Lookup("test.timeout"); f != nil && f.Value.String() != "0s" {
		parts = append(parts, "-timeout "+f.Value.String())
	}
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() != "" {
		parts = append(parts, "-run '"+f.Value.String()+"'")
	}
	parts = append(parts, "./tests/chaos/")
	var args []string
	if *operatorFlag != "" {
		args = append(args, "-operator="+rel(binary))
	}
	if *seedFlag != 0 {
		args = append(args, fmt.Sprintf("-seed=%d", *seedFlag))
	}
	if *reportFlag != "" {
		abs, _ := filepath.Abs(*reportFlag)
		args = append(args, "-report="+rel(abs))
	}
	if len(args) > 0 {
		parts = append(parts, "-args")
		parts = append(parts, args...)
	}
	return strings.Join(parts, " ")
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

func (r *report) markdown() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	okCount := 0
	for _, inv := range r.Invariants {
		if inv.OK {
			okCount++
		}
	}
	w("# Chaos run")
	w("")
	w("Written by `make chaos` (`tests/chaos`): the operator binary, as the shipped ServiceAccount, against a real")
	w("kube-apiserver + etcd, the NetBox simulator and the simulated Porch/CAPI/Metal3, killed with SIGKILL while")
	w("requests are claimed, provisioned and released, with a kube-apiserver restart and NetBox failing at random.")
	w("Only eventual convergence and the invariants are checked, never speed.")
	w("")
	w("**Result: %d of %d invariants hold.**", okCount, len(r.Invariants))
	w("")
	w("| | |")
	w("|---|---|")
	w("| machine | %s |", stack.DescribeMachine())
	w("| date | %s |", r.Started.UTC().Format("2006-01-02 15:04 MST"))
	w("| command | `%s` |", command())
	w("| seed | %d (repeat the random choices: `go test -count=1 -run . ./tests/chaos/ -args -seed=%d`) |", r.Seed, r.Seed)
	w("| total | %s |", secs(r.Total))
	w("")

	w("## Load")
	w("")
	hosts, none, broken := 0, 0, 0
	for _, p := range r.Plan {
		hosts += p.hostCount()
		if p.hostCount() == 0 {
			none++
		}
		if p.Broken {
			broken++
		}
	}
	nbi := 0
	for _, p := range r.Plan {
		if p.ViaNBI {
			nbi++
		}
	}
	w("%d NetBox hosts (every third with 32 cores). %d ProvisioningRequests (%d through the NBI, %d with the admin", poolHosts, len(r.Plan), nbi, len(r.Plan)-nbi)
	w("client), arriving over %s: %d with 1–2 hosts (%d hosts in all), %d without hosts; %d of them use a template", createWindow, len(r.Plan)-none, hosts, none, broken)
	w("whose Cluster fails (they must end `failed`, holding their hosts until deleted). World delays: render")
	w("0.4 s, provision 0.8 s, Metal3 register/inspect 0.3 s each, Porch/BMO finalizers 0.3 s. Operator environment:")
	w("`NETBOX_TIMEOUT=%d`, `REQUEUE_INTERVAL=2`.", int(netboxTimeout/time.Second))
	w("")

	w("## Injected")
	w("")
	kills := map[string]int{}
	for _, k := range r.Kills {
		kills[k.Phase]++
	}
	w("| what | count |")
	w("|---|---|")
	w("| operator SIGKILL + restart while provisioning | %d |", kills[phaseProvisioning])
	w("| operator SIGKILL + restart while releasing | %d |", kills[phaseReleasing])
	w("| operator starts (first included) / starts refused and retried | %d / %d |", r.Starts, len(r.StartFailures))
	w("| kube-apiserver stop + start (etcd kept) | %d |", len(r.APIRestarts))
	for _, k := range faultKinds {
		w("| NetBox fault armed: %s (provisioning + releasing) | %d + %d |", k, r.Phase1Faults[k], r.Faults[k]-r.Phase1Faults[k])
	}
	w("")
	w("*Armed* is what the injector set up; a queued 5xx that no call met is cleared when the chaos ends. What")
	w("the operator actually met is in the table by route further down.")
	w("")
	w("Kills (time since the operator first started; aimed at a random moment or just after a NetBox PATCH")
	w("arrived, to land between a write and its answer or record; NetBox calls in flight at the SIGKILL; requests")
	w("not yet settled, or not yet gone while releasing; how long the operator stayed down):")
	w("")
	for i, k := range r.Kills {
		w("%d. %s at %s, %s — %d NetBox calls in flight, %d requests busy, down %s", i+1, k.Phase, secs(k.At), k.Aim, k.NetBoxInFlight, k.Busy, k.Down.Round(time.Millisecond))
	}
	for _, a := range r.APIRestarts {
		w("- kube-apiserver stopped at %s for %s, serving again %s later", secs(a.At), secs(a.Down), secs(a.Total))
	}
	for _, f := range r.StartFailures {
		w("- a start refused (the operator exits when its startup check of NetBox fails; started again): `%s`", f)
	}
	w("")
	w("What the operator got from NetBox (counted between it and the simulator):")
	w("")
	w("| route | calls (simulator `Calls`) | ok | 4xx | 5xx | no answer (timed out / killed) | connection closed after commit |")
	w("|---|---|---|---|---|---|---|")
	var routes []string
	for k := range r.Answers {
		routes = append(routes, k)
	}
	sort.Strings(routes)
	for _, k := range routes {
		c := r.Answers[k]
		w("| %s | %d (%d) | %d | %d | %d | %d | %d |", k, c.Total, r.SimCalls[k], c.OK, c.Client4xx, c.Server5xx, c.Abandoned, c.Dropped)
	}
	w("")
	w("Simulator PATCH log: %d PATCHes, %d committed (%d with the answer dropped), %d refused with 412, %d refused otherwise, %d abandoned",
		r.Patches.Total, r.Patches.Committed, r.Patches.Dropped, r.Patches.Precondition, r.Patches.Other, r.Patches.Abandoned)
	w("by the client before NetBox processed them; %d committed claims, %d committed releases.", r.Patches.Claims, r.Patches.Releases)
	w("")

	w("## Durations")
	w("")
	w("| step | time |")
	w("|---|---|")
	for _, d := range r.Durations {
		w("| %s | %s |", d.Name, secs(d.D))
	}
	w("| total | %s |", secs(r.Total))
	w("")

	w("## Invariants")
	w("")
	w("| invariant | measured | |")
	w("|---|---|---|")
	for _, inv := range r.Invariants {
		mark := "holds"
		if !inv.OK {
			mark = "**BROKEN**"
		}
		w("| %s | %s | %s |", inv.Name, inv.Measured, mark)
	}
	for _, inv := range r.Invariants {
		if inv.OK || len(inv.Evidence) == 0 {
			continue
		}
		w("")
		w("Evidence — %s:", inv.Name)
		w("")
		for _, e := range inv.Evidence {
			w("- %s", e)
		}
	}
	w("")
	w("A *replay* is the same write (device, If-Match and body) sent again after NetBox committed it (answer")
	w("delivered or lost) or refused it with 412: the ETag is then known stale, and only a re-read is safe.")
	w("Two PATCHes can carry the same (device, If-Match) without a replay, and both are counted above: two")
	w("requests that read the same free device both try to claim it (If-Match lets exactly one commit; the")
	w("other gets 412, re-reads and chooses again), and a PATCH the client abandoned before NetBox processed it")
	w("(the injected latency outlived `NETBOX_TIMEOUT`, or the operator was killed) changed nothing, so the")
	w("re-read returns the same, still current ETag. The PATCH bodies of abandoned attempts, which the")
	w("simulator does not log, come from the counting layer in front of it.")
	w("")
	w("## Timeline")
	w("")
	w("```")
	for _, l := range r.Timeline {
		w("%s", l)
	}
	w("```")
	return b.String()
}
