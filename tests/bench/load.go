package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

const runLabel = "o2ims-bench/run"

var prGVR = v1alpha1.GVR

// fastAdmin is an admin dynamic client without a meaningful client-side limit: the load generator must
// never be what bounds the operator.
func fastAdmin(st *stack.Stack) dynamic.Interface {
	cfg := st.API.AdminConfig()
	cfg.QPS, cfg.Burst = 1e5, 1e5
	return dynamic.NewForConfigOrDie(cfg)
}

func provisioningRequest(name, run string, hosts []any) *unstructured.Unstructured {
	params := map[string]any{"clusterName": name, "labels": map[string]any{"nephio.org/site-type": "edge"}}
	if hosts != nil {
		params["hosts"] = hosts
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": prGVR.GroupVersion().String(), "kind": "ProvisioningRequest",
		"metadata": map[string]any{"name": name, "labels": map[string]any{runLabel: run}},
		"spec": map[string]any{
			"name": "bench " + name, "description": "benchmark request",
			"templateName": "nephio-workload-cluster", "templateVersion": "v3.0.0", "templateParameters": params,
		},
	}}
}

// createAll creates the objects with `workers` concurrent callers and returns when each create returned.
func createAll(ctx context.Context, dyn dynamic.Interface, objs []*unstructured.Unstructured, workers int) (map[string]time.Time, error) {
	return createAllOf(ctx, dyn.Resource(prGVR), objs, workers)
}

// createAllOf is createAll for any resource (namespaced: objs carry their namespace).
func createAllOf(ctx context.Context, res dynamic.NamespaceableResourceInterface, objs []*unstructured.Unstructured, workers int) (map[string]time.Time, error) {
	done := make(map[string]time.Time, len(objs))
	var mu sync.Mutex
	var firstErr error
	next := make(chan *unstructured.Unstructured)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range next {
				_, err := res.Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{})
				at := time.Now()
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("creating %s: %w", u.GetName(), err)
				}
				done[u.GetName()] = at
				mu.Unlock()
			}
		}()
	}
	for _, u := range objs {
		next <- u
	}
	close(next)
	wg.Wait()
	return done, firstErr
}

// tracker follows the provisioning state of the requests of one run through a watch.
type tracker struct {
	mu        sync.Mutex
	state     map[string]string
	fulfilled map[string]time.Time
	message   map[string]string
	// shown: every (state, message) each request was seen with, as the operator wrote them: a watch
	// delivers every version, so these are the status values its status PATCHes set.
	shown map[string]map[string]bool
}

func stateOf(u *unstructured.Unstructured) (string, string) {
	st := v1alpha1.StatusOf(u)
	return st.State, st.Message
}

func (t *tracker) record(u *unstructured.Unstructured, at time.Time) {
	s, m := stateOf(u)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.state[u.GetName()] = s
	t.message[u.GetName()] = m
	if s != "" {
		if t.shown[u.GetName()] == nil {
			t.shown[u.GetName()] = map[string]bool{}
		}
		t.shown[u.GetName()][s+": "+m] = true
	}
	if s == v1alpha1.StateFulfilled {
		if _, seen := t.fulfilled[u.GetName()]; !seen {
			t.fulfilled[u.GetName()] = at
		}
	}
}

// counts is how many requests are in each state.
func (t *tracker) counts() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]int{}
	for _, s := range t.state {
		out[s]++
	}
	return out
}

func track(ctx context.Context, dyn dynamic.Interface, selector string) (*tracker, error) {
	t := &tracker{state: map[string]string{}, fulfilled: map[string]time.Time{}, message: map[string]string{}, shown: map[string]map[string]bool{}}
	list, err := dyn.Resource(prGVR).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	for i := range list.Items {
		t.record(&list.Items[i], time.Now())
	}
	rv := list.GetResourceVersion()
	go func() {
		for ctx.Err() == nil {
			w, err := dyn.Resource(prGVR).Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: rv, AllowWatchBookmarks: true})
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			expired := false
			for ev := range w.ResultChan() {
				now := time.Now()
				if ev.Type == watch.Error {
					if st, ok := ev.Object.(*metav1.Status); ok && st.Code == 410 {
						expired = true
					}
					break
				}
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				rv = u.GetResourceVersion()
				if ev.Type != watch.Bookmark && ev.Type != watch.Deleted {
					t.record(u, now)
				}
			}
			w.Stop()
			if expired { // relist: the states are read again
				if l, err := dyn.Resource(prGVR).List(ctx, metav1.ListOptions{LabelSelector: selector}); err == nil {
					for i := range l.Items {
						t.record(&l.Items[i], time.Now())
					}
					rv = l.GetResourceVersion()
				}
			}
		}
	}()
	return t, nil
}

