package handlers

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/handlers/hosts"
	nbinventory "github.com/o2ims-operator/o2ims-operator/inventory"
	"github.com/o2ims-operator/o2ims-operator/netbox"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/world"
)

// The model-based test: seeded random sequences of what users, GitOps tools and the infrastructure do to
// requests — create (with and without hosts), spec changes (count up and down, role removed or added,
// template changed), label and annotation edits, delete, operator restart, NetBox faults, the inventory
// switched off and on — with the invariants checked after every step, and at the end of each sequence
// everything deleted and every host back in the pool.
//
//	O2IMS_MODEL_SEED=<n>       replay one sequence (the seed is printed on every run and failure)
//	O2IMS_MODEL_SEQUENCES=<n>  sequences to run (default 2; make chaos sets more)
//	O2IMS_MODEL_STEPS=<n>      steps per sequence (default 14)
//	O2IMS_MODEL_REPORT=<file>  write the run's numbers into the file's model section (replacing it)
//
// Each sequence is a parallel subtest with its own label, inventory and operator; -parallel sets how many
// run at once (make chaos: MODEL_PARALLEL). Steps mostly sleep, so more sequences than CPUs fit.
func TestModelDay2Sequences(t *testing.T) {
	t.Parallel()
	sequences, steps := envInt(t, "O2IMS_MODEL_SEQUENCES", 2), envInt(t, "O2IMS_MODEL_STEPS", 14)
	var seeds []int64
	if s := os.Getenv("O2IMS_MODEL_SEED"); s != "" {
		seed, err := strconv.ParseInt(s, 10, 64)
		require.NoError(t, err, "O2IMS_MODEL_SEED")
		seeds = []int64{seed}
	} else {
		base := time.Now().UnixNano()
		for i := 0; i < sequences; i++ {
			seeds = append(seeds, base+int64(i)*7919)
		}
	}
	total := modelTotals{ops: map[string]int{}}
	var mu sync.Mutex
	start := time.Now()
	t.Run("sequences", func(t *testing.T) {
		for i, seed := range seeds {
			t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
				t.Parallel()
				// Registered first, so it runs last: after the status trail's own check (messages_test.go).
				t.Cleanup(func() {
					if t.Failed() {
						mu.Lock()
						total.failedSeeds = append(total.failedSeeds, seed)
						mu.Unlock()
						t.Logf("model sequence failed; replay with O2IMS_MODEL_SEED=%d", seed)
					}
				})
				t.Logf("model sequence %d/%d: seed %d (replay: O2IMS_MODEL_SEED=%d)", i+1, len(seeds), seed, seed)
				m := newModel(t, seed, i)
				m.run(steps)
				mu.Lock()
				total.add(m)
				mu.Unlock()
			})
		}
	})
	elapsed := time.Since(start)
	parallel := flag.Lookup("test.parallel").Value.String()
	t.Logf("model: %d sequences (%s at once), %d steps, %d invariant checks, longest sequence seed %d (%s); ops %v; %s",
		len(seeds), parallel, total.steps, total.checks, total.longestSeed, total.longest.Round(time.Millisecond), total.opsString(), elapsed.Round(time.Second))
	if len(total.failedSeeds) > 0 {
		t.Logf("failed sequences, replay each with O2IMS_MODEL_SEED=<seed>: %v", total.failedSeeds)
	}
	if path := os.Getenv("O2IMS_MODEL_REPORT"); path != "" {
		require.NoError(t, writeModelReport(path, modelReport(t.Failed(), len(seeds), parallel, &total, elapsed)))
	}
}

// modelSection heads the model's section of the chaos report; writeModelReport replaces it.
const modelSection = "## Model-based day-2 sequences\n"

