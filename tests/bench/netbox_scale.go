package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/inventory"
	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

// Section 4b (issue 27, item 4): what claiming hosts from NetBox costs the operator, whatever its host
// selection does — counted by the simulator, call by call (netbox_calls.go). One stack, one operator as
// shipped (default REQUEUE_INTERVAL and INVENTORY_* intervals), phases in order: uncontended claims, the
// race, waiting, release → claim, then the pool grown to --netbox-devices for the idle refresh and the
// scale run.

const (
	nbRun      = "netbox-4b"
	nbIdleFor  = 60 * time.Second // waiting is measured at least this long
	nbQuiet    = 2 * time.Second  // settled: no call but the refresh's for this long…
	nbQuietMax = 15 * time.Second // …looked for this long after the final state, else the calls go on
	nbClaimMax = 45 * time.Second // a waiting request that claims no freed host within this: a timed-out sample
	nbScaleMax = 150 * time.Second
)

// nbScaleResult is section 4b's result; a phase that could not finish leaves Stopped, and the phases after
// it unmeasured.
type nbScaleResult struct {
	Hosts           int
	RefreshInterval time.Duration // inventory.DefaultRefreshInterval: the stack does not set it
	Seq             nbSeq
	Race            nbRace
	Idle            nbIdle
	Release         nbRelease
	Refresh         nbRefresh
	Scale           nbScale
	Stopped         string
	Took            time.Duration
	CPU             cpuWindow
}

// nbSeq: requests created one after another, each fulfilled before the next.
type nbSeq struct {
	Requests, Claimed int
	Calls             callCount
	Took              time.Duration
}

// nbRace: Requests × 1 host created at once over the pool; Winners of them can be fulfilled.
type nbRace struct {
	Requests, Winners  int
	Committed, Lost412 int
	Fulfilled, Waiting int // at the end; Waiting: with the waiting status
	Message            string
	Double             []string
	Calls              callCount     // until settled
	StateAfter         time.Duration // the final state first seen
	SettledAfter       time.Duration // and the last call but the refresh's before a quiet nbQuiet
	Quiet              bool          // false: calls went on for nbQuietMax after the final state
	Measured           bool
}

// nbIdle: the race's waiting requests over the exhausted pool, nothing changing.
type nbIdle struct {
	For                    time.Duration
	Waiting                int
	Calls                  callCount
	Patches                int
	HandlerRuns, Refreshes float64
	Measured               bool
}

func (i nbIdle) perRequestMinute() float64 {
	return float64(i.Calls.Other) / float64(max(i.Waiting, 1)) / max(i.For.Minutes(), 1e-9)
}

// nbBench is the section's running stack and what the phases hand on.
type nbBench struct {
	c      *config
	st     *stack.Stack
	op     *stack.Operator
	dyn    dynamic.Interface
	raceTr *tracker // the race's requests, read again by the waiting and release phases
}

func (b *nbBench) selector(phase string) string {
	return runLabel + "=" + nbRun + "," + phaseLabel + "=" + phase
}

// stackNetBox runs section 4b on a stack of its own.
func stackNetBox(ctx context.Context, c *config, rep *report) error {
	say(c, "starting stack N: kube-apiserver, etcd, NetBox simulator (%d hosts, every call logged)", c.hosts)
	st, err := startStack(ctx, c, nil)
	if err != nil {
		return err
	}
	defer st.Stop()
	st.NetBox.LogCalls(true)
	op, err := startSelected(ctx, st, nbRun, false)
	if err != nil {
		return err
	}
	defer func() { _ = op.Stop(5 * time.Second) }()
	tctx, stopTracking := context.WithCancel(ctx)
	defer stopTracking()
	b := &nbBench{c: c, st: st, op: op, dyn: fastAdmin(st)}
	r := &rep.NetBoxScale
	r.Hosts, r.RefreshInterval = c.hosts, inventory.DefaultRefreshInterval
	m := startMeter(map[string]int{"operator": op.Pid()})
	t0 := time.Now()
	for _, ph := range []struct {
		name string
		run  func(context.Context, *nbScaleResult) error
	}{
		{"uncontended", b.uncontended}, {"race", b.race}, {"waiting", b.idle}, {"release → claim", b.releases},
		{"growing the pool", b.grow}, {"refresh at scale", b.refreshAtScale}, {"scale", b.scale},
	} {
		if err := ph.run(tctx, r); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.Stopped = ph.name + ": " + err.Error()
			say(c, "   4b stopped at %s", r.Stopped)
			break
		}
	}
	r.Took, r.CPU = time.Since(t0), m.end()
	c.disturbed(r.CPU, "NetBox 4b") // counts, not timed closely: noted, never re-run
	say(c, "stopping stack N (4b took %s)", r.Took.Round(time.Second))
	return nil
}

