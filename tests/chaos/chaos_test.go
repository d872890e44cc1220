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
	"github.com/o2ims-operator/o2ims-operator/tests/stack"
	"github.com/o2ims-operator/o2ims-operator/tests/world"
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
func (h *harness) killAndRestart(ctx context.Context, phase string, rng *rand.Rand) {
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
		h.t.Fatalf("the operator does not start again: %v", err)
	}
	h.logf("operator running again")
}

// Hosts claimed and released, requests provisioned and deleted, through SIGKILLs of the operator, a
// kube-apiserver restart and NetBox 5xx answers, timeouts and lost PATCH answers: at the end nothing is
// held, nothing is left, no host was claimed twice and no NetBox write was replayed.
func TestKillsAPIServerRestartAndNetBoxFaultsLeakNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos run: about a minute of real processes")
	}
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano() % 1_000_000_000
	}
	t.Logf("seed %d — repeat this run's random choices with: go test -count=1 -run . ./tests/chaos/ -args -seed=%d", seed, seed)
	rep := newReport(seed)
	ctx, cancelAll := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancelAll()

	dir, err := os.MkdirTemp("", "o2ims-chaos-")
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs kept in %s (stack/operator.log: every operator run; stack/kube/: API server and etcd)", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})

	t0 := time.Now()
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
	// The operator reaches the simulator through a counting layer (the same simulator's handler).
	counter := newAnswerCounter(st.NetBox)
	proxy := httptest.NewServer(counter)
	t.Cleanup(proxy.Close)
	// Runs first: the operator is gone before the proxy closes; its last SIGTERM must still end in exit 0.
	t.Cleanup(func() { assert.NoError(t, st.Stop(), "stopping the stack") })
	rep.Durations = append(rep.Durations, namedDuration{"stack start (kube-apiserver, etcd, manifests, NetBox, world)", time.Since(t0)})

	h := &harness{t: t, st: st, nb: counter, start: time.Now(), rep: rep, patchSeen: make(chan struct{}, 1)}
	st.NetBox.SetPatchHook(func(int32) {
		select {
		case h.patchSeen <- struct{}{}:
		default:
		}
	})
	t.Cleanup(func() { h.mu.Lock(); h.over = true; h.mu.Unlock() })
	h.ops = &operatorCtl{st: st, env: map[string]string{"NETBOX_URL": proxy.URL}, logf: h.logf}
	h.inj = newInjector(st.NetBox, seed+1, netboxTimeout)
	chaosRng := rand.New(rand.NewSource(seed + 2))
	planRng := rand.New(rand.NewSource(seed + 3))

	require.NoError(t, h.ops.start(ctx), "first start of the operator")
	h.logf("operator running (pid %d)", h.st.Operator.Pid())

	free32 := (poolHosts + 2) / 3
	plan := planRequests(planRng, requests, free32, poolHosts-free32)
	var offsets []time.Duration
	for range plan {
		offsets = append(offsets, between(planRng, 0, createWindow))
	}
	sort.Slice(offsets, func(i, j int) bool { return offsets[i] < offsets[j] })
	rep.Plan = plan

	// ---- Phase 1: provisioning under chaos ----
	h.logf("phase 1: %d requests arrive over %s while the operator is killed and NetBox misbehaves", len(plan), createWindow)
	p1 := time.Now()
	injCtx, stopInj := context.WithCancel(ctx)
	injDone := make(chan struct{})
	go func() { h.inj.run(injCtx); close(injDone) }()
	var planMu sync.Mutex
	created := make(chan []string, 1)
	go func() {
		var errs []string
		for i := range plan {
			time.Sleep(time.Until(p1.Add(offsets[i])))
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
	kills := 4 + chaosRng.Intn(2)
	apiAfter := 1 + chaosRng.Intn(kills-1)
	for i := 1; i <= kills; i++ {
		time.Sleep(between(chaosRng, time.Second, 3500*time.Millisecond))
		h.killAndRestart(ctx, phaseProvisioning, chaosRng)
		if i == apiAfter {
			time.Sleep(between(chaosRng, 500*time.Millisecond, 2*time.Second))
			down := between(chaosRng, time.Second, 3*time.Second)
			h.logf("kube-apiserver stopped (etcd keeps the data) for %s", down.Round(time.Millisecond))
			at := time.Since(h.start)
			if err := st.RestartAPIServer(ctx, down); err != nil {
				t.Fatalf("restarting kube-apiserver: %v", err)
			}
			rep.APIRestarts = append(rep.APIRestarts, apiRestart{At: at, Down: down, Total: time.Since(h.start) - at})
			h.logf("kube-apiserver serving again")
		}
	}
	createErrs := <-created
	for _, e := range createErrs {
		t.Errorf("%s", e)
	}
	stopInj()
	<-injDone
	rep.Phase1Faults, _ = h.inj.Injected()
	rep.Durations = append(rep.Durations, namedDuration{"phase 1: provisioning under chaos (kills, API-server restart, NetBox faults)", time.Since(p1)})
	h.logf("phase 1 chaos over; NetBox healthy again; waiting until every request is fulfilled or failed")
	require.NoError(t, h.ops.ensure(ctx))

	s1 := time.Now()
	states, messages := h.waitSettled(ctx, plan)
	rep.Durations = append(rep.Durations, namedDuration{"phase 1: settling after the chaos (every request fulfilled or failed)", time.Since(s1)})
	h.checkProvisioned(ctx, plan, states, messages)

	// ---- Phase 2: deletion under chaos ----
	h.logf("phase 2: every request deleted while the operator is killed and NetBox misbehaves")
	p2 := time.Now()
	injCtx, stopInj = context.WithCancel(ctx)
	injDone = make(chan struct{})
	go func() { h.inj.run(injCtx); close(injDone) }()
	deleted := make(chan []string, 1)
	order := planRng.Perm(len(plan))
	gaps := make([]time.Duration, len(order))
	for i := range gaps {
		gaps[i] = between(planRng, 0, 600*time.Millisecond)
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
	for i, n := 1, 3+chaosRng.Intn(2); i <= n; i++ {
		time.Sleep(between(chaosRng, 300*time.Millisecond, 1500*time.Millisecond))
		h.killAndRestart(ctx, phaseReleasing, chaosRng)
	}
	for _, e := range <-deleted {
		t.Errorf("%s", e)
	}
	stopInj()
	<-injDone
	rep.Durations = append(rep.Durations, namedDuration{"phase 2: deletion under chaos (kills, NetBox faults)", time.Since(p2)})
	h.logf("phase 2 chaos over; NetBox healthy again; waiting until every request is gone")
	require.NoError(t, h.ops.ensure(ctx))
	s2 := time.Now()
	left := h.waitGone(ctx, plan)
	rep.Durations = append(rep.Durations, namedDuration{"phase 2: settling after the chaos (every request gone)", time.Since(s2)})
	h.checkReleased(ctx, plan, left)

	// What was injected and what the operator saw.
	rep.Faults, rep.FaultDetail = h.inj.Injected()
	rep.Answers = counter.Snapshot()
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
	rep.Total = time.Since(t0)
	h.mu.Lock()
	rep.Timeline = append([]string(nil), h.timeline...)
	h.mu.Unlock()
	rep.fill(st.NetBox.PatchLog(), counter)

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
		t.Logf("seed %d; operator log tail:\n%s", seed, stack.Tail(filepath.Join(dir, "stack", "operator.log"), 60))
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