func modelReport(failed bool, sequences int, parallel string, total *modelTotals, elapsed time.Duration) string {
	result := "every invariant held after every step"
	if failed {
		result = fmt.Sprintf("an invariant failed (seeds %v)", total.failedSeeds)
	}
	return fmt.Sprintf(modelSection+"\n"+
		"Written by `make chaos` (`TestModelDay2Sequences` in `handlers/`): the in-process operator on the real "+
		"kube-apiserver, netboxsim and the world simulator; seeded random create (with and without hosts), spec "+
		"changes in flight and after (count up/down, role removed, hosts replaced or removed, template changed), "+
		"label and annotation edits, delete, operator restart, NetBox faults (503/500/502, lost PATCH answers), "+
		"NetBox down (503 to everything, the operator restarted into it half the time), hosts whose BMC refuses "+
		"their credentials or never answers joining the pool (BMC fault bursts), CAPI Machines consuming claimed hosts and scaled away, inventory off and on. After every step: every active device owned "+
		"by us is recorded by an existing request and vice versa; never more than BMC_FAULT_BURST hosts quarantined for BMC faults at once; the inventory the NBI serves (the view hosts "+
		"are chosen from) names for every pool host the holder NetBox names, once the host's last change is older "+
		"than the view's bound; no device held twice; no BareMetalHost or BMC "+
		"Secret without a recorded claim; never a BareMetalHost a Machine consumes released; a fulfilled or failed request's status does not move and no budget "+
		"restarts without a spec change; a fulfilled request's package variant renders its current template (after a "+
		"change, on a Published revision Porch locked to it, whose content's Cluster the live Cluster carries: never fulfilled on an unrendered spec; some changes "+
		"go to a template whose drafts nobody publishes, some to one whose versions leave the Cluster's spec as it was) and "+
		"its ids resolve in the inventory to devices it holds (never a refused one); every status the operator "+
		"writes is a row of the message table (`handlers/messages.go`); the operator never stops by itself. At the end of each sequence everything is deleted, every host must be back in the pool and every "+
		"refused host quarantined with its reason or back in the pool. Sequences run in parallel, each with its "+
		"own label, inventory and operator.\n\n"+
		"**Result: %s.**\n\n| | |\n|---|---|\n| sequences | %d (%s at once) |\n| steps | %d |\n| invariant checks | %d |\n"+
		"| longest sequence | seed %d, %s (replay: `O2IMS_MODEL_SEED=%d go test -run TestModelDay2Sequences ./handlers/`) |\n"+
		"| operations | %s |\n| total | %s wall (GOMAXPROCS %d, %d CPUs, %s) |\n",
		result, sequences, parallel, total.steps, total.checks, total.longestSeed, total.longest.Round(time.Millisecond),
		total.longestSeed, total.opsString(), elapsed.Round(time.Second), runtime.GOMAXPROCS(0), runtime.NumCPU(), time.Now().UTC().Format(time.DateOnly))
}

// writeModelReport puts section in place of the file's model section (up to the next "## " heading or
// the end), or appends it when there is none: one model section, however often the run is repeated.
func writeModelReport(path, section string) error {
	raw, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	doc := string(raw)
	if i := strings.Index(doc, modelSection); i >= 0 {
		rest := doc[i+len(modelSection):]
		end := len(doc)
		if j := strings.Index(rest, "\n## "); j >= 0 {
			end = i + len(modelSection) + j + 1
		}
		if end < len(doc) {
			section += "\n"
		}
		doc = doc[:i] + section + doc[end:]
	} else {
		doc = strings.TrimRight(doc, "\n") + "\n\n" + section
	}
	return os.WriteFile(path, []byte(doc), 0o644)
}

type modelTotals struct {
	steps, checks int
	failedSeeds   []int64
	ops           map[string]int
	longest       time.Duration
	longestSeed   int64
}

func (tt *modelTotals) add(m *model) {
	tt.steps += m.steps
	tt.checks += m.checks
	for k, v := range m.ops {
		tt.ops[k] += v
	}
	if d := time.Since(m.started); d > tt.longest {
		tt.longest, tt.longestSeed = d, m.seed
	}
}

func (tt *modelTotals) opsString() string {
	keys := make([]string, 0, len(tt.ops))
	for k := range tt.ops {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, tt.ops[k]))
	}
	return strings.Join(parts, ", ")
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	require.NoError(t, err, name)
	return n
}

// Pool: workers select cpu_cores 4096, control planes 4097; fewer hosts than requests could ask for, so
// requests wait, compete and run out of budget too.
const (
	modelWorkerCores = 4096
	modelCPCores     = 4097
	modelMaxRequests = 4
)

type model struct {
	t       *testing.T
	srv     *kubeapi.Server
	rng     *rand.Rand
	seed    int64
	label   string
	inv     *inventory
	chain   *chain
	invOn   bool
	outage  bool // NetBox answers 503 to everything (SetOutage)
	hosts   []int32
	refused []int32  // pool hosts added later whose BMC refuses their credentials or never answers (BMC faults)
	bmcBase int      // refused hosts quarantined, or about to be, when the operator last started
	machine []string // hosts a CAPI Machine consumes (world: ConsumeHost), until scaled down
	names   []string // requests created and not yet seen gone
	next    int
	steps   int
	checks  int
	ops     map[string]int
	started time.Time
	// per request, what the invariants remember across steps
	seen map[string]*modelSeen
}

// modelSeen: the last terminal status a request showed with its spec handled, and its budget starts.
type modelSeen struct {
	uid           string
	generation    int64
	terminal      any // provisioningStatus + provisionedResourceSet when terminal and handled
	budgetStart   string
	budgetChanges int
	handledAtGen  bool
}

