package chaos

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/world"
	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

var (
	operatorFlag = flag.String("operator", "", "a prebuilt operator binary (default: built from this checkout with hack/build.sh)")
	seedFlag     = flag.Int64("seed", 0, "seed of every random choice (0: from the clock); logged, so a failing run can be repeated")
	reportFlag   = flag.String("report", "", "write a Markdown report of the run to this path (make chaos: docs/chaos.md)")
)

// binary is the operator under test.
var binary string

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	flag.Parse()
	if *operatorFlag != "" {
		abs, err := filepath.Abs(*operatorFlag)
		if err == nil {
			_, err = os.Stat(abs)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "-operator:", err)
			return 1
		}
		binary = abs
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "o2ims-chaos-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "o2ims-operator")
	root, err := kubeapi.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	build := exec.Command(filepath.Join(root, "hack", "build.sh"), binary, "chaos")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the operator:", err)
		return 1
	}
	return m.Run()
}

// The shape of a run. Short world delays, a NetBox timeout the injected latency goes beyond.
const (
	poolHosts      = 20 // the stack gives every third host 32 cores, the others 16
	requests       = 14
	netboxTimeout  = 2 * time.Second
	createWindow   = 12 * time.Second // requests arrive spread over this much of the provisioning chaos
	settleDeadline = 3 * time.Minute  // generous: convergence, never speed, is what is checked
)

type harness struct {
	t     *testing.T
	st    *stack.Stack
	ops   *operatorCtl
	nb    *answerCounter
	inj   *injector
	start time.Time
	rep   *report

	patchSeen chan struct{} // a NetBox PATCH arrived (targeted kills wait for one)

	mu       sync.Mutex
	timeline []string
	over     bool // the test returned: goroutines still running must not call t.Log
}

func (h *harness) logf(format string, args ...any) {
	line := fmt.Sprintf("%6.1fs  ", time.Since(h.start).Seconds()) + fmt.Sprintf(format, args...)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.over {
		return
	}
	h.t.Log(line)
	h.timeline = append(h.timeline, line)
}

func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.Int63n(int64(hi-lo)+1))
}

const (
	phaseProvisioning = "provisioning"
	phaseReleasing    = "releasing"
)

// killAndRestart SIGKILLs the operator now — or, half of the time, within 30 ms of the next NetBox PATCH
// arriving, to land in the write windows (claim or release committed, its answer or the request's record
// not yet) — keeps it down a random while, and starts it again.
func (h *harness) killAndRestart(t *testing.T, ctx context.Context, phase string, rng *rand.Rand) {
	releasing := phase == phaseReleasing
	aim := "a random moment"
	targeted, jitter := rng.Intn(2) == 0, between(rng, 0, 30*time.Millisecond)
	down := between(rng, 0, time.Second)
	if targeted {
		select {
		case <-h.patchSeen:
		default:
		}
		select {
		case <-h.patchSeen:
			time.Sleep(jitter)
			aim = fmt.Sprintf("%s after a NetBox PATCH arrived", jitter.Round(time.Millisecond))
		case <-time.After(3 * time.Second):
			aim = "a random moment (no PATCH came within 3 s)"
		}
	}
	inflight := h.nb.InFlight()
	h.ops.kill()
	busy := -1
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	if states, _, err := h.requestStates(sctx); err == nil {
		busy = 0
		for _, s := range states {
			if releasing || (s != "fulfilled" && s != "failed") {
				busy++
			}
		}
	}
	cancel()
	h.rep.Kills = append(h.rep.Kills, killRecord{Phase: phase, Aim: aim, At: time.Since(h.start), NetBoxInFlight: inflight, Busy: busy, Down: down})
	what := "requests not settled"
	if releasing {
		what = "requests not gone"
	}
	h.logf("SIGKILL (%s, %s): %d NetBox calls in flight, %d %s; down for %s", phase, aim, inflight, busy, what, down.Round(time.Millisecond))
	time.Sleep(down)
	if err := h.ops.start(ctx); err != nil {
		t.Fatalf("the operator does not start again: %v", err)
	}
	h.logf("operator running again")
}