func seqHosts() []any {
	return []any{
		map[string]any{"role": "control-plane", "count": int64(1), "selector": map[string]any{"cpu_cores": int64(32)}},
		map[string]any{"role": "worker", "count": int64(2), "selector": map[string]any{"cpu_cores": int64(16)}},
	}
}

func oneHost() []any { return []any{map[string]any{"role": "worker", "count": int64(1)}} }

// uncontended: section 4's shape — requests one after another, 1 control-plane + 2 workers each.
func (b *nbBench) uncontended(ctx context.Context, r *nbScaleResult) error {
	n := b.c.seq
	say(b.c, "4b.1 uncontended: %d requests one after another (1 control-plane + 2 workers each)", n)
	tr, err := track(ctx, b.dyn, b.selector("seq"))
	if err != nil {
		return err
	}
	p0 := len(b.st.NetBox.PatchLog())
	t0 := time.Now()
	for i := 0; i < n; i++ {
		u := labelled(provisioningRequest(fmt.Sprintf("nb-seq-%d", i), nbRun, seqHosts()), "seq")
		if _, err := b.dyn.Resource(prGVR).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			return err
		}
		want := i + 1
		if err := tr.waitFor(ctx, time.Minute, func(c map[string]int) bool {
			return c[v1alpha1.StateFulfilled] >= want || c[v1alpha1.StateFailed] > 0
		}); err != nil {
			return fmt.Errorf("request %d: %w", i, err)
		}
		if tr.counts()[v1alpha1.StateFailed] > 0 {
			tr.mu.Lock()
			defer tr.mu.Unlock()
			return fmt.Errorf("an uncontended request failed: %v", tr.message)
		}
	}
	t1 := time.Now()
	perDevice, _, _ := claimsIn(b.st.NetBox.PatchLog()[p0:])
	r.Seq = nbSeq{Requests: n, Took: t1.Sub(t0), Calls: countCalls(b.st.NetBox.CallLog(), t0, t1)}
	for _, k := range perDevice {
		r.Seq.Claimed += k
	}
	say(b.c, "   %d hosts claimed, %d calls (%.2f per host) and the refresh's %d", r.Seq.Claimed, r.Seq.Calls.Other,
		float64(r.Seq.Calls.Other)/float64(max(r.Seq.Claimed, 1)), r.Seq.Calls.Refresh)
	return b.drain(ctx, b.selector("seq"))
}

