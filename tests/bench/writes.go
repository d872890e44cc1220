package main

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/tests/promtest"
	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

// contenderRun is one contender's load and deletion. Request writes are counted at the API server (the
// same count for both): the PATCHes of provisioningrequests, of the object and of /status.
type contenderRun struct {
	Name              string
	Fulfilled, Failed int
	Total             time.Duration // first create sent → last fulfilled seen
	Rate              float64
	StatusPatches     float64
	ObjectPatches     float64
	// FinalWrites: requests by how many writes set the state they ended in (each once is the target).
	FinalWrites        map[int]int
	StatusesPerRequest float64 // distinct statuses seen per request
	// Events over the load and the deletion: posted by the contender (o2ims_events_posted_total) and
	// what the API server holds of them (a repeat is its count).
	EventsDue  float64
	EventsHeld int
	Deleted    int
	DelTotal   time.Duration
	DelRate    float64
	CPU        cpuWindow // first create → last fulfilled
	DelCPU     cpuWindow // first DELETE → last gone
	Note       string
	// Rounds and DelRounds are each round's fulfilled/s and deleted/s (rounds.go); Rate and DelRate are
	// their means once there is more than one.
	Rounds, DelRounds []float64
	// Where the requests waited (issue 39), fulfil and delete, from the contender's own metrics.
	FulfilWaits, DelWaits waits
	// What the API server served meanwhile, everyone's (the world's too), by resource and verb.
	FulfilCalls, DelCalls apiRequests
	// Object: one request as the API server returns it before the deletion.
	Object objectSize
	// Latency: create returned → fulfilled seen, and first DELETE sent → gone seen, per request, at
	// N requests at once (this run's N first, then latencySizes, one request alone pooled over
	// singleRepeats runs).
	Latency []latencyAt
	samples latencySamples // this run's, for pooling
}

// WritesPerRequest is the request writes (object and status PATCHes) per fulfilled request.
func (r contenderRun) WritesPerRequest() float64 {
	return (r.StatusPatches + r.ObjectPatches) / float64(max(r.Fulfilled, 1))
}

// FinalOnce says whether every request's final state was written exactly once.
func (r contenderRun) FinalOnce() bool {
	for k, n := range r.FinalWrites {
		if k != 1 && n > 0 {
			return false
		}
	}
	return r.FinalWrites[1] == r.Fulfilled+r.Failed && r.Fulfilled+r.Failed > 0
}

func (r contenderRun) line() string {
	return fmt.Sprintf("%s: %.1f fulfilled/s, %.1f deleted/s, %.2f request writes/request (%.2f status, %.2f object), events %.0f due / %d held, final states %v; other processes %.2f cores",
		r.Name, r.Rate, r.DelRate, r.WritesPerRequest(), r.StatusPatches/float64(max(r.Fulfilled, 1)),
		r.ObjectPatches/float64(max(r.Fulfilled, 1)), r.EventsDue, r.EventsHeld, r.FinalWrites, r.CPU.ForeignCores())
}

// measureContender creates n requests at once for the contender, follows them to their end, counts the
// writes, then deletes them all at once; then the latency at sizes requests at once. It stops the
// contender.
func measureContender(ctx context.Context, st *stack.Stack, ct *contender, run string, n int, sizes []int) (contenderRun, error) {
	defer ct.stop()
	r, err := measureOnce(ctx, st, ct, run, run, n)
	if err != nil {
		return r, err
	}
	for _, size := range sizes {
		var pooled latencySamples
		for i := range runsAt(size) {
			prefix := fmt.Sprintf("%s-x%d", run, size)
			if runsAt(size) > 1 {
				prefix = fmt.Sprintf("%s-%d", prefix, i)
			}
			l, err := measureOnce(ctx, st, ct, run, prefix, size)
			if err != nil {
				return r, err
			}
			pooled = pooled.with(l.samples)
		}
		r.Latency = append(r.Latency, pooled.at(size))
	}
	return r, nil
}