func newModel(t *testing.T, seed int64, i int) *model {
	srv := kubeapi.Shared(t)
	label := fmt.Sprintf("model-%d-%d", i, seed%1000000)
	if seed < 0 {
		label = fmt.Sprintf("model-%d-n%d", i, -seed%1000000)
	}
	m := &model{t: t, srv: srv, rng: rand.New(rand.NewSource(seed)), seed: seed, label: label,
		inv: newInventory(t, srv, label), invOn: true, ops: map[string]int{}, started: time.Now(), seen: map[string]*modelSeen{}}
	for j := 0; j < 5; j++ {
		m.hosts = append(m.hosts, m.inv.addHost(t, srv, fmt.Sprintf("%s-w%d", label, j), modelWorkerCores, "admin"))
	}
	for j := 0; j < 2; j++ {
		m.hosts = append(m.hosts, m.inv.addHost(t, srv, fmt.Sprintf("%s-cp%d", label, j), modelCPCores, "admin"))
	}
	m.start()
	return m
}

func (m *model) config(c *Config) {
	m.inv.namespaces(c)
	c.CreationTimeout = 8 * time.Second
	c.Requeue = 300 * time.Millisecond
	c.BMCFaults.Grace, c.BMCFaults.ErrorCount = 300*time.Millisecond, 2
}

func (m *model) start() {
	if m.invOn {
		m.chain = startChain(m.t, m.srv, m.label, m.config, nil, m.inv.client)
	} else {
		m.chain = startChain(m.t, m.srv, m.label, m.config, nil)
	}
}

func (m *model) restart() {
	m.chain.stop(m.t)
	// The burst guard is per process: count from what the last one quarantined or decided to.
	m.bmcBase = m.bmcQuarantined()
	for _, u := range m.requests() {
		slots, _ := hosts.ReadSlots(u)
		for _, sl := range slots {
			if sl.Refused != "" && sl.Phase != hosts.PhaseReleased {
				m.bmcBase++
			}
		}
	}
	m.start()
}

// bmcQuarantined counts the refused hosts NetBox has failed.
func (m *model) bmcQuarantined() int {
	n := 0
	for _, id := range m.refused {
		if d, _ := m.inv.sim.Device(id); d.Status == "failed" {
			n++
		}
	}
	return n
}

func (m *model) run(steps int) {
	var took struct{ ops, sleeps, checks, drain time.Duration }
	slowest, slowestOp := time.Duration(0), ""
	setup := time.Since(m.started)
	for i := 0; i < steps && !m.t.Failed(); i++ {
		at := time.Now()
		op := m.step()
		d := time.Since(at)
		took.ops += d
		if d > slowest {
			slowest, slowestOp = d, op
		}
		m.ops[op]++
		m.steps++
		at = time.Now()
		time.Sleep(time.Duration(150+m.rng.Intn(600)) * time.Millisecond)
		took.sleeps += time.Since(at)
		at = time.Now()
		m.check(fmt.Sprintf("step %d (%s)", i+1, op))
		took.checks += time.Since(at)
	}
	if !m.t.Failed() {
		at := time.Now()
		m.drain()
		took.drain = time.Since(at)
	}
	// Where a sequence's time goes, so a slow run says why (make chaos's budget is wall time).
	r := func(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }
	m.t.Logf("model sequence seed %d took %s: setup %s, operations %s (slowest %s %s), sleeps %s, checks %s, drain %s",
		m.seed, r(time.Since(m.started)), r(setup), r(took.ops), slowestOp, r(slowest), r(took.sleeps), r(took.checks), r(took.drain))
}

func (m *model) live() []string {
	var out []string
	for _, n := range m.names {
		if u, ok := getPR(m.t, m.srv, n); ok && u.GetDeletionTimestamp() == nil {
			out = append(out, n)
		}
	}
	return out
}

func (m *model) pick(names []string) string { return names[m.rng.Intn(len(names))] }

// randomHosts asks for 0–2 workers and 0–1 control planes (nil = no hosts block).
func (m *model) randomHosts() []any {
	var hosts []any
	if n := m.rng.Intn(3); n > 0 {
		hosts = append(hosts, map[string]any{"role": "worker", "count": n, "selector": map[string]any{"cpu_cores": modelWorkerCores}})
	}
	if m.rng.Intn(3) == 0 {
		hosts = append(hosts, map[string]any{"role": "control-plane", "count": 1, "selector": map[string]any{"cpu_cores": modelCPCores}})
	}
	return hosts
}