// Hosts claimed and released, requests provisioned and deleted, through SIGKILLs of the operator, a
// kube-apiserver restart and NetBox 5xx answers, timeouts and lost PATCH answers: at the end nothing is
// held, nothing is left, no host was claimed twice and no NetBox write was replayed. One run, in phases
// that each need the one before: a phase that stops (t.Fatal) skips the rest; the invariants and the
// report come last, from whatever the phases measured.
func TestKillsAPIServerRestartAndNetBoxFaultsLeakNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos run: about a minute of real processes")
	}
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano() % 1_000_000_000
	}
	t.Logf("seed %d — repeat this run's random choices with: go test -count=1 -run . ./tests/chaos/ -args -seed=%d", seed, seed)
	ctx, cancelAll := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancelAll()

	r := &run{seed: seed, rep: newReport(seed)}
	r.startStack(t, ctx)
	phases := []struct {
		name string
		fn   func(*testing.T, context.Context)
	}{
		{"provisioning under chaos", r.provisionUnderChaos},
		{"provisioning settles", r.provisioningSettles},
		{"deletion under chaos", r.deleteUnderChaos},
		{"deletion settles", r.deletionSettles},
	}
	for _, ph := range phases {
		if !phase(t, ph.name, func(t *testing.T) { ph.fn(t, ctx) }) {
			t.Logf("phase %q stopped the run; the later phases are skipped", ph.name)
			break
		}
	}
	r.report(t)
}

// phase runs one step of the run as a subtest; completed is false when it stopped (FailNow, Skip) rather
// than returned, so an Error in a phase (a create that gave up) does not skip the next one.
func phase(t *testing.T, name string, fn func(*testing.T)) (completed bool) {
	t.Run(name, func(t *testing.T) {
		fn(t)
		completed = true
	})
	return completed
}

// run is one chaos run: what the phases hand on to each other.
type run struct {
	seed              int64
	rep               *report
	dir               string
	t0                time.Time
	st                *stack.Stack
	counter           *answerCounter
	h                 *harness
	chaosRng, planRng *rand.Rand
	plan              []plannedRequest
	offsets           []time.Duration
}

// startStack starts kube-apiserver, etcd, the manifests, NetBox (behind a counting proxy) and the world,
// then the operator, and plans the requests. It runs in the test itself, not a phase: what it starts lives
// until the whole run ends (a subtest's cleanups would run when the subtest returns).
func (r *run) startStack(t *testing.T, ctx context.Context) {
	dir, err := os.MkdirTemp("", "o2ims-chaos-")
	require.NoError(t, err)
	r.dir = dir
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs kept in %s (stack/operator.log: every operator run; stack/kube/: API server and etcd)", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})

	r.t0 = time.Now()
	st, err := stack.Start(ctx, stack.Options{
		Operator: binary, Dir: filepath.Join(dir, "stack"), Hosts: poolHosts,
		World: world.Options{
			RenderDelay: 400 * time.Millisecond, ProvisionDelay: 800 * time.Millisecond,
			PorchFinalizer: true, DeleteDelay: 300 * time.Millisecond,
			RegisterDelay: 300 * time.Millisecond, InspectDelay: 300 * time.Millisecond, Metal3Finalizer: true,
			ClusterFailure: map[string]string{brokenTemplate: "chaos: this cluster never comes up"},
		},
		Env: map[string]string{
			"NETBOX_TIMEOUT":   fmt.Sprint(int(netboxTimeout / time.Second)),
			"REQUEUE_INTERVAL": "2",
		},
	})
	require.NoError(t, err, "starting the stack")
	r.st = st
	// The operator reaches the simulator through a counting layer (the same simulator's handler).
	r.counter = newAnswerCounter(st.NetBox)
	proxy := httptest.NewServer(r.counter)
	t.Cleanup(proxy.Close)
	// Runs first: the operator is gone before the proxy closes; its last SIGTERM must still end in exit 0.
	t.Cleanup(func() { assert.NoError(t, st.Stop(), "stopping the stack") })
	r.rep.Durations = append(r.rep.Durations, namedDuration{"stack start (kube-apiserver, etcd, manifests, NetBox, world)", time.Since(r.t0)})

	h := &harness{t: t, st: st, nb: r.counter, start: time.Now(), rep: r.rep, patchSeen: make(chan struct{}, 1)}
	st.NetBox.SetPatchHook(func(int32) {
		select {
		case h.patchSeen <- struct{}{}:
		default:
		}
	})
	t.Cleanup(func() { h.mu.Lock(); h.over = true; h.mu.Unlock() })
	h.ops = &operatorCtl{st: st, env: map[string]string{"NETBOX_URL": proxy.URL}, logf: h.logf}
	h.inj = newInjector(st.NetBox, r.seed+1, netboxTimeout)
	r.h = h
	r.chaosRng = rand.New(rand.NewSource(r.seed + 2))
	r.planRng = rand.New(rand.NewSource(r.seed + 3))

	require.NoError(t, h.ops.start(ctx), "first start of the operator")
	h.logf("operator running (pid %d)", h.st.Operator.Pid())

	free32 := (poolHosts + 2) / 3
	r.plan = planRequests(r.planRng, requests, free32, poolHosts-free32)
	for range r.plan {
		r.offsets = append(r.offsets, between(r.planRng, 0, createWindow))
	}
	sort.Slice(r.offsets, func(i, j int) bool { return r.offsets[i] < r.offsets[j] })
	r.rep.Plan = r.plan
}