// measureOnce is one load and deletion of n requests named prefix-NNNN (the contender selects run).
func measureOnce(ctx context.Context, st *stack.Stack, ct *contender, run, prefix string, n int) (contenderRun, error) {
	r := contenderRun{Name: ct.name}
	dyn := fastAdmin(st)
	selector := runLabel + "=" + run
	tctx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	f := &finals{writes: map[string]int{}, last: map[string]string{}, shown: map[string]map[string]bool{},
		fulfilled: map[string]time.Time{}, gone: map[string]time.Time{}}
	if err := f.watch(tctx, dyn, selector); err != nil {
		return r, err
	}
	api0, ev0, err := scrapeBoth(ctx, st, ct)
	if err != nil {
		return r, err
	}
	objs := make([]*unstructured.Unstructured, n)
	for i := range objs {
		objs[i] = provisioningRequest(fmt.Sprintf("%s-%04d", prefix, i), run, nil)
	}
	m := startMeter(contenderPids(st, ct))
	t0 := time.Now()
	created, err := createAll(ctx, dyn, objs, 64)
	if err != nil {
		return r, err
	}
	if err := f.waitEnded(ctx, n, 3*time.Minute); err != nil {
		r.Note = err.Error()
	}
	r.CPU = m.end()
	settleAPI(ctx, st, 2*time.Second, 20*time.Second, func(m promtest.Families) float64 { return requestPatches(m, "") })
	// Once the writes have settled: the request as it is deleted (the operator writes its kopf annotations last).
	r.Object = requestSize(ctx, dyn, fmt.Sprintf("%s-%04d", prefix, n/2))
	api1, ev1, err := scrapeBoth(ctx, st, ct)
	if err != nil {
		return r, err
	}
	f.fill(&r, t0)
	r.FulfilWaits = waitsBetween(ev0, ev1)
	r.FulfilCalls = apiRequestsOf(api1).minus(apiRequestsOf(api0))
	r.StatusPatches = requestPatches(api1, "status") - requestPatches(api0, "status")
	r.ObjectPatches = requestPatches(api1, "") - requestPatches(api0, "") - r.StatusPatches
	var tDel time.Time
	m = startMeter(contenderPids(st, ct))
	r.Deleted, r.DelTotal, tDel, err = deleteRun(ctx, dyn, selector)
	r.DelCPU = m.end()
	if r.DelTotal > 0 {
		r.DelRate = float64(r.Deleted) / r.DelTotal.Seconds()
	}
	if err == nil {
		// The Events of the deletion too (the recorders post after the pass): counted once none came for 2 s.
		settleAPI(ctx, st, 2*time.Second, 20*time.Second, eventWrites)
	}
	if api2, ev2, serr := scrapeBoth(ctx, st, ct); serr == nil {
		r.DelWaits = waitsBetween(ev1, ev2)
		r.DelCalls = apiRequestsOf(api2).minus(apiRequestsOf(api1))
		r.EventsDue = ev2.Sum("o2ims_events_posted_total", nil) - ev0.Sum("o2ims_events_posted_total", nil)
	}
	r.EventsHeld = eventsAbout(ctx, st, prefix)
	r.samples = f.samples(created, tDel)
	r.Latency = []latencyAt{r.samples.at(n)}
	return r, err
}

func contenderPids(st *stack.Stack, ct *contender) map[string]int {
	pids := map[string]int{"operator": ct.pid}
	if p := st.API.PIDs(); len(p) == 2 {
		pids["etcd"], pids["kube-apiserver"] = p[0], p[1]
	}
	return pids
}

// scrapeBoth reads the API server's metrics and the contender's.
func scrapeBoth(ctx context.Context, st *stack.Stack, ct *contender) (promtest.Families, promtest.Families, error) {
	api, err := apiMetrics(ctx, st)
	if err != nil {
		return nil, nil, err
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ct.metrics, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	own, err := promtest.Parse(resp.Body)
	return api, own, err
}

func apiMetrics(ctx context.Context, st *stack.Stack) (promtest.Families, error) {
	raw, err := st.API.AdminClientset().CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	return promtest.Parse(strings.NewReader(string(raw)))
}

// requestPatches is the PATCHes of provisioningrequests the API server served: of /status, or of any
// part with sub "".
func requestPatches(m promtest.Families, sub string) float64 {
	want := map[string]string{"resource": "provisioningrequests", "verb": "PATCH"}
	if sub != "" {
		want["subresource"] = sub
	}
	return m.Sum("apiserver_request_total", want)
}

// eventWrites is the Event writes the API server served (a POST, or a PATCH of a repeat's count).
func eventWrites(m promtest.Families) float64 {
	return m.Sum("apiserver_request_total", map[string]string{"resource": "events", "verb": "POST"}) +
		m.Sum("apiserver_request_total", map[string]string{"resource": "events", "verb": "PATCH"})
}

// settleAPI waits until the API server's count of some writes has not moved for quiet (the writes that
// trail the last state change are the run's too).
func settleAPI(ctx context.Context, st *stack.Stack, quiet, limit time.Duration, count func(promtest.Families) float64) {
	deadline, since, last := time.Now().Add(limit), time.Now(), -1.0
	for time.Since(since) < quiet && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(250 * time.Millisecond)
		if m, err := apiMetrics(ctx, st); err == nil {
			if n := count(m); n != last {
				last, since = n, time.Now()
			}
		}
	}
}

// eventsAbout is how many events about the run's requests (named run-NNNN) the API server holds (a
// repeat counts as its count).
func eventsAbout(ctx context.Context, st *stack.Stack, run string) int {
	evs, err := st.API.AdminClientset().CoreV1().Events("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range evs.Items {
		if e.InvolvedObject.Kind == v1alpha1.Kind && ofRun(e.InvolvedObject.Name, run) {
			n += int(max(e.Count, 1))
		}
	}
	return n
}