func (m *model) step() string {
	live := m.live()
	for {
		switch r := m.rng.Intn(20); {
		case r < 4:
			if len(live) >= modelMaxRequests {
				continue
			}
			name := fmt.Sprintf("%s-%d", m.label, m.next)
			m.next++
			params := map[string]any{"clusterName": "edge-" + name}
			op := "create"
			if h := m.randomHosts(); len(h) > 0 {
				params["hosts"] = h
				op = "create-hosts"
			}
			tmpl := tmplOK
			if m.rng.Intn(5) == 0 {
				tmpl = tmplNeverProvision
			}
			createPR(m.t, m.srv, provisioningRequest(name, m.label, tmpl, params))
			m.names = append(m.names, name)
			return op
		case r < 8:
			if len(live) == 0 {
				continue
			}
			return m.changeSpec(m.pick(live))
		case r < 10:
			if len(live) == 0 {
				continue
			}
			patchPR(m.t, m.srv, m.pick(live), fmt.Sprintf(`{"metadata":{"labels":{"argocd.argoproj.io/instance":"i%d"}}}`, m.rng.Intn(1000)))
			return "label"
		case r < 12:
			if len(live) == 0 {
				continue
			}
			patchPR(m.t, m.srv, m.pick(live), fmt.Sprintf(`{"metadata":{"annotations":{"kustomize.toolkit.fluxcd.io/checksum":"c%d"}}}`, m.rng.Intn(1000)))
			return "annotation"
		case r < 14:
			if len(live) == 0 {
				continue
			}
			deletePR(m.t, m.srv, m.pick(live))
			return "delete"
		case r < 15:
			m.restart()
			return "restart"
		case r < 17:
			return m.fault()
		default:
			if m.rng.Intn(3) != 0 {
				continue // the inventory toggle is rarer than the rest
			}
			m.invOn = !m.invOn
			m.restart()
			if m.invOn {
				return "inventory-on"
			}
			return "inventory-off"
		}
	}
}

func (m *model) changeSpec(name string) string {
	u, ok := getPR(m.t, m.srv, name)
	if !ok {
		return "spec-gone"
	}
	hosts, _, _ := unstructured.NestedSlice(u.Object, "spec", "templateParameters", "hosts")
	switch m.rng.Intn(4) {
	case 0: // template changed; now and then to one whose drafts nobody publishes, or whose versions
		// render the same Cluster spec (no apply moves its generation)
		tmpl := tmplOK
		switch m.rng.Intn(4) {
		case 0:
			tmpl = tmplNeverPublished
		case 1:
			tmpl = tmplSameCluster
		}
		patchPR(m.t, m.srv, name, fmt.Sprintf(`{"spec":{"templateName":%q,"templateVersion":"v%d.0.0"}}`, tmpl, 2+m.rng.Intn(5)))
		return "spec-template"
	case 1: // a role removed (or the whole hosts block)
		if len(hosts) == 0 {
			break
		}
		i := m.rng.Intn(len(hosts))
		hosts = append(hosts[:i], hosts[i+1:]...)
		m.setHosts(name, hosts)
		return "spec-role-removed"
	case 2: // count down
		for i, h := range hosts {
			hm := h.(map[string]any)
			if c, _ := hm["count"].(int64); c > 1 {
				hm["count"] = c - 1
				hosts[i] = hm
				m.setHosts(name, hosts)
				return "spec-count-down"
			}
		}
	}
	// count up, or a role added
	for i, h := range hosts {
		hm := h.(map[string]any)
		if hm["role"] == "worker" {
			if c, _ := hm["count"].(int64); c < 3 {
				hm["count"] = c + 1
				hosts[i] = hm
				m.setHosts(name, hosts)
				return "spec-count-up"
			}
		}
	}
	if fresh := m.randomHosts(); len(fresh) > 0 {
		m.setHosts(name, fresh)
		return "spec-hosts-replaced"
	}
	m.setHosts(name, nil)
	return "spec-hosts-removed"
}

func (m *model) setHosts(name string, hosts []any) {
	var body []byte
	if len(hosts) == 0 {
		body = []byte(`{"spec":{"templateParameters":{"hosts":null}}}`)
	} else {
		body, _ = json.Marshal(map[string]any{"spec": map[string]any{"templateParameters": map[string]any{"hosts": hosts}}})
	}
	patchPR(m.t, m.srv, name, string(body))
}