// injectFaults starts the NetBox fault injector; the returned stop waits until it has calmed NetBox.
func (r *run) injectFaults(ctx context.Context) (stop func()) {
	injCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { r.h.inj.run(injCtx); close(done) }()
	return func() { cancel(); <-done }
}

// provisionUnderChaos creates the planned requests over createWindow (via the API server or the NBI)
// while the operator is SIGKILLed 4–5 times, kube-apiserver restarts once and NetBox misbehaves.
func (r *run) provisionUnderChaos(t *testing.T, ctx context.Context) {
	h, plan := r.h, r.plan
	h.logf("phase 1: %d requests arrive over %s while the operator is killed and NetBox misbehaves", len(plan), createWindow)
	p1 := time.Now()
	stopInj := r.injectFaults(ctx)
	var planMu sync.Mutex
	created := make(chan []string, 1)
	go func() {
		var errs []string
		for i := range plan {
			time.Sleep(time.Until(p1.Add(r.offsets[i])))
			planMu.Lock()
			p := plan[i]
			planMu.Unlock()
			uid, err := h.create(ctx, p)
			if err != nil {
				errs = append(errs, err.Error())
				continue
			}
			planMu.Lock()
			plan[i].UID = uid
			planMu.Unlock()
			how := "API server"
			if p.ViaNBI {
				how = "NBI"
			}
			h.logf("created %s via %s (%d hosts%s)", p.Name, how, p.hostCount(), map[bool]string{true: ", template that fails", false: ""}[p.Broken])
		}
		created <- errs
	}()
	kills := 4 + r.chaosRng.Intn(2)
	apiAfter := 1 + r.chaosRng.Intn(kills-1)
	for i := 1; i <= kills; i++ {
		time.Sleep(between(r.chaosRng, time.Second, 3500*time.Millisecond))
		h.killAndRestart(t, ctx, phaseProvisioning, r.chaosRng)
		if i == apiAfter {
			time.Sleep(between(r.chaosRng, 500*time.Millisecond, 2*time.Second))
			down := between(r.chaosRng, time.Second, 3*time.Second)
			h.logf("kube-apiserver stopped (etcd keeps the data) for %s", down.Round(time.Millisecond))
			at := time.Since(h.start)
			if err := r.st.RestartAPIServer(ctx, down); err != nil {
				t.Fatalf("restarting kube-apiserver: %v", err)
			}
			r.rep.APIRestarts = append(r.rep.APIRestarts, apiRestart{At: at, Down: down, Total: time.Since(h.start) - at})
			h.logf("kube-apiserver serving again")
		}
	}
	createErrs := <-created
	for _, e := range createErrs {
		t.Errorf("%s", e)
	}
	stopInj()
	r.rep.Phase1Faults, _ = h.inj.Injected()
	r.rep.Durations = append(r.rep.Durations, namedDuration{"phase 1: provisioning under chaos (kills, API-server restart, NetBox faults)", time.Since(p1)})
	h.logf("phase 1 chaos over; NetBox healthy again; waiting until every request is fulfilled or failed")
	require.NoError(t, h.ops.ensure(ctx))
}

// provisioningSettles waits until every request is fulfilled or failed and checks the provisioning
// invariants (recorded in the report, judged at the end).
func (r *run) provisioningSettles(_ *testing.T, ctx context.Context) {
	s1 := time.Now()
	states, messages := r.h.waitSettled(ctx, r.plan)
	r.rep.Durations = append(r.rep.Durations, namedDuration{"phase 1: settling after the chaos (every request fulfilled or failed)", time.Since(s1)})
	r.h.checkProvisioned(ctx, r.plan, states, messages)
}

// deleteUnderChaos deletes every request in a random order while the operator is SIGKILLed 3–4 times
// and NetBox misbehaves.
func (r *run) deleteUnderChaos(t *testing.T, ctx context.Context) {
	h, plan := r.h, r.plan
	h.logf("phase 2: every request deleted while the operator is killed and NetBox misbehaves")
	p2 := time.Now()
	stopInj := r.injectFaults(ctx)
	deleted := make(chan []string, 1)
	order := r.planRng.Perm(len(plan))
	gaps := make([]time.Duration, len(order))
	for i := range gaps {
		gaps[i] = between(r.planRng, 0, 600*time.Millisecond)
	}
	go func() {
		var errs []string
		for i, k := range order {
			time.Sleep(gaps[i])
			if err := h.remove(ctx, plan[k]); err != nil {
				errs = append(errs, err.Error())
				continue
			}
			h.logf("deletion of %s asked", plan[k].Name)
		}
		deleted <- errs
	}()
	for i, n := 1, 3+r.chaosRng.Intn(2); i <= n; i++ {
		time.Sleep(between(r.chaosRng, 300*time.Millisecond, 1500*time.Millisecond))
		h.killAndRestart(t, ctx, phaseReleasing, r.chaosRng)
	}
	for _, e := range <-deleted {
		t.Errorf("%s", e)
	}
	stopInj()
	r.rep.Durations = append(r.rep.Durations, namedDuration{"phase 2: deletion under chaos (kills, NetBox faults)", time.Since(p2)})
	h.logf("phase 2 chaos over; NetBox healthy again; waiting until every request is gone")
	require.NoError(t, h.ops.ensure(ctx))
}