// ofRun says whether a request's name is one of run's (run-NNNN), not of a run whose name run starts.
func ofRun(name, run string) bool {
	n, ok := strings.CutPrefix(name, run+"-")
	return ok && len(n) >= 4 && strings.Trim(n, "0123456789") == "" // %04d
}

// finals follows a run's requests through a watch: every status each was seen with, and how many writes
// set the state it ends in (a version whose provisioningStatus changed, to a final state).
type finals struct {
	mu        sync.Mutex
	writes    map[string]int
	last      map[string]string // the provisioningStatus last seen (state, message, time)
	state     map[string]string
	shown     map[string]map[string]bool
	fulfilled map[string]time.Time
	gone      map[string]time.Time // when the watch saw each deleted
}

func (f *finals) record(u *unstructured.Unstructured, at time.Time) {
	s := v1alpha1.StatusOf(u)
	key := s.State + "\x00" + s.Message + "\x00" + s.UpdateTime
	name := u.GetName()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state == nil {
		f.state = map[string]string{}
	}
	if s.State == "" || f.last[name] == key {
		return
	}
	f.last[name], f.state[name] = key, s.State
	if f.shown[name] == nil {
		f.shown[name] = map[string]bool{}
	}
	f.shown[name][s.State+": "+s.Message] = true
	if s.State == v1alpha1.StateFulfilled || s.State == v1alpha1.StateFailed {
		f.writes[name]++
	}
	if _, seen := f.fulfilled[name]; !seen && s.State == v1alpha1.StateFulfilled {
		f.fulfilled[name] = at
	}
}

// watch follows the requests from now on (they are created after it starts).
func (f *finals) watch(ctx context.Context, dyn dynamic.Interface, selector string) error {
	list, err := dyn.Resource(prGVR).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return err
	}
	rv := list.GetResourceVersion()
	go func() {
		for ctx.Err() == nil {
			w, err := dyn.Resource(prGVR).Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: rv})
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			for ev := range w.ResultChan() {
				u, ok := ev.Object.(*unstructured.Unstructured)
				if ev.Type == watch.Error || !ok {
					break
				}
				rv = u.GetResourceVersion()
				if ev.Type != watch.Deleted {
					f.record(u, time.Now())
				} else {
					f.mu.Lock()
					f.gone[u.GetName()] = time.Now()
					f.mu.Unlock()
				}
			}
			w.Stop()
		}
	}()
	return nil
}

// waitEnded waits until n requests are fulfilled or failed.
func (f *finals) waitEnded(ctx context.Context, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		f.mu.Lock()
		ended := 0
		for _, s := range f.state {
			if s == v1alpha1.StateFulfilled || s == v1alpha1.StateFailed {
				ended++
			}
		}
		f.mu.Unlock()
		switch {
		case ended >= n:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("%d of %d ended within %s", ended, n, timeout)
		case ctx.Err() != nil:
			return ctx.Err()
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fill puts what the watch saw into r.
func (f *finals) fill(r *contenderRun, t0 time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var last time.Time
	for _, at := range f.fulfilled {
		if at.After(last) {
			last = at
		}
	}
	r.Fulfilled = len(f.fulfilled)
	for _, s := range f.state {
		if s == v1alpha1.StateFailed {
			r.Failed++
		}
	}
	r.Total = last.Sub(t0)
	r.Rate = float64(r.Fulfilled) / max(r.Total.Seconds(), 0.001)
	r.FinalWrites = map[int]int{}
	shown := 0
	for name, s := range f.state {
		if s == v1alpha1.StateFulfilled || s == v1alpha1.StateFailed {
			r.FinalWrites[f.writes[name]]++
		}
		shown += len(f.shown[name])
	}
	r.StatusesPerRequest = float64(shown) / float64(max(len(f.state), 1))
}

// deleteRun deletes the run's requests at once and answers how many were gone, when the last was, and
// when the first DELETE was sent.
func deleteRun(ctx context.Context, dyn dynamic.Interface, selector string) (int, time.Duration, time.Time, error) {
	list, err := dyn.Resource(prGVR).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return 0, 0, time.Time{}, err
	}
	n := len(list.Items)
	t0 := time.Now()
	if err := deleteAll(ctx, dyn, list.Items, 64); err != nil {
		return 0, 0, t0, err
	}
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		l, err := dyn.Resource(prGVR).List(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: "0"})
		if err != nil {
			return 0, 0, t0, err
		}
		if len(l.Items) == 0 {
			return n, time.Since(t0), t0, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return 0, 0, t0, fmt.Errorf("requests of %s not gone within 3 minutes", selector)
}

// sortedKeys lists a map's keys in order.
func sortedKeys(m map[int]int) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}