func (m *model) fault() string {
	switch m.rng.Intn(8) {
	case 6:
		if len(m.refused) >= 5 {
			return m.fault()
		}
		// A BMC fault burst: two workers whose BMC never answers join the pool.
		for j := 0; j < 2; j++ {
			name := fmt.Sprintf("%s-u%d", m.label, len(m.refused))
			testWorld.SetBMCFault(bmcAddr(name), world.BMCUnreachable)
			m.refused = append(m.refused, m.inv.addHost(m.t, m.srv, name, modelWorkerCores, "admin"))
		}
		return "bmc-burst"
	case 7:
		return m.machines()
	case 5:
		if len(m.refused) >= 5 {
			return m.fault()
		}
		// A worker whose BMC refuses its credentials joins the pool: whoever claims it must quarantine it
		// and claim another.
		id := m.inv.addHost(m.t, m.srv, fmt.Sprintf("%s-r%d", m.label, len(m.refused)), modelWorkerCores, "refused")
		m.refused = append(m.refused, id)
		return "bmc-refuses"
	case 4:
		// NetBox down (a proxy answering 503 to everything) until a later fault ends it, the operator
		// restarted into it half the time: handling, budgets and releases carry on degraded.
		m.outage = !m.outage
		if !m.outage {
			m.inv.sim.SetOutage(0)
			return "outage-over"
		}
		m.inv.sim.SetOutage(http.StatusServiceUnavailable)
		if m.rng.Intn(2) == 0 {
			m.restart()
			return "outage-restart"
		}
		return "outage"
	case 0:
		m.inv.sim.InjectFault(netboxsim.Fault{Method: "PATCH", Route: netboxsim.RouteDevice, Status: 503, Count: 1 + m.rng.Intn(3)})
		return "fault-patch-503"
	case 1:
		m.inv.sim.InjectFault(netboxsim.Fault{Method: "GET", Route: netboxsim.RouteDevices, Status: 500, Count: 1 + m.rng.Intn(3)})
		return "fault-list-500"
	case 2:
		m.inv.sim.InjectFault(netboxsim.Fault{Method: "GET", Route: netboxsim.RouteDevice, Status: 502, Count: 1 + m.rng.Intn(3)})
		return "fault-get-502"
	default:
		m.inv.sim.DropPatchAnswers(1)
		return "fault-lost-answer"
	}
}

// machines: a CAPI Machine consumes a claimed host (CAPM3 sets its consumerRef), or Cluster API scales one
// away (deprovisioned, consumerRef cleared): scale-downs and deletes must wait for that.
func (m *model) machines() string {
	ctx := context.Background()
	if len(m.machine) > 0 && m.rng.Intn(2) == 0 {
		i := m.rng.Intn(len(m.machine))
		require.NoError(m.t, testWorld.ScaleDown(ctx, m.inv.metal3NS, "machine-"+m.machine[i]))
		m.machine = slices.Delete(m.machine, i, i+1)
		return "capi-scale-down"
	}
	bmhs, _ := metal3Objects(m.t, m.srv, m.inv.metal3NS, "")
	if len(bmhs) == 0 {
		return "machine-none"
	}
	host := m.pick(bmhs)
	taken, err := testWorld.ConsumeHost(ctx, m.inv.metal3NS, host, "machine-"+host, "edge-"+m.label)
	require.NoError(m.t, err)
	if !taken {
		return "machine-none"
	}
	m.machine = append(m.machine, host)
	return "machine-consumes"
}

// snapshot is one read of the requests.
type snapshot map[string]*unstructured.Unstructured // uid → request

func (m *model) requests() snapshot {
	list, err := m.srv.AdminDynamic().Resource(v1alpha1.GVR).List(context.Background(), metav1.ListOptions{LabelSelector: "test=" + m.label})
	require.NoError(m.t, err)
	out := snapshot{}
	for i := range list.Items {
		out[string(list.Items[i].GetUID())] = &list.Items[i]
	}
	return out
}

// records says whether a request of either snapshot records the device id (netbox-<id>) in one of the
// given phases.
func records(snaps []snapshot, uid, id string, phases ...string) bool {
	for _, s := range snaps {
		u, ok := s[uid]
		if !ok {
			continue
		}
		slots, _ := hosts.ReadSlots(u)
		for _, sl := range slots {
			if sl.ID == id && (len(phases) == 0 || contains(strings.Join(phases, ","), string(sl.Phase))) {
				return true
			}
		}
	}
	return false
}