// drain deletes the requests selector selects and waits until they are gone and every device of the pool
// is free again.
func (b *nbBench) drain(ctx context.Context, selector string) error {
	if err := b.dyn.Resource(prGVR).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: selector}); err != nil {
		return err
	}
	err := waitUntil(ctx, 2*time.Minute, func() bool {
		l, err := b.dyn.Resource(prGVR).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil || len(l.Items) > 0 {
			return false
		}
		for _, d := range b.st.NetBox.Devices() {
			if d.Status != "staged" || (d.Custom[ownerField] != nil && d.Custom[ownerField] != "") {
				return false
			}
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("the hosts never came back to the pool: %w", err)
	}
	return nil
}

// race: c.race requests for one host each, created at once over c.hosts free hosts, followed until settled.
func (b *nbBench) race(ctx context.Context, r *nbScaleResult) error {
	n := b.c.race
	rr := nbRace{Requests: n, Winners: min(n, b.c.hosts)}
	say(b.c, "4b.2 race: %d requests × 1 host at once over %d hosts", n, b.c.hosts)
	tr, err := track(ctx, b.dyn, b.selector("race"))
	if err != nil {
		return err
	}
	b.raceTr = tr
	objs := make([]*unstructured.Unstructured, n)
	for i := range objs {
		objs[i] = labelled(provisioningRequest(fmt.Sprintf("nb-race-%02d", i), nbRun, oneHost()), "race")
	}
	p0 := len(b.st.NetBox.PatchLog())
	t0 := time.Now()
	if _, err := createAll(ctx, b.dyn, objs, n); err != nil {
		return err
	}
	stateAt, err := waitWaiting(ctx, tr, rr.Winners, n-rr.Winners, 2*time.Minute)
	if err != nil {
		return err
	}
	settledAt, quiet := b.quietAfter(ctx, t0, stateAt)
	rr.Calls = countCalls(b.st.NetBox.CallLog(), t0, settledAt)
	rr.StateAfter, rr.SettledAfter, rr.Quiet = stateAt.Sub(t0), settledAt.Sub(t0), quiet
	perDevice, _, lost := claimsIn(b.st.NetBox.PatchLog()[p0:])
	rr.Lost412 = lost
	for id, k := range perDevice {
		rr.Committed += k
		if k > 1 {
			rr.Double = append(rr.Double, fmt.Sprintf("device %d: %d committed claims", id, k))
		}
	}
	more, err := b.doubleOwners(ctx, b.selector("race"))
	if err != nil {
		return err
	}
	rr.Double = append(rr.Double, more...)
	sort.Strings(rr.Double)
	rr.Fulfilled, rr.Waiting, rr.Message = waitingCounts(tr)
	rr.Measured = true
	r.Race = rr
	say(b.c, "   settled after %s (final state after %s, quiet %v): %d calls = %.2f per claimed host, the refresh's %d; %d × 412, %d double claims",
		rr.SettledAfter.Round(time.Millisecond), rr.StateAfter.Round(time.Millisecond), quiet, rr.Calls.Other,
		float64(rr.Calls.Other)/float64(max(rr.Committed, 1)), rr.Calls.Refresh, rr.Lost412, len(rr.Double))
	return nil
}

// waitingCounts is how many requests are fulfilled and how many wait with the waiting status, with the
// first waiting one's status (by name).
func waitingCounts(t *tracker) (fulfilled, waiting int, message string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	first := ""
	for name, s := range t.state {
		switch {
		case s == v1alpha1.StateFulfilled:
			fulfilled++
		case s != v1alpha1.StateFailed && strings.Contains(t.message[name], v1alpha1.WaitingForFreeHosts):
			waiting++
			if first == "" || name < first {
				first, message = name, s+": "+t.message[name]
			}
		}
	}
	return fulfilled, waiting, message
}

// waitWaiting waits until fulfilled requests are fulfilled and waiting wait with the waiting status, and
// says when that was first seen.
func waitWaiting(ctx context.Context, t *tracker, fulfilled, waiting int, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		f, w, _ := waitingCounts(t)
		if f >= fulfilled && w >= waiting {
			return time.Now(), nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("%d fulfilled and %d waiting (want %d and %d) after %s: %v", f, w, fulfilled, waiting, timeout, t.counts())
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// quietAfter looks, from the final state on, for nbQuiet without a call but the refresh's: settled is the
// last such call before it (or the final state, when later). Calls that go on for nbQuietMax are no longer
// the race's: then it is settled at the final state and quiet is false.
func (b *nbBench) quietAfter(ctx context.Context, from, stateAt time.Time) (settled time.Time, quiet bool) {
	for {
		now := time.Now()
		settled = stateAt
		if last := lastOtherCall(b.st.NetBox.CallLog(), from); last.After(settled) {
			settled = last
		}
		if now.Sub(settled) >= nbQuiet {
			return settled, true
		}
		if now.Sub(stateAt) >= nbQuietMax {
			return stateAt, false
		}
		select {
		case <-ctx.Done():
			return stateAt, false
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// doubleOwners: a request owning two devices in NetBox, or two requests recording the same host claimed.
func (b *nbBench) doubleOwners(ctx context.Context, selector string) ([]string, error) {
	var out []string
	owners := map[string]int32{}
	for _, d := range b.st.NetBox.Devices() {
		uid, _ := d.Custom[ownerField].(string)
		if d.Status != "active" || uid == "" {
			continue
		}
		if prev, dup := owners[uid]; dup {
			out = append(out, fmt.Sprintf("request uid %s owns devices %d and %d", uid, prev, d.ID))
		}
		owners[uid] = d.ID
	}
	var rec netboxResult
	if err := checkRecords(ctx, b.dyn, selector, &rec); err != nil {
		return nil, err
	}
	return append(out, rec.DoubleClaims...), nil
}

// idle: the race's waiting requests over the exhausted pool for nbIdleFor, nothing changing.
func (b *nbBench) idle(ctx context.Context, r *nbScaleResult) error {
	say(b.c, "4b.3 waiting: %d requests over the exhausted pool for %s", r.Race.Waiting, nbIdleFor)
	before, err := b.op.Scrape()
	if err != nil {
		return err
	}
	p0 := len(b.st.NetBox.PatchLog())
	t0 := time.Now()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(nbIdleFor):
	}
	t1 := time.Now()
	after, err := b.op.Scrape()
	if err != nil {
		return err
	}
	_, waiting, _ := waitingCounts(b.raceTr)
	r.Idle = nbIdle{For: t1.Sub(t0), Waiting: waiting, Calls: countCalls(b.st.NetBox.CallLog(), t0, t1),
		Patches: len(b.st.NetBox.PatchLog()) - p0, Measured: true,
		HandlerRuns: counterDelta(before, after, "o2ims_handler_runs_total", nil),
		Refreshes:   counterDelta(before, after, "o2ims_inventory_refreshes_total", nil)}
	say(b.c, "   %d calls beyond the refresh (%.2f per waiting request per minute); the refresh's %d in %.0f refreshes",
		r.Idle.Calls.Other, r.Idle.perRequestMinute(), r.Idle.Calls.Refresh, r.Idle.Refreshes)
	return nil
}