// waitFor polls until cond holds on the state counts, or the timeout.
func (t *tracker) waitFor(ctx context.Context, timeout time.Duration, cond func(map[string]int) bool) error {
	deadline := time.Now().Add(timeout)
	for !cond(t.counts()) {
		if time.Now().After(deadline) {
			return fmt.Errorf("not reached within %s: %v", timeout, t.counts())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// loadRun is one load measurement.
type loadRun struct {
	Name         string
	Args         string
	N            int
	CreateSpan   time.Duration // first create sent → last create answered
	Total        time.Duration // first create sent → last request fulfilled
	Fulfilled    int
	Failed       int
	Rate         float64 // fulfilled requests per second over Total
	LatP50       time.Duration
	LatP99       time.Duration
	Writes       map[string]float64 // "resource" and "resource METHOD"
	Passes       float64            // handler runs
	RateLimiter  histDelta
	Workers      int
	PeakRSS      uint64
	CPU          cpuWindow
	APIServer    apiRequests    // everything the API server served during the run (operator, world, creates)
	EventsKept   int            // events about this run's requests the API server holds
	EventReasons map[string]int // their reasons (with their counts)
	EventsDue    float64        // events the operator's handlers and framework posted (o2ims_events_posted_total)
	EventsHeld   int            // what the API server holds of them: its events' counts summed (a repeat is a count)
	// Statuses: how many requests were seen with each status (state: message), and the distinct ones
	// per request on average.
	Statuses           map[string]int
	StatusesPerRequest float64
	EventsLost         float64            // events the operator's recorder dropped, by its own count (o2ims_events_dropped_total)
	Codes              map[string]float64 // the operator's write answers other than 2xx, by "resource METHOD code"
	Note               string
	Del                deletion // the same requests deleted at once afterwards
}

// CPUPer1000 is the operator's CPU seconds per 1 000 fulfilled requests.
func (r loadRun) CPUPer1000() float64 {
	return r.CPU.ByPid["operator"] / float64(max(r.Fulfilled, 1)) * 1000
}

func (r loadRun) WritesPerRequest(withEvents bool) float64 {
	if r.Fulfilled == 0 {
		return 0
	}
	total := 0.0
	for _, res := range []string{"provisioningrequests", "provisioningrequests/status", "packagevariants"} {
		total += r.Writes[res]
	}
	if withEvents {
		total += r.Writes["events"]
	}
	return total / float64(r.Fulfilled)
}

// AllWrites is every write the operator made (leases included) per fulfilled request.
func (r loadRun) AllWrites() float64 {
	total := 0.0
	for k, v := range r.Writes {
		if !containsSpace(k) {
			total += v
		}
	}
	if r.Fulfilled == 0 {
		return 0
	}
	return total / float64(r.Fulfilled)
}

func containsSpace(s string) bool {
	for _, c := range s {
		if c == ' ' {
			return true
		}
	}
	return false
}

// startSelected starts an operator handling only the requests labelled with run, with extra arguments
// after the stack's, and waits until it handles (holds the Lease when it campaigns for one).
func startSelected(ctx context.Context, st *stack.Stack, run string, leaderElect bool, extra ...string) (*stack.Operator, error) {
	env := map[string]string{"PROVISIONING_REQUEST_SELECTOR": runLabel + "=" + run}
	// The Go runtime as the shipped Deployment runs it: its GOGC, and the soft memory limit main.go
	// would read from the container's cgroup (there is none here).
	limit, gogc, err := shippedMemorySettings()
	if err != nil {
		return nil, err
	}
	env["GOMEMLIMIT"] = strconv.FormatInt(limit.Value()*9/10, 10)
	if gogc != "" {
		env["GOGC"] = gogc
	}
	args := append([]string{}, extra...)
	if cpuProfileDir != "" {
		ports, err := kubeapi.FreePorts(1)
		if err != nil {
			return nil, err
		}
		addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
		args = append(args, "--debug-pprof="+addr)
		pprofAddrs[run] = addr
	}
	op, err := st.StartOperatorWith(ctx, env, args)
	if err != nil {
		return nil, err
	}
	if leaderElect {
		deadline := time.Now().Add(30 * time.Second)
		for {
			m, err := op.Scrape()
			if err == nil && m.Sum("leader_election_master_status", nil) == 1 {
				break
			}
			if time.Now().After(deadline) {
				_ = op.Stop(5 * time.Second)
				return nil, errors.New("the operator never took the Lease")
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return op, nil
}

// runLoad creates n requests at once for op (which selects run) and follows them to fulfilled.
func runLoad(ctx context.Context, st *stack.Stack, op *stack.Operator, name, args, run string, n, workers int) (loadRun, error) {
	r := loadRun{Name: name, Args: args, N: n, Workers: workers}
	dyn := fastAdmin(st)
	selector := runLabel + "=" + run
	tctx, stopTracking := context.WithCancel(ctx)
	defer stopTracking()
	t, err := track(tctx, dyn, selector)
	if err != nil {
		return r, err
	}
	objs := make([]*unstructured.Unstructured, n)
	for i := range objs {
		objs[i] = provisioningRequest(fmt.Sprintf("%s-%04d", run, i), run, nil)
	}
	before, err := op.Scrape()
	if err != nil {
		return r, err
	}
	watchPids := map[string]int{"operator": op.Pid()}
	if pids := st.API.PIDs(); len(pids) == 2 {
		watchPids["etcd"], watchPids["kube-apiserver"] = pids[0], pids[1]
	}
	api0, err := scrapeAPIServer(ctx, st)
	if err != nil {
		return r, err
	}
	m := startMeter(watchPids)
	t0 := time.Now()
	if addr := pprofAddrs[run]; addr != "" {
		go func() {
			saveProfile(ctx, addr, "profile?seconds=40", filepath.Join(cpuProfileDir, run+".cpu.pprof"))
			saveProfile(ctx, addr, "allocs", filepath.Join(cpuProfileDir, run+".allocs.pprof"))
			saveProfile(ctx, addr, "heap?gc=1", filepath.Join(cpuProfileDir, run+".heap.pprof"))
		}()
		go saveAPIServerProfile(ctx, st, filepath.Join(cpuProfileDir, run+".kube-apiserver.cpu.pprof"))
	}
	created, cerr := createAll(ctx, dyn, objs, 64)
	for _, at := range created {
		if d := at.Sub(t0); d > r.CreateSpan {
			r.CreateSpan = d
		}
	}
	if cerr != nil {
		return r, cerr
	}
	werr := t.waitFor(ctx, 3*time.Minute, func(c map[string]int) bool {
		return c[v1alpha1.StateFulfilled]+c[v1alpha1.StateFailed] >= n
	})
	r.CPU = m.end()
	if api1, err := scrapeAPIServer(ctx, st); err == nil {
		r.APIServer = api1.minus(api0)
	}
	c := t.counts()
	r.Fulfilled, r.Failed = c[v1alpha1.StateFulfilled], c[v1alpha1.StateFailed]
	t.mu.Lock()
	r.Statuses = map[string]int{}
	shown := 0
	for _, set := range t.shown {
		for st := range set {
			r.Statuses[st]++
		}
		shown += len(set)
	}
	r.StatusesPerRequest = float64(shown) / float64(max(len(t.shown), 1))
	var lats []float64
	var last time.Time
	for nm, at := range t.fulfilled {
		if at.After(last) {
			last = at
		}
		lats = append(lats, at.Sub(created[nm]).Seconds())
	}
	t.mu.Unlock()
	sort.Float64s(lats)
	r.LatP50 = time.Duration(quantile(lats, 0.5) * float64(time.Second))
	r.LatP99 = time.Duration(quantile(lats, 0.99) * float64(time.Second))
	r.Total = last.Sub(t0)
	if r.Total > 0 {
		r.Rate = float64(r.Fulfilled) / r.Total.Seconds()
	}
	if werr != nil {
		r.Note = werr.Error()
	}
	// The writes that trail the last state change (its event) are the request's too: wait until the
	// operator has been quiet for two seconds.
	after, err := settle(op, 2*time.Second, 20*time.Second)
	if err != nil {
		return r, err
	}
	r.Writes = writesByMethod(before, after)
	r.Passes = counterDelta(before, after, "o2ims_handler_runs_total", nil)
	r.RateLimiter = histogramDelta(before, after, "rest_client_rate_limiter_duration_seconds", nil)
	r.Codes = failedWrites(before, after)
	r.EventsDue = counterDelta(before, after, "o2ims_events_posted_total", nil)
	r.EventsLost = counterDelta(before, after, "o2ims_events_dropped_total", nil)
	r.EventReasons = map[string]int{}
	if evs, err := st.API.AdminClientset().CoreV1().Events("default").List(ctx, metav1.ListOptions{}); err == nil {
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind == "ProvisioningRequest" && strings.HasPrefix(e.InvolvedObject.Name, run+"-") {
				r.EventsKept++
				r.EventReasons[e.Reason] += int(max(e.Count, 1))
				r.EventsHeld += int(max(e.Count, 1))
			}
		}
	}
	if mem, err := op.Memory(); err == nil {
		r.PeakRSS = mem.Peak
	}
	return r, nil
}

// settle scrapes until the operator's writes have not changed for quiet.
func settle(op *stack.Operator, quiet, max time.Duration) (stack.Metrics, error) {
	deadline := time.Now().Add(max)
	last, err := op.Scrape()
	if err != nil {
		return nil, err
	}
	lastTotal := sumMap(stack.Writes(last))
	since := time.Now()
	for time.Since(since) < quiet && time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
		m, err := op.Scrape()
		if err != nil {
			return nil, err
		}
		if tot := sumMap(stack.Writes(m)); tot != lastTotal {
			lastTotal, since = tot, time.Now()
		}
		last = m
	}
	return last, nil
}

func sumMap(m map[string]float64) float64 {
	t := 0.0
	for k, v := range m {
		if k != "leases" { // the Lease renewals tick on their own
			t += v
		}
	}
	return t
}

// failedWrites is the operator's writes answered other than 2xx, by "resource METHOD code" (a delta).
func failedWrites(before, after stack.Metrics) map[string]float64 {
	return restRequestsDelta(before, after, func(l map[string]string) []string {
		if l["method"] == "GET" || strings.HasPrefix(l["code"], "2") {
			return nil
		}
		return []string{l["resource"] + " " + l["method"] + " " + l["code"]}
	})
}

// createExtra creates n requests labelled nbi-cache (no operator handles them).
func createExtra(ctx context.Context, dyn dynamic.Interface, n int) error {
	if n <= 0 {
		return nil
	}
	return createRealistic(ctx, dyn, "nbi-cache", "nbi-cache", 0, n, 64) // memory.go: as real ones are made
}

// Development only (--cpu-profile): where each run's operator serves pprof, and where profiles go.
var (
	cpuProfileDir string
	pprofAddrs    = map[string]string{}
)

// saveAPIServerProfile saves kube-apiserver's CPU profile over the same 40 s (its /debug/pprof, as an
// admin): where the machine's busiest process spends what the operator asks of it.
func saveAPIServerProfile(ctx context.Context, st *stack.Stack, file string) {
	b, err := st.API.AdminClientset().Discovery().RESTClient().Get().AbsPath("/debug/pprof/profile").
		Param("seconds", "40").Timeout(time.Minute).DoRaw(ctx)
	if err == nil {
		err = os.WriteFile(file, b, 0o644)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "kube-apiserver profile: %v\n", err)
	}
}

// saveProfile saves one of the operator's pprof profiles (a CPU profile's query says for how long).
func saveProfile(ctx context.Context, addr, profile, file string) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/debug/pprof/"+profile, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(os.Stderr, "profile %s: %v\n", profile, err)
		return
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil {
		err = os.WriteFile(file, b, 0o644)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "profile %s: %v\n", profile, err)
	}
}