// check verifies the invariants. Reads race with the operator, so the requests are read before and
// after NetBox and Metal3: a holding is justified when either read records it (a record lands before
// its claim, and is dropped only after its release).
func (m *model) check(where string) {
	t := m.t
	t.Helper()
	m.checks++
	fail := func(format string, args ...any) {
		t.Errorf("seed %d, %s: "+format, append([]any{m.seed, where}, args...)...)
	}

	// Never more BMC-fault quarantines than BMC_FAULT_BURST at once (the window outlasts a sequence).
	if n := m.bmcQuarantined() - m.bmcBase; n > hosts.DefaultFaultPolicy.Burst {
		fail("%d hosts quarantined for BMC faults at once, more than BMC_FAULT_BURST %d", n, hosts.DefaultFaultPolicy.Burst)
	}

	// The operator process never dies.
	select {
	case err := <-m.chain.done:
		m.chain.cancel = nil
		fail("the operator stopped by itself: %v", err)
		m.start()
	default:
	}

	r1 := m.requests()
	devices := m.inv.sim.Devices()
	bmhs, err := m.srv.AdminDynamic().Resource(external.BareMetalHostGVR).Namespace(m.inv.metal3NS).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	secrets, err := m.srv.AdminClientset().CoreV1().Secrets(m.inv.metal3NS).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	r2 := m.requests()
	both := []snapshot{r1, r2}
	held := []string{string(hosts.PhaseCandidate), string(hosts.PhaseClaimed), string(hosts.PhaseMetal3Released)}

	// Every active device owned by us is recorded by an existing request.
	for _, d := range devices {
		owner, _ := d.Custom["o2ims_request_uid"].(string)
		if owner == "" {
			continue
		}
		id := netbox.Identity(d.ID)
		if !records(both, owner, id, held...) {
			fail("device %s is owned by %s (status %s) and no existing request records it", id, owner, d.Status)
		}
	}
	// …and vice versa: a host recorded claimed in both reads is active and owned by its request in NetBox.
	byID := map[string]netboxsim.Device{}
	byResource := map[string]netboxsim.Device{}
	view := nbinventory.Config{OCloudID: testOCloud}
	for _, d := range devices {
		byID[netbox.Identity(d.ID)] = d
		byResource[view.ResourceID(d.ID)] = d
	}
	for uid, u := range r1 {
		slots, _ := hosts.ReadSlots(u)
		for _, s := range slots {
			if s.Phase != hosts.PhaseClaimed || !records([]snapshot{r2}, uid, s.ID, string(hosts.PhaseClaimed)) {
				continue
			}
			d := byID[s.ID]
			if owner, _ := d.Custom["o2ims_request_uid"].(string); d.Status != "active" || owner != uid {
				fail("%s records %s as claimed; NetBox has it %s owned by %q", u.GetName(), s.ID, d.Status, owner)
			}
		}
	}
	// The inventory the NBI serves agrees with NetBox on who holds each host: at once for the operator's
	// own claims and releases, within the refresh interval for anything else (the documented bound).
	m.checkView(fail)
	// No device held twice.
	claimedBy := map[string]string{}
	for _, u := range r2 {
		slots, _ := hosts.ReadSlots(u)
		for _, s := range slots {
			if s.Phase != hosts.PhaseClaimed {
				continue
			}
			if other, dup := claimedBy[s.ID]; dup {
				fail("%s is recorded as claimed by %s and by %s", s.ID, other, u.GetName())
			}
			claimedBy[s.ID] = u.GetName()
		}
	}
	// No BareMetalHost or BMC Secret without a recorded claim.
	for _, b := range bmhs.Items {
		uid := b.GetAnnotations()[AnnotationRequestUID]
		if !records(both, uid, b.GetName(), string(hosts.PhaseCandidate), string(hosts.PhaseClaimed)) {
			fail("BareMetalHost %s (request %s) has no recorded claim", b.GetName(), uid)
		}
	}
	for _, s := range secrets.Items {
		id, ok := strings.CutSuffix(s.Name, "-bmc-secret")
		if !ok {
			continue
		}
		if uid := s.Annotations[AnnotationRequestUID]; !records(both, uid, id, string(hosts.PhaseCandidate), string(hosts.PhaseClaimed)) {
			fail("BMC Secret %s (request %s) has no recorded claim", s.Name, uid)
		}
	}
	// Never a consumed host released: a BareMetalHost a Machine consumes is not being deleted and its
	// device stays active.
	for _, b := range bmhs.Items {
		if ref, _, _ := unstructured.NestedMap(b.Object, "spec", "consumerRef"); ref != nil && (b.GetDeletionTimestamp() != nil || byID[b.GetName()].Status != "active") {
			fail("BareMetalHost %s is consumed by %v and being released (device %s)", b.GetName(), ref["name"], byID[b.GetName()].Status)
		}
	}
	// A fulfilled or failed request's status does not move, nor its budget restart, without a spec change.
	for uid, u := range r2 {
		if u.GetDeletionTimestamp() != nil {
			continue
		}
		gen := u.GetGeneration()
		st := m.seen[uid]
		if st == nil || st.generation != gen {
			st = &modelSeen{uid: uid, generation: gen}
			if prev := m.seen[uid]; prev != nil {
				st.budgetStart = prev.budgetStart
			}
			m.seen[uid] = st
		}
		handled := specHandled(u)
		bs, _, _ := unstructured.NestedString(u.Object, "status", "extensions", budgetStartKey)
		if bs != st.budgetStart {
			st.budgetChanges++
			if st.handledAtGen || st.budgetChanges > 1 {
				fail("%s: the budget restarted (%q → %q) without a spec change", u.GetName(), st.budgetStart, bs)
			}
			st.budgetStart = bs
		}
		state := v1alpha1.StatusOf(u).State
		terminal := state == v1alpha1.StateFulfilled || state == v1alpha1.StateFailed
		now := map[string]any{"provisioningStatus": nested(u, "status", "provisioningStatus"), "provisionedResourceSet": nested(u, "status", "provisionedResourceSet")}
		if st.terminal != nil && !reflect.DeepEqual(st.terminal, now) {
			fail("%s: a %v status moved without a spec change: now %v", u.GetName(), st.terminal, now)
		}
		if terminal && handled {
			st.terminal = now
		}
		if handled {
			st.handledAtGen = true
		}
		// A fulfilled request's ids resolve in the inventory: each is the resource id the inventory API
		// answers (inventory's Config.ResourceID, computed as the chain computes it) of a device
		// NetBox has active and owned by the request — never a host whose BMC refused it.
		if state == v1alpha1.StateFulfilled && handled {
			for _, rid := range v1alpha1.ResourceSetOf(u).InfrastructureResourceIDs {
				d, ok := byResource[rid]
				if owner, _ := d.Custom["o2ims_request_uid"].(string); !ok || d.Status != "active" || owner != uid {
					fail("%s is fulfilled with resource id %s, which resolves to no device it holds (%v %s)", u.GetName(), rid, ok, d.Status)
				}
				if ok && slices.Contains(m.refused, d.ID) {
					fail("%s is fulfilled with %s, whose BMC refuses its credentials", u.GetName(), netbox.Identity(d.ID))
				}
			}
		}
		// A fulfilled request's PackageVariant has its current spec: a spec change (in flight or after)
		// reaches Porch before the request can say fulfilled.
		if state == v1alpha1.StateFulfilled && handled {
			spec, _, _ := unstructured.NestedMap(u.Object, "spec")
			pv, ok := getPV(t, m.srv, u.GetName())
			if !ok {
				fail("%s is fulfilled without a package variant", u.GetName())
				continue
			}
			up, _, _ := unstructured.NestedMap(pv.Object, "spec", "upstream")
			if up["package"] != spec["templateName"] || up["workspaceName"] != spec["templateVersion"] {
				fail("%s is fulfilled for %v/%v; its package variant renders %v/%v", u.GetName(), spec["templateName"], spec["templateVersion"], up["package"], up["workspaceName"])
			}
			// Never fulfilled on an unrendered spec: after a change, Porch names a Published revision
			// locked to the requested template (directory; its v<revision> checked by porch.go).
			if _, rewritten := specUpdatedAt(pv); rewritten {
				pr, published := publishedTarget(t, m.srv, u.GetName())
				ref := ""
				if pr != nil {
					ref, _, _ = unstructured.NestedString(pr.Object, "status", "upstreamLock", "git", "ref")
				}
				if !published || !strings.HasPrefix(ref, fmt.Sprint(spec["templateName"])+"/v") {
					fail("%s is fulfilled on %v, not on a published revision of %v", u.GetName(), ref, spec["templateName"])
				} else if differs := m.renderedNotCarried(pr, fmt.Sprint(nested(u, "spec", "templateParameters", "clusterName"))); differs != "" {
					fail("%s is fulfilled on %s, whose Cluster the live one does not carry (%s)", u.GetName(), pr.GetName(), differs)
				}
			}
		}
	}
}

