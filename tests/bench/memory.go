package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

// lastApplied is the annotation client-side `kubectl apply` stores the applied object in.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// realisticRequest is a ProvisioningRequest as FOCOM or a person would write it; site spreads them
// over 50 sites, so the filter `labels/site eq 7` matches a fiftieth.
func realisticRequest(name, run string, i int) *unstructured.Unstructured {
	u := provisioningRequest(name, run, nil)
	spec := u.Object["spec"].(map[string]any)
	spec["description"] = fmt.Sprintf("Workload cluster %s for the edge site %d, provisioned by FOCOM", name, i%50)
	params := spec["templateParameters"].(map[string]any)
	params["labels"].(map[string]any)["site"] = strconv.Itoa(i % 50)
	params["kubernetesVersion"] = "v1.31.2"
	params["nodes"] = map[string]any{"controlPlane": int64(1), "workers": int64(2)}
	return u
}

// createRealistic creates n requests the two ways they reach a real cluster: the even ones
// server-side applied (managedFields of every field, fieldManager focom), the odd ones as client-side
// `kubectl apply` creates them (the whole object once more in the last-applied annotation, and the
// managedFields of kubectl-client-side-apply). As served they are 1.4–2.4 KB, most of it those two.
func createRealistic(ctx context.Context, dyn dynamic.Interface, prefix, run string, from, n, workers int) error {
	next := make(chan int)
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				name := fmt.Sprintf("%s-%06d", prefix, i)
				u := realisticRequest(name, run, i)
				var err error
				if i%2 == 0 {
					_, err = dyn.Resource(prGVR).Apply(ctx, name, u, metav1.ApplyOptions{FieldManager: "focom", Force: true})
				} else {
					applied, _ := json.Marshal(u.Object)
					u.SetAnnotations(map[string]string{lastApplied: string(applied) + "\n"})
					_, err = dyn.Resource(prGVR).Create(ctx, u, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"})
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("creating %s: %w", name, err)
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := from; i < from+n && ctx.Err() == nil; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return firstErr
}

// holdLease makes this process the leader of the operator's Lease, so an operator started with
// --leader-elect caches everything and handles nothing (as a standby replica does). It returns once held
// and keeps it until ctx ends. The record says it lasts 10 minutes (a candidate honours the holder's
// leaseDurationSeconds), so an API server slowed by the creates cannot make the operator take over;
// should a renewal fail all the same, it campaigns again.
func holdLease(ctx context.Context, st *stack.Stack) error {
	kube, err := kubernetes.NewForConfig(st.API.AdminConfig())
	if err != nil {
		return err
	}
	held := make(chan struct{})
	var once sync.Once
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Name: "o2ims-operator", Namespace: stack.OperatorNamespace},
			Client:     kube.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: "bench-lease-holder"},
		},
		LeaseDuration: 10 * time.Minute, RenewDeadline: 2 * time.Minute, RetryPeriod: 5 * time.Second,
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { once.Do(func() { close(held) }) },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return err
	}
	go func() {
		for ctx.Err() == nil {
			le.Run(ctx)
		}
	}()
	select {
	case <-held:
		return nil
	case <-time.After(60 * time.Second):
		return fmt.Errorf("the bench did not get the Lease within 60s")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// shippedMemorySettings are the memory limit and GOGC of the operator container in
// manifests/base/deployment.yaml ("" GOGC: the default).
func shippedMemorySettings() (resource.Quantity, string, error) {
	root, err := kubeapi.RepoRoot()
	if err != nil {
		return resource.Quantity{}, "", err
	}
	raw, err := os.ReadFile(filepath.Join(root, "manifests", "base", "deployment.yaml"))
	if err != nil {
		return resource.Quantity{}, "", err
	}
	m := regexp.MustCompile(`(?m)^\s+limits:\s*\n\s+memory:\s*(\S+)`).FindSubmatch(raw)
	if m == nil {
		return resource.Quantity{}, "", fmt.Errorf("no memory limit in manifests/base/deployment.yaml")
	}
	q, err := resource.ParseQuantity(string(m[1]))
	gogc := ""
	if g := regexp.MustCompile(`(?m)^\s+- name: GOGC\s*\n\s+value:\s*"?(\w+)"?`).FindSubmatch(raw); g != nil {
		gogc = string(g[1])
	}
	return q, gogc, err
}

// heapShare is one line of a heap breakdown: what a part of the program holds, from pprof's
// inuse_space after a forced collection.
type heapShare struct {
	What  string
	Focus string
	Bytes float64
}

// heapProfile is a live-heap profile of the operator (pprof's /debug/pprof/heap?gc=1).
type heapProfile struct {
	Total  float64
	Shares []heapShare
	Top    string // go tool pprof -top, the first entries
}

func (h heapProfile) share(focus string) string {
	for _, s := range h.Shares {
		if s.Focus == focus {
			return mib(uint64(s.Bytes))
		}
	}
	return "0"
}

// heapParts are the holders the report breaks the heap into, as pprof -focus expressions over the
// allocating stacks.
var heapParts = []heapShare{
	{What: "objects decoded from JSON (the informers' caches, mostly)", Focus: `encoding/json\.\(\*decodeState\)`},
	{What: "informer stores and indexes", Focus: `tools/cache\.\(\*threadSafeMap\)|tools/cache\.\(\*storeIndex\)|tools/cache\.\(\*cache\)`},
	{What: "framework: per-object state and work queue", Focus: `framework\.\(\*controller\)|util/workqueue`},
	{What: "NBI: id order, JSON and attributes kept per request", Focus: `o2ims-operator/nbi/provisioning\.`},
}

var pprofTotal = regexp.MustCompile(`Showing nodes accounting for ([0-9.]+)([kMG]?B), [0-9.]+% of ([0-9.]+)([kMG]?B) total`)

func pprofBytes(v, unit string) float64 {
	f, _ := strconv.ParseFloat(v, 64)
	switch unit {
	case "kB":
		f *= 1 << 10
	case "MB":
		f *= 1 << 20
	case "GB":
		f *= 1 << 30
	}
	return f
}

// takeHeapProfile fetches the live heap from the operator's --debug-pprof listener and breaks it down
// with go tool pprof.
func takeHeapProfile(ctx context.Context, pprofAddr, dir, name string) (heapProfile, error) {
	var hp heapProfile
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+pprofAddr+"/debug/pprof/heap?gc=1", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return hp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		return hp, fmt.Errorf("heap profile: %d %v", resp.StatusCode, err)
	}
	file := filepath.Join(dir, name+".pb.gz")
	if err := os.WriteFile(file, body, 0o644); err != nil {
		return hp, err
	}
	pprof := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "go", append([]string{"tool", "pprof", "-sample_index=inuse_space", "-top"}, append(args, file)...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	top, err := pprof("-nodecount=12")
	if err != nil {
		return hp, fmt.Errorf("go tool pprof: %v: %s", err, top)
	}
	if m := pprofTotal.FindStringSubmatch(top); m != nil {
		hp.Total = pprofBytes(m[3], m[4])
	}
	if i := strings.Index(top, "      flat"); i >= 0 {
		hp.Top = strings.TrimRight(top[i:], "\n")
	}
	for _, part := range heapParts {
		// With every node shown, the nodes "accounting for" are all the focused samples.
		out, err := pprof("-nodecount=100000", "-focus="+part.Focus)
		if err != nil {
			continue // no sample matches: pprof says so and fails
		}
		if m := pprofTotal.FindStringSubmatch(out); m != nil {
			part.Bytes = pprofBytes(m[1], m[2])
		}
		hp.Shares = append(hp.Shares, part)
	}
	return hp, nil
}

// memoryPoint is one size of cache in section 7.
type memoryPoint struct {
	Cached      int
	MemLimit    string        // the container memory limit this point runs as (GOMEMLIMIT = 90% of it)
	GOGC        string        // the shipped Deployment's ("" = 100)
	CreateTook  time.Duration // creating the requests added for this point
	Ready       time.Duration // operator start → /readyz 200
	ReadyRSS    uint64
	ReadyHeap   heapProfile
	Named       samples
	FirstPage   samples
	Filtered    samples
	FilterMatch int
	Load        nbiLoad
	LoadHeap    heapProfile
	APIGets     float64
	Leading     float64 // leader_election_master_status at the end (must be 0: a standby)
	HandlerRuns float64 // o2ims_handler_runs_total at the end (must be 0)
}

// memoryResult is section 7: the operator's memory and NBI latency with a large cache.
type memoryResult struct {
	Points  []memoryPoint
	Clients int
	CPU     cpuWindow
}

// Memory targets (issue 15).
const (
	targetRSSReady10k   = 100 << 20
	targetRSSLoad10k    = 150 << 20
	targetRSS100k       = 800 << 20
	targetReady100k     = 60 * time.Second
	targetFilteredP99   = 250 * time.Millisecond
	memoryFilter        = "?filter=(eq,provisioningRequestData/templateParameters/labels/site,7)"
	memoryLoadFor       = 20 * time.Second
	memoryCreateWorkers = 96
)

// stackMemory is section 7: a fresh stack, the Lease held by this process, requests created
// realistically up to each size in sizes; at each size an operator instance with --leader-elect (a
// standby: it caches all and handles nothing) is started, its memory and NBI latencies measured, and
// stopped.
func stackMemory(ctx context.Context, c *config, rep *report, sizes []int) error {
	shipped, shippedGOGC, err := shippedMemorySettings()
	if err != nil {
		return err
	}
	say(c, "6. memory: starting stack C (the operator as shipped, a standby replica: the Lease held by the bench)")
	st, err := startStack(ctx, c, nil)
	if err != nil {
		return err
	}
	defer st.Stop()
	leaseCtx, release := context.WithCancel(ctx)
	defer release()
	if err := holdLease(leaseCtx, st); err != nil {
		return err
	}
	dyn := fastAdmin(st)
	res := &memoryResult{Clients: c.clients}
	m := startMeter(nil)
	have := 0
	for _, size := range sizes {
		// As a pod runs: the Go runtime's soft limit at 90% of the container's limit (main.go reads it
		// from the cgroup; here there is none, so it is passed as GOMEMLIMIT). The shipped Deployment's
		// limit up to --cached; beyond, the limit README asks for at that scale.
		limit := shipped
		if size > c.cached {
			if limit, err = resource.ParseQuantity(c.largeLimit); err != nil {
				return fmt.Errorf("--large-memory-limit: %w", err)
			}
		}
		pt := memoryPoint{Cached: size, MemLimit: limit.String(), GOGC: shippedGOGC}
		say(c, "6. creating %d more realistic requests (half server-side applied, half kubectl-apply'd), %d in all", size-have, size)
		t := time.Now()
		if err := createRealistic(ctx, dyn, "mem", "memory", have, size-have, memoryCreateWorkers); err != nil {
			return err
		}
		pt.CreateTook = time.Since(t)
		have = size
		say(c, "   created in %s; starting the standby instance", pt.CreateTook.Round(100*time.Millisecond))
		ports, err := kubeapi.FreePorts(1)
		if err != nil {
			return err
		}
		pprofAddr := fmt.Sprintf("127.0.0.1:%d", ports[0])
		t = time.Now()
		env := map[string]string{"GOMEMLIMIT": strconv.FormatInt(limit.Value()*9/10, 10), "GOGC": shippedGOGC}
		op, err := st.StartOperatorWith(ctx, env, []string{"--leader-elect", "--debug-pprof=" + pprofAddr})
		if err != nil {
			return err
		}
		err = measurePoint(ctx, c, st, op, pprofAddr, &pt, time.Since(t))
		_ = op.Stop(5 * time.Second)
		if err != nil {
			return err
		}
		res.Points = append(res.Points, pt)
	}
	res.CPU = m.end()
	rep.Memory = res
	return nil
}

func measurePoint(ctx context.Context, c *config, st *stack.Stack, op *stack.Operator, pprofAddr string, pt *memoryPoint, ready time.Duration) error {
	pt.Ready = ready
	if mem, err := op.Memory(); err == nil {
		pt.ReadyRSS = mem.RSS
	}
	var err error
	if pt.ReadyHeap, err = takeHeapProfile(ctx, pprofAddr, st.Dir, fmt.Sprintf("heap-ready-%d", pt.Cached)); err != nil {
		return err
	}
	say(c, "   ready in %s, RSS %s, live heap %s", pt.Ready.Round(100*time.Millisecond), mib(pt.ReadyRSS), mib(uint64(pt.ReadyHeap.Total)))
	before, err := op.Scrape()
	if err != nil {
		return err
	}
	// Names from the NBI itself (a full list walk, as a client would start).
	cl := nbiClient(1)
	coll := op.NBIURL + nbiBase
	var names, pageLinks []string
	for url := coll; url != ""; {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := cl.Do(req)
		if err != nil {
			return err
		}
		var page struct {
			Items []struct {
				Data struct {
					ID string `json:"provisioningRequestId"`
				} `json:"provisioningRequestData"`
			} `json:"items"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			return err
		}
		pageLinks = append(pageLinks, url)
		for _, it := range page.Items {
			names = append(names, it.Data.ID)
		}
		url = ""
		if next := nextPage(resp.Header.Get("Link")); next != "" {
			url = op.NBIURL + next
		}
	}
	if len(names) < pt.Cached {
		return fmt.Errorf("the NBI listed %d requests, want at least %d", len(names), pt.Cached)
	}
	timed := func(url string) (float64, int64, error) {
		t := time.Now()
		code, _, n, err := get(ctx, cl, url)
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("GET %s answered %d", url, code)
		}
		return time.Since(t).Seconds(), n, err
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 2200; i++ {
		d, _, err := timed(coll + "/" + names[rng.IntN(len(names))])
		if err != nil {
			return err
		}
		if i >= 200 { // the first are warm-up
			pt.Named = append(pt.Named, d)
		}
	}
	for i := 0; i < 205; i++ {
		d, _, err := timed(coll)
		if err != nil {
			return err
		}
		if i >= 5 {
			pt.FirstPage = append(pt.FirstPage, d)
		}
	}
	for i := 0; i < 53; i++ {
		d, _, err := timed(coll + memoryFilter)
		if err != nil {
			return err
		}
		if i >= 3 {
			pt.Filtered = append(pt.Filtered, d)
		}
	}
	_, n99, _ := pt.Named.stats()
	_, f99, _ := pt.FirstPage.stats()
	_, q99, _ := pt.Filtered.stats()
	say(c, "   p99: named %s, first page %s, filtered %s", ms(n99), ms(f99), ms(q99))
	say(c, "   NBI load: %d clients for %s", c.clients, memoryLoadFor)
	if pt.Load, err = runNBILoad(ctx, op, names, pageLinks, c.clients, memoryLoadFor); err != nil {
		return err
	}
	_, mx, _ := pt.Load.rssStats()
	if pt.LoadHeap, err = takeHeapProfile(ctx, pprofAddr, st.Dir, fmt.Sprintf("heap-load-%d", pt.Cached)); err != nil {
		return err
	}
	say(c, "   under load: RSS max %s, %d errors; live heap after %s", mib(mx), pt.Load.Errors, mib(uint64(pt.LoadHeap.Total)))
	after, err := op.Scrape()
	if err != nil {
		return err
	}
	pt.APIGets = apiGets(after) - apiGets(before)
	pt.Leading = after.Sum("leader_election_master_status", nil)
	pt.HandlerRuns = after.Sum("o2ims_handler_runs_total", nil)
	if pt.Leading != 0 || pt.HandlerRuns != 0 {
		return fmt.Errorf("the memory instance led (%v) or handled (%v runs): not a standby", pt.Leading, pt.HandlerRuns)
	}
	return nil
}

func (r *report) memorySection(p printer) {
	res := r.Memory
	if res == nil {
		return
	}
	p("## 7. Memory with a large cache\n\n")
	p("Stack C: a fresh API server; this process holds the operator's Lease, so the operator, started as shipped with " +
		"`--leader-elect`, is a standby replica: it caches every request and handles none (what a non-leader holds). " +
		"Requests are created realistically: half server-side applied (fieldManager `focom`), half as client-side " +
		"`kubectl apply` creates them (the object again in `kubectl.kubernetes.io/last-applied-configuration`), so each " +
		"carries managedFields as a real one does. At each size a fresh instance is started; RSS is VmRSS; the live heap is " +
		"pprof's inuse_space after a forced collection (`--debug-pprof`).\n\n")
	p("| | ")
	for _, pt := range res.Points {
		p("%d cached | ", pt.Cached)
	}
	p("\n|---|")
	for range res.Points {
		p("--:|")
	}
	p("\n")
	row := func(name string, f func(pt memoryPoint) string) {
		p("| %s | ", name)
		for _, pt := range res.Points {
			p("%s | ", f(pt))
		}
		p("\n")
	}
	row("container memory limit (GOMEMLIMIT 90% of it), GOGC", func(pt memoryPoint) string { return pt.MemLimit + ", " + pt.GOGC })
	row("created in (96 concurrent callers)", func(pt memoryPoint) string { return pt.CreateTook.Round(100 * time.Millisecond).String() })
	row("start → ready (caches synced)", func(pt memoryPoint) string { return pt.Ready.Round(100 * time.Millisecond).String() })
	row("**RSS at ready**", func(pt memoryPoint) string { return "**" + mib(pt.ReadyRSS) + "**" })
	row("live heap at ready", func(pt memoryPoint) string { return mib(uint64(pt.ReadyHeap.Total)) })
	for i, part := range heapParts {
		row("  of it: "+part.What, func(pt memoryPoint) string { return pt.ReadyHeap.share(heapParts[i].Focus) })
	}
	row("named GET p50 / p99", func(pt memoryPoint) string {
		a, b, _ := pt.Named.stats()
		return ms(a) + " / " + ms(b)
	})
	row("first list page p50 / p99", func(pt memoryPoint) string {
		a, b, _ := pt.FirstPage.stats()
		return ms(a) + " / " + ms(b)
	})
	row("filtered list (a fiftieth match) p50 / p99", func(pt memoryPoint) string {
		a, b, _ := pt.Filtered.stats()
		return ms(a) + " / " + ms(b)
	})
	row(fmt.Sprintf("NBI load (%d clients, %s): requests / errors", res.Clients, memoryLoadFor), func(pt memoryPoint) string {
		return fmt.Sprintf("%d / %d", pt.Load.Requests, pt.Load.Errors)
	})
	row("**RSS under load: max**", func(pt memoryPoint) string {
		_, mx, _ := pt.Load.rssStats()
		return "**" + mib(mx) + "**"
	})
	row("live heap after the load", func(pt memoryPoint) string { return mib(uint64(pt.LoadHeap.Total)) })
	for i, part := range heapParts {
		row("  of it: "+part.What, func(pt memoryPoint) string { return pt.LoadHeap.share(heapParts[i].Focus) })
	}
	row("API-server GETs of provisioningrequests meanwhile", func(pt memoryPoint) string { return fmt.Sprintf("%.0f", pt.APIGets) })
	p("\nOther processes during this section: %s.\n\n", foreign(res.CPU))
	for _, pt := range res.Points {
		p("Live heap at ready with %d cached, `go tool pprof -top` (inuse_space):\n\n```\n%s\n```\n\n", pt.Cached, pt.ReadyHeap.Top)
		p("After the NBI load:\n\n```\n%s\n```\n\n", pt.LoadHeap.Top)
	}
}

// memorySummary adds section 7's targets to the summary table.
func (r *report) memorySummary(p printer) {
	if r.Memory == nil {
		return
	}
	for i, pt := range r.Memory.Points {
		_, mx, _ := pt.Load.rssStats()
		_, n99, _ := pt.Named.stats()
		_, f99, _ := pt.FirstPage.stats()
		_, q99, _ := pt.Filtered.stats()
		switch {
		case i == 0:
			p("| memory, %d cached: RSS ≤ %s at ready, ≤ %s under the NBI load | %s at ready, max %s under load (live heap %s) | at ready %s; under load %s |\n",
				pt.Cached, mib(targetRSSReady10k), mib(targetRSSLoad10k), mib(pt.ReadyRSS), mib(mx), mib(uint64(pt.ReadyHeap.Total)),
				yes(pt.ReadyRSS <= targetRSSReady10k), yes(mx <= targetRSSLoad10k))
		default:
			p("| %d cached: RSS ≤ %s, ready ≤ %s, named p99 < %s, first page p99 < %s, filtered p99 < %s | RSS %s at ready, max %s under load; ready in %s; p99 %s / %s / %s | RSS %s; ready %s; named %s; first page %s; filtered %s |\n",
				pt.Cached, mib(targetRSS100k), targetReady100k, ms(targetNamedP99), ms(targetListP99), ms(targetFilteredP99),
				mib(pt.ReadyRSS), mib(mx), pt.Ready.Round(100*time.Millisecond), ms(n99), ms(f99), ms(q99),
				yes(max(pt.ReadyRSS, mx) <= targetRSS100k), yes(pt.Ready <= targetReady100k), yes(n99 < targetNamedP99),
				yes(f99 < targetListP99), yes(q99 < targetFilteredP99))
		}
	}
}