// deletionSettles waits until every request is gone and checks the release invariants.
func (r *run) deletionSettles(_ *testing.T, ctx context.Context) {
	s2 := time.Now()
	left := r.h.waitGone(ctx, r.plan)
	r.rep.Durations = append(r.rep.Durations, namedDuration{"phase 2: settling after the chaos (every request gone)", time.Since(s2)})
	r.h.checkReleased(ctx, r.plan, left)
}

// report fills in what was injected and what the operator saw, writes the Markdown report when asked,
// and judges every invariant.
func (r *run) report(t *testing.T) {
	h, rep, st := r.h, r.rep, r.st
	rep.Faults, rep.FaultDetail = h.inj.Injected()
	rep.Answers = r.counter.Snapshot()
	rep.Starts, rep.StartFailures, rep.SelfExits = h.ops.stats()
	rep.SimCalls = map[string]int{}
	for k := range rep.Answers {
		method, route, _ := strings.Cut(k, " ")
		rep.SimCalls[k] = st.NetBox.Calls(method, route)
	}
	rep.Invariants = append(rep.Invariants, invariant{
		Name:     "the operator never exited by itself (only the test's SIGKILLs ended it)",
		Measured: fmt.Sprintf("%d unexpected exits; %d starts, %d refused at start and started again", len(rep.SelfExits), rep.Starts, len(rep.StartFailures)),
		OK:       len(rep.SelfExits) == 0,
	})
	rep.Total = time.Since(r.t0)
	h.mu.Lock()
	rep.Timeline = append([]string(nil), h.timeline...)
	h.mu.Unlock()
	rep.fill(st.NetBox.PatchLog(), r.counter)

	if *reportFlag != "" {
		if err := os.WriteFile(*reportFlag, []byte(rep.markdown()), 0o644); err != nil {
			t.Errorf("writing the report: %v", err)
		} else {
			t.Logf("report written to %s", *reportFlag)
		}
	}
	for _, inv := range rep.Invariants {
		if inv.OK {
			t.Logf("ok      %s: %s", inv.Name, inv.Measured)
		} else {
			t.Errorf("BROKEN  %s: %s%s", inv.Name, inv.Measured, indent(inv.Evidence))
		}
	}
	if t.Failed() {
		t.Logf("seed %d; operator log tail:\n%s", r.seed, stack.Tail(filepath.Join(r.dir, "stack", "operator.log"), 60))
	}
}

// waitSettled waits (generously) until every planned request is fulfilled or failed, and returns the
// states it saw last.
func (h *harness) waitSettled(ctx context.Context, plan []plannedRequest) (map[string]string, map[string]string) {
	deadline := time.Now().Add(settleDeadline)
	var states, messages map[string]string
	for {
		if s, m, err := h.requestStates(ctx); err == nil {
			states, messages = s, m
			done := true
			for _, p := range plan {
				if st := states[p.Name]; st != "fulfilled" && st != "failed" {
					done = false
				}
			}
			if done {
				h.logf("every request settled")
				return states, messages
			}
		}
		if time.Now().After(deadline) {
			h.logf("not every request settled within %s", settleDeadline)
			return states, messages
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitGone waits (generously) until no planned request exists, and returns those left.
func (h *harness) waitGone(ctx context.Context, plan []plannedRequest) map[string]string {
	deadline := time.Now().Add(settleDeadline)
	var left map[string]string
	for {
		if states, _, err := h.requestStates(ctx); err == nil {
			left = map[string]string{}
			for _, p := range plan {
				if s, ok := states[p.Name]; ok {
					left[p.Name] = s
				}
			}
			if len(left) == 0 {
				h.logf("every request gone")
				return left
			}
		}
		if time.Now().After(deadline) {
			h.logf("%d requests still there after %s", len(left), settleDeadline)
			return left
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func indent(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return "\n\t" + strings.Join(lines, "\n\t")
}