// renderedNotCarried reads the published revision's content as the operator does and says which fields
// of the Cluster it renders the live Cluster lacks ("" when it carries them all).
func (m *model) renderedNotCarried(pr *unstructured.Unstructured, cluster string) string {
	prr, err := m.srv.AdminDynamic().Resource(external.PackageRevisionResourcesGVR).Namespace("default").Get(context.Background(), pr.GetName(), metav1.GetOptions{})
	if err != nil {
		return "no content: " + err.Error()
	}
	resources, _, _ := unstructured.NestedMap(prr.Object, "spec", "resources")
	rendered := findCluster(resources, cluster, "default")
	if rendered == nil {
		return "it renders no Cluster " + cluster
	}
	live, err := m.srv.AdminDynamic().Resource(external.ClusterGVR("v1beta2")).Namespace("default").Get(context.Background(), cluster, metav1.GetOptions{})
	if err != nil {
		return "no live Cluster: " + err.Error()
	}
	return notCarried(rendered, live)
}

func nested(u *unstructured.Unstructured, path ...string) any {
	v, _, _ := unstructured.NestedFieldCopy(u.Object, path...)
	return v
}

// specHandled: the diff-base's spec is the current spec (the operator finished handling this spec).
func specHandled(u *unstructured.Unstructured) bool {
	raw := u.GetAnnotations()[Prefix+"/last-handled-configuration"]
	if raw == "" {
		return false
	}
	var base map[string]any
	if json.Unmarshal([]byte(raw), &base) != nil {
		return false
	}
	cur, _ := json.Marshal(u.Object["spec"])
	var spec any
	_ = json.Unmarshal(cur, &spec)
	return reflect.DeepEqual(base["spec"], spec)
}

