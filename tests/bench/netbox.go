package main

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

const phaseLabel = "o2ims-bench/phase"

// netboxCalls is the simulator's call counters by "METHOD route".
type netboxCalls map[string]int

var netboxRoutes = []struct{ method, route string }{
	{http.MethodGet, netboxsim.RouteStatus},
	{http.MethodGet, netboxsim.RouteCustomFields},
	{http.MethodGet, netboxsim.RouteDevices},
	{http.MethodGet, netboxsim.RouteDevice},
	{http.MethodPatch, netboxsim.RouteDevice},
}

func readCalls(nb *netboxsim.Server) netboxCalls {
	out := netboxCalls{}
	for _, r := range netboxRoutes {
		out[r.method+" "+r.route] = nb.Calls(r.method, r.route)
	}
	return out
}

func (a netboxCalls) minus(b netboxCalls) netboxCalls {
	out := netboxCalls{}
	for k, v := range a {
		out[k] = v - b[k]
	}
	return out
}

func (a netboxCalls) total() int {
	t := 0
	for _, v := range a {
		t += v
	}
	return t
}

// netboxResult is section 4's result.
type netboxResult struct {
	Hosts int
	// Uncontended: requests created one after the other, each waiting for the previous to be fulfilled.
	SeqRequests, SeqClaimed int
	SeqCalls                netboxCalls
	SeqClaimLatency         histDelta
	SeqTime                 time.Duration
	// The race: RaceRequests requests for one host each, created at once, over Hosts free hosts.
	RaceRequests       int
	RaceCommitted      int // committed claim PATCHes
	Race412            int
	RacePatches        int
	RaceFulfilled      int
	RaceWaiting        int
	RaceWaitingMessage string
	DoubleClaims       []string // anything claimed twice: must be empty
	ActiveDevices      int
	RaceCalls          netboxCalls
	RaceClaimLatency   histDelta
	RaceAttempts       map[string]float64
	ClaimOrder         []int32       // devices in the order their claims committed
	Tried412           map[int32]int // 412s by device
	RaceStatusWrites   float64       // the operator's status PATCHes during the race (candidates recorded)
	RaceTime           time.Duration
	// After the race: the waiting requests' NetBox calls over IdleFor.
	IdleFor   time.Duration
	IdleCalls netboxCalls
	IdleWakes float64 // handler runs meanwhile
	CPU       cpuWindow
}

func labelled(u *unstructured.Unstructured, phase string) *unstructured.Unstructured {
	l := u.GetLabels()
	l[phaseLabel] = phase
	u.SetLabels(l)
	return u
}