// drain ends a sequence: inventory on, faults cleared, every request deleted; then every request must
// go and every host be back in the pool with nothing left in Metal3.
func (m *model) drain() {
	t := m.t
	m.inv.sim.SetOutage(0)
	m.outage = false
	m.inv.sim.ClearFaults()
	m.inv.sim.DropPatchAnswers(0)
	if !m.invOn {
		m.invOn = true
		m.restart()
	}
	for _, n := range m.live() {
		deletePR(t, m.srv, n)
	}
	for _, h := range m.machine { // the deletions wait for Cluster API to scale these away
		require.NoError(t, testWorld.ScaleDown(context.Background(), m.inv.metal3NS, "machine-"+h))
	}
	eventually(t, 120*time.Second, func() bool {
		m.check("drain")
		return len(m.requests()) == 0
	}, "seed %d: requests never finished deleting", m.seed)
	for _, id := range m.hosts {
		d, _ := m.inv.sim.Device(id)
		if d.Status != "staged" || d.Custom["o2ims_request_uid"] != nil {
			t.Errorf("seed %d: host %s left %s owned by %v", m.seed, netbox.Identity(id), d.Status, d.Custom["o2ims_request_uid"])
		}
	}
	// A host whose BMC refused its credentials is quarantined with the reason once a request saw the
	// refusal, or back in the pool when none did; never left owned.
	quarantined := 0
	defer func() {
		if len(m.refused) > 0 {
			t.Logf("seed %d: %d hosts refused their credentials, %d of them quarantined", m.seed, len(m.refused), quarantined)
		}
	}()
	for _, id := range m.refused {
		d, _ := m.inv.sim.Device(id)
		switch {
		case d.Custom["o2ims_request_uid"] != nil:
			t.Errorf("seed %d: refused host %s left owned by %v", m.seed, netbox.Identity(id), d.Custom["o2ims_request_uid"])
		case d.Status == "failed":
			quarantined++
			if len(d.Changelog) == 0 || !strings.Contains(d.Changelog[len(d.Changelog)-1], "credentials-refused") &&
				!strings.Contains(d.Changelog[len(d.Changelog)-1], "registration-failed") {
				t.Errorf("seed %d: refused host %s failed without its reason: %v", m.seed, netbox.Identity(id), d.Changelog)
			}
		case d.Status != "staged":
			t.Errorf("seed %d: refused host %s left %s", m.seed, netbox.Identity(id), d.Status)
		}
	}
	bmhs, secrets := metal3Objects(t, m.srv, m.inv.metal3NS, "")
	if len(bmhs)+len(secrets) > 0 {
		t.Errorf("seed %d: left in Metal3: %v %v", m.seed, bmhs, secrets)
	}
	m.chain.stop(t)
}

// viewBound is the documented bound on the view's lag behind NetBox for a change it did not make
// itself (the test refreshes every 200 ms), with room for a loaded machine.
const viewBound = 3 * time.Second

// checkView compares who the view says holds each pool host with NetBox, read before and after it.
func (m *model) checkView(fail func(string, ...any)) {
	synced, lastRefresh := false, time.Time{}
	if m.chain.view != nil {
		synced, lastRefresh = m.chain.view.Synced()
	}
	if !synced {
		return
	}
	before := m.inv.sim.Devices()
	objs := m.chain.view.Objects()
	after := map[int32]netboxsim.Device{}
	for _, d := range m.inv.sim.Devices() {
		after[d.ID] = d
	}
	cfg := nbinventory.Config{OCloudID: testOCloud}
	for _, d := range before {
		a := after[d.ID]
		// The bound holds while NetBox answers: a change no refresh has started after (NetBox down or
		// failing since) is not yet the view's to know, unless the operator made it.
		if managed, _ := d.Custom["o2ims_managed"].(bool); !managed || time.Since(a.LastUpdated) < viewBound ||
			!a.LastUpdated.Before(lastRefresh.Add(-time.Second)) {
			continue
		}
		want, _ := d.Custom["o2ims_request_uid"].(string)
		e, ok := objs[cfg.ResourceID(d.ID)]
		if !ok || e.Post == nil {
			fail("host %s is in NetBox's pool but not in the inventory", netbox.Identity(d.ID))
			continue
		}
		var r struct {
			Extensions map[string]any `json:"extensions"`
		}
		if err := json.Unmarshal(e.Post.JSON, &r); err != nil {
			fail("inventory resource of %s: %v", netbox.Identity(d.ID), err)
			continue
		}
		if got, _ := r.Extensions[nbinventory.ExtRequestUID].(string); got != want {
			fail("the inventory says %s is held by %q; NetBox says %q", netbox.Identity(d.ID), got, want)
		}
	}
}