func runNetBox(ctx context.Context, st *stack.Stack, seqRequests, raceRequests int, idleFor time.Duration) (netboxResult, error) {
	r := netboxResult{Hosts: len(st.NetBox.Devices()), SeqRequests: seqRequests, RaceRequests: raceRequests}
	const run = "netbox"
	op, err := startSelected(ctx, st, run, false)
	if err != nil {
		return r, err
	}
	defer func() { _ = op.Stop(5 * time.Second) }()
	dyn := fastAdmin(st)
	tctx, stopTracking := context.WithCancel(ctx)
	defer stopTracking()
	m := startMeter(map[string]int{"operator": op.Pid()})

	// Uncontended: a control-plane host (32 cores) and two workers (16 cores) per request.
	seq, err := track(tctx, dyn, runLabel+"="+run+","+phaseLabel+"=seq")
	if err != nil {
		return r, err
	}
	before, err := op.Scrape()
	if err != nil {
		return r, err
	}
	calls0 := readCalls(st.NetBox)
	t0 := time.Now()
	for i := 0; i < seqRequests; i++ {
		u := labelled(provisioningRequest(fmt.Sprintf("netbox-seq-%d", i), run, []any{
			map[string]any{"role": "control-plane", "count": int64(1), "selector": map[string]any{"cpu_cores": int64(32)}},
			map[string]any{"role": "worker", "count": int64(2), "selector": map[string]any{"cpu_cores": int64(16)}},
		}), "seq")
		if _, err := dyn.Resource(prGVR).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			return r, err
		}
		want := i + 1
		if err := seq.waitFor(ctx, time.Minute, func(c map[string]int) bool {
			return c[v1alpha1.StateFulfilled] >= want || c[v1alpha1.StateFailed] > 0
		}); err != nil {
			return r, fmt.Errorf("uncontended request %d: %w", i, err)
		}
		if c := seq.counts(); c[v1alpha1.StateFailed] > 0 {
			return r, fmt.Errorf("an uncontended request failed: %v", seq.message)
		}
	}
	r.SeqTime = time.Since(t0)
	r.SeqCalls = readCalls(st.NetBox).minus(calls0)
	after, err := op.Scrape()
	if err != nil {
		return r, err
	}
	r.SeqClaimLatency = histogramDelta(before, after, "o2ims_netbox_request_duration_seconds", map[string]string{"operation": "patch_device"})
	for _, d := range st.NetBox.Devices() {
		if d.Status == "active" {
			r.SeqClaimed++
		}
	}

	// Back to the pool: delete them and wait until every host is staged again.
	if err := dyn.Resource(prGVR).DeleteCollection(ctx, metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: runLabel + "=" + run + "," + phaseLabel + "=seq"}); err != nil {
		return r, err
	}
	if err := waitUntil(ctx, time.Minute, func() bool {
		l, err := dyn.Resource(prGVR).List(ctx, metav1.ListOptions{LabelSelector: runLabel + "=" + run})
		if err != nil || len(l.Items) > 0 {
			return false
		}
		for _, d := range st.NetBox.Devices() {
			if d.Status != "staged" || (d.Custom["o2ims_request_uid"] != nil && d.Custom["o2ims_request_uid"] != "") {
				return false
			}
		}
		return true
	}); err != nil {
		return r, fmt.Errorf("the hosts never came back to the pool: %w", err)
	}

	// The race: every request wants one host, any host.
	race, err := track(tctx, dyn, runLabel+"="+run+","+phaseLabel+"=race")
	if err != nil {
		return r, err
	}
	before, err = op.Scrape()
	if err != nil {
		return r, err
	}
	calls0 = readCalls(st.NetBox)
	patch0 := len(st.NetBox.PatchLog())
	objs := make([]*unstructured.Unstructured, raceRequests)
	for i := range objs {
		objs[i] = labelled(provisioningRequest(fmt.Sprintf("netbox-race-%02d", i), run, []any{
			map[string]any{"role": "worker", "count": int64(1)},
		}), "race")
	}
	t0 = time.Now()
	if _, err := createAll(ctx, dyn, objs, raceRequests); err != nil {
		return r, err
	}
	winners := raceRequests
	if r.Hosts < winners {
		winners = r.Hosts
	}
	if err := race.waitFor(ctx, 2*time.Minute, func(c map[string]int) bool { return c[v1alpha1.StateFulfilled] >= winners }); err != nil {
		return r, fmt.Errorf("the race: %w", err)
	}
	// Settled: no PATCH for two seconds.
	last, quietSince := len(st.NetBox.PatchLog()), time.Now()
	for time.Since(quietSince) < 2*time.Second {
		time.Sleep(100 * time.Millisecond)
		if n := len(st.NetBox.PatchLog()); n != last {
			last, quietSince = n, time.Now()
		}
	}
	r.RaceTime = time.Since(t0)
	r.RaceCalls = readCalls(st.NetBox).minus(calls0)
	after, err = op.Scrape()
	if err != nil {
		return r, err
	}
	r.RaceClaimLatency = histogramDelta(before, after, "o2ims_netbox_request_duration_seconds", map[string]string{"operation": "patch_device"})
	r.RaceAttempts = map[string]float64{}
	for _, res := range []string{"success", "race", "error"} {
		r.RaceAttempts[res] = counterDelta(before, after, "o2ims_netbox_assignment_attempts_total", map[string]string{"result": res})
	}
	r.RaceStatusWrites = writesByMethod(before, after)["provisioningrequests/status"]
	r.Tried412 = map[int32]int{}
	log := st.NetBox.PatchLog()[patch0:]
	r.RacePatches = len(log)
	committedPerDevice := map[int32]int{}
	for _, p := range log {
		if p.Status == http.StatusPreconditionFailed {
			r.Race412++
			r.Tried412[p.DeviceID]++
		}
		if p.Committed && p.Body["status"] == "active" {
			r.RaceCommitted++
			r.ClaimOrder = append(r.ClaimOrder, p.DeviceID)
			committedPerDevice[p.DeviceID]++
		}
	}
	for id, n := range committedPerDevice {
		if n > 1 {
			r.DoubleClaims = append(r.DoubleClaims, fmt.Sprintf("device %d: %d committed claims", id, n))
		}
	}
	owners := map[string]int32{}
	for _, d := range st.NetBox.Devices() {
		if d.Status != "active" {
			continue
		}
		r.ActiveDevices++
		uid := fmt.Sprint(d.Custom["o2ims_request_uid"])
		if prev, dup := owners[uid]; dup {
			r.DoubleClaims = append(r.DoubleClaims, fmt.Sprintf("request uid %s owns devices %d and %d", uid, prev, d.ID))
		}
		owners[uid] = d.ID
	}
	// What waiting costs: the losers' calls while nothing changes.
	idle0, idleM0 := readCalls(st.NetBox), after
	time.Sleep(idleFor)
	r.IdleFor = idleFor
	r.IdleCalls = readCalls(st.NetBox).minus(idle0)
	if idleM1, err := op.Scrape(); err == nil {
		r.IdleWakes = counterDelta(idleM0, idleM1, "o2ims_handler_runs_total", nil)
	}
	// No host recorded as claimed by two requests.
	if err := checkRecords(ctx, dyn, runLabel+"="+run+","+phaseLabel+"=race", &r); err != nil {
		return r, err
	}
	c := race.counts()
	r.RaceFulfilled = c[v1alpha1.StateFulfilled]
	r.RaceWaiting = raceRequests - r.RaceFulfilled - c[v1alpha1.StateFailed]
	race.mu.Lock()
	for name, s := range race.state {
		if s != v1alpha1.StateFulfilled && r.RaceWaitingMessage == "" {
			r.RaceWaitingMessage = fmt.Sprintf("%s: %s", s, race.message[name])
		}
	}
	race.mu.Unlock()
	sort.Strings(r.DoubleClaims)
	r.CPU = m.end()
	return r, nil
}

func checkRecords(ctx context.Context, dyn dynamic.Interface, selector string, r *netboxResult) error {
	l, err := dyn.Resource(prGVR).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return err
	}
	claimedBy := map[string]string{}
	for _, u := range l.Items {
		hosts, _, _ := unstructured.NestedSlice(u.Object, v1alpha1.FieldStatus, v1alpha1.FieldExtensions, "hosts")
		for _, h := range hosts {
			m, _ := h.(map[string]any)
			id, _ := m["id"].(string)
			if id == "" || m["phase"] != "claimed" {
				continue
			}
			if prev, dup := claimedBy[id]; dup {
				r.DoubleClaims = append(r.DoubleClaims, fmt.Sprintf("host %s recorded as claimed by %s and %s", id, prev, u.GetName()))
			}
			claimedBy[id] = u.GetName()
		}
	}
	return nil
}

func waitUntil(ctx context.Context, timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}
