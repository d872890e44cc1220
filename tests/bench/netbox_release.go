package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/inventory"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

// Section 4b's later phases: release → claim of a waiting request (and the order waiting requests are
// served in), then the pool grown to --netbox-devices: the refresh while NetBox is idle, and
// --netbox-scale-requests requests created at once.

// nbRelease: waiting requests created one after another, then the race's fulfilled requests deleted one
// at a time, each freeing its host for the oldest waiting request.
type nbRelease struct {
	Waiters    int
	Samples    []releaseSample
	Served     []string // the waiting requests, in the order their claims committed
	OutOfOrder int      // claims by a request other than the oldest still waiting
	Measured   bool
}

// releaseSample is one fulfilled request deleted: its device's release PATCH, then the claim of it.
type releaseSample struct {
	Freed           string
	Device          int32
	DeleteToRelease time.Duration // the request's deletion → the release PATCH answered
	Latency         time.Duration // the release PATCH answered → the claim PATCH answered
	Claimer         string        // "": no claim within nbClaimMax
}

// latencies are the release → claim latencies' p50, p99 and max over the samples that claimed, and how
// many did not within nbClaimMax (counted as nbClaimMax: a timed-out sample is never better than one).
func (r nbRelease) latencies() (p50, p99, worst time.Duration, timedOut int) {
	var xs []float64
	for _, s := range r.Samples {
		d := s.Latency
		if s.Claimer == "" {
			d, timedOut = nbClaimMax, timedOut+1
		}
		xs = append(xs, d.Seconds())
	}
	sort.Float64s(xs)
	if len(xs) == 0 {
		return 0, 0, 0, 0
	}
	sec := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	return sec(quantile(xs, 0.5)), sec(quantile(xs, 0.99)), sec(xs[len(xs)-1]), timedOut
}

// nbRefresh: the refresh's calls at --netbox-devices with no request and nothing changing in NetBox.
type nbRefresh struct {
	Devices   int
	Refreshes float64
	For       time.Duration
	Calls     callCount
	RSS       uint64
	Measured  bool
}

func (r nbRefresh) perRefresh() float64 { return float64(r.Calls.Refresh) / max(r.Refreshes, 1) }

// nbScale: --netbox-scale-requests requests × 1 host created at once over --netbox-devices free hosts.
type nbScale struct {
	Devices, Requests  int
	Fulfilled, Failed  int
	Settled            bool // every request fulfilled (or failed) within nbScaleMax
	Took               time.Duration
	Calls              callCount
	Committed, Lost412 int
	Double             []string
	RSSIdle, RSSMax    uint64 // before; the most sampled every second during
	RSSEnd, Peak       uint64 // after: VmRSS, VmHWM
	Message            string // a failed request's
	Measured           bool
}

func (s nbScale) perHost() float64 { return float64(s.Calls.Other) / float64(max(s.Committed, 1)) }

// releases: the race's waiting requests go, c.nbWaiters wait one after another, then the race's fulfilled
// requests are deleted one at a time.
func (b *nbBench) releases(ctx context.Context, r *nbScaleResult) error {
	n := b.c.nbWaiters
	winners := fulfilledNames(b.raceTr)
	say(b.c, "4b.5 release → claim: %d requests waiting (created one after another), %d fulfilled deleted one at a time", n, min(n, len(winners)))
	if err := b.dropWaiting(ctx, len(winners)); err != nil {
		return err
	}
	waiters, uids, err := b.createWaiters(ctx, n)
	if err != nil {
		return err
	}
	rel := nbRelease{Waiters: len(waiters)}
	p0 := len(b.st.NetBox.PatchLog())
	for i := 0; i < n && i < len(winners); i++ {
		s, err := b.releaseOne(ctx, winners[i], uids)
		if err != nil {
			return err
		}
		rel.Samples = append(rel.Samples, s)
	}
	rel.Served, rel.OutOfOrder = servedOrder(b.st.NetBox.PatchLog()[p0:], waiters, uids)
	rel.Measured = true
	r.Release = rel
	p50, p99, worst, timedOut := rel.latencies()
	say(b.c, "   release → claim p50 %s, p99 %s, max %s over %d samples (%d timed out); %d served out of order",
		ms(p50), ms(p99), ms(worst), len(rel.Samples), timedOut, rel.OutOfOrder)
	return nil
}

// fulfilledNames are the fulfilled requests t saw, by name.
func fulfilledNames(t *tracker) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for name, s := range t.state {
		if s == v1alpha1.StateFulfilled {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// dropWaiting deletes the race's requests that hold no host and waits until only keep are left.
func (b *nbBench) dropWaiting(ctx context.Context, keep int) error {
	l, err := b.dyn.Resource(prGVR).List(ctx, metav1.ListOptions{LabelSelector: b.selector("race")})
	if err != nil {
		return err
	}
	for _, u := range l.Items {
		if st, _ := stateOf(&u); st != v1alpha1.StateFulfilled {
			if err := b.dyn.Resource(prGVR).Delete(ctx, u.GetName(), metav1.DeleteOptions{}); err != nil {
				return err
			}
		}
	}
	return waitUntil(ctx, time.Minute, func() bool {
		l, err := b.dyn.Resource(prGVR).List(ctx, metav1.ListOptions{LabelSelector: b.selector("race")})
		return err == nil && len(l.Items) == keep
	})
}

// createWaiters creates n requests for one host, each once the previous one waits with the waiting status:
// their creation order is their order of waiting. It returns their names in that order and uid → name.
func (b *nbBench) createWaiters(ctx context.Context, n int) ([]string, map[string]string, error) {
	tr, err := track(ctx, b.dyn, b.selector("wait"))
	if err != nil {
		return nil, nil, err
	}
	var names []string
	uids := map[string]string{}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("nb-wait-%02d", i)
		u, err := b.dyn.Resource(prGVR).Create(ctx, labelled(provisioningRequest(name, nbRun, oneHost()), "wait"), metav1.CreateOptions{})
		if err != nil {
			return nil, nil, err
		}
		uids[string(u.GetUID())] = name
		names = append(names, name)
		if err := waitUntil(ctx, 30*time.Second, func() bool {
			tr.mu.Lock()
			defer tr.mu.Unlock()
			return strings.Contains(tr.message[name], v1alpha1.WaitingForFreeHosts)
		}); err != nil {
			return nil, nil, fmt.Errorf("%s never showed %q: %w", name, v1alpha1.WaitingForFreeHosts, err)
		}
	}
	return names, uids, nil
}

// releaseOne deletes the fulfilled request name and times its device's release PATCH and the claim of the
// device that follows it.
func (b *nbBench) releaseOne(ctx context.Context, name string, uids map[string]string) (releaseSample, error) {
	u, err := b.dyn.Resource(prGVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return releaseSample{}, err
	}
	s := releaseSample{Freed: name}
	for _, d := range b.st.NetBox.Devices() {
		if d.Custom[ownerField] == string(u.GetUID()) {
			s.Device = d.ID
		}
	}
	if s.Device == 0 {
		return s, fmt.Errorf("%s owns no device in NetBox", name)
	}
	p0 := len(b.st.NetBox.PatchLog())
	t0 := time.Now()
	if err := b.dyn.Resource(prGVR).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return s, err
	}
	var released time.Time
	err = waitUntil(ctx, time.Minute+nbClaimMax, func() bool {
		for _, p := range b.st.NetBox.PatchLog()[p0:] {
			switch {
			case p.DeviceID != s.Device:
			case released.IsZero() && isRelease(p):
				released = p.At
			case !released.IsZero() && isClaim(p):
				s.Latency, s.Claimer = p.At.Sub(released), uids[claimOwner(p)]
				if s.Claimer == "" {
					s.Claimer = "uid " + claimOwner(p) // not a waiting request's: shown as it is
				}
				return true
			}
		}
		return !released.IsZero() && time.Since(released) > nbClaimMax
	})
	if released.IsZero() {
		return s, fmt.Errorf("deleting %s never released device %d: %v", name, s.Device, err)
	}
	s.DeleteToRelease = released.Sub(t0)
	return s, nil
}

// servedOrder reads the waiting requests' claims in commit order: who was served, and how many claims went
// to another request than the oldest one still waiting.
func servedOrder(patches []netboxsim.PatchRecord, waiters []string, uids map[string]string) (served []string, outOfOrder int) {
	done := map[string]bool{}
	next := 0
	for _, p := range patches {
		name, ok := uids[claimOwner(p)]
		if !isClaim(p) || !ok {
			continue
		}
		for next < len(waiters) && done[waiters[next]] {
			next++
		}
		if next < len(waiters) && name != waiters[next] {
			outOfOrder++
		}
		done[name] = true
		served = append(served, name)
	}
	return served, outOfOrder
}

// grow empties the pool of requests, then adds devices (with their BMC credentials) up to c.nbDevices and
// waits until the operator's view holds them all, and then until a refresh lists the devices changed in
// one page (five at most): the refreshes right after the growth re-read its last seconds (their overlap,
// inventory/refresh.go), one or more depending on when they ran. It returns right after a refresh.
func (b *nbBench) grow(ctx context.Context, _ *nbScaleResult) error {
	say(b.c, "4b: the pool grown from %d to %d devices", b.c.hosts, b.c.nbDevices)
	if err := b.drain(ctx, runLabel+"="+nbRun); err != nil {
		return err
	}
	var ids []int32
	for i := b.c.hosts; i < b.c.nbDevices; i++ {
		cores := 16
		if i%3 == 0 {
			cores = 32
		}
		ids = append(ids, b.st.NetBox.AddDevice(netboxsim.Device{Name: fmt.Sprintf("server-%05d", i+1), Status: "staged", Site: "edge-lab", Custom: map[string]any{
			"o2ims_managed":     true,
			"o2ims_bmc_address": fmt.Sprintf("redfish-virtualmedia+https://10.%d.%d.%d/redfish/v1/Systems/1", 21+i/65536, i/256%256, i%256),
			"o2ims_boot_mac":    fmt.Sprintf("52:54:00:ab:%02x:%02x", i/256, i%256),
			"cpu_cores":         cores,
			"rack":              fmt.Sprintf("r%d", i%4+1),
		}}))
	}
	if err := addCredentials(ctx, b.st, ids); err != nil {
		return err
	}
	if err := waitUntil(ctx, time.Minute, func() bool {
		m, err := b.op.Scrape()
		return err == nil && m.Sum("o2ims_inventory_resources", nil) >= float64(b.c.nbDevices)
	}); err != nil {
		return fmt.Errorf("the view never held the %d devices: %w", b.c.nbDevices, err)
	}
	for i := 0; i < 5; i++ {
		t0 := time.Now()
		if _, err := b.waitRefreshes(ctx, 1); err != nil {
			return err
		}
		if countCalls(b.st.NetBox.CallLog(), t0, time.Now()).Kinds[kindRefreshChanges] <= 1 {
			return nil
		}
	}
	say(b.c, "   no refresh listed the changed devices in one page in five: measured as it is")
	return nil
}

// addCredentials gives the devices their BMC credentials, a Secret per hundred (one Secret may serve
// several devices, each by a label of its own).
func addCredentials(ctx context.Context, st *stack.Stack, ids []int32) error {
	cfg := st.API.AdminConfig()
	cfg.QPS, cfg.Burst = 1e5, 1e5
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for from := 0; from < len(ids); from += 100 {
		labels := map[string]string{}
		for _, id := range ids[from:min(from+100, len(ids))] {
			labels[fmt.Sprintf("o2ims.provisioning.oran.org/netbox-device-%d", id)] = "true"
		}
		_, err := cs.CoreV1().Secrets(stack.CredentialsNamespace).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bmc-scale-%05d", from), Labels: labels},
			Data:       map[string][]byte{"username": []byte("admin"), "password": []byte("lab-password")},
		}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
	}
	return nil
}

// waitRefreshes waits for k more refreshes of the operator's inventory view and returns their count then.
func (b *nbBench) waitRefreshes(ctx context.Context, k int) (float64, error) {
	count := func() float64 {
		m, err := b.op.Scrape()
		if err != nil {
			return -1
		}
		return m.Sum("o2ims_inventory_refreshes_total", nil)
	}
	c0, now := count(), 0.0
	err := waitUntil(ctx, time.Duration(k)*inventory.DefaultRefreshInterval+30*time.Second, func() bool {
		now = count()
		return c0 >= 0 && now >= c0+float64(k)
	})
	if err != nil {
		return now, fmt.Errorf("waiting for %d refreshes of the inventory view: %w", k, err)
	}
	return now, nil
}

// refreshAtScale counts the refresh's calls over three refreshes, from right after one ended, with
// NetBox idle and no request.
func (b *nbBench) refreshAtScale(ctx context.Context, r *nbScaleResult) error {
	say(b.c, "4b.6 the refresh at %d devices, NetBox idle: three refreshes", b.c.nbDevices)
	m, err := b.op.Scrape() // grow returned right after a refresh
	if err != nil {
		return err
	}
	c0, t0 := m.Sum("o2ims_inventory_refreshes_total", nil), time.Now()
	c1, err := b.waitRefreshes(ctx, 3)
	if err != nil {
		return err
	}
	t1 := time.Now()
	r.Refresh = nbRefresh{Devices: b.c.nbDevices, Refreshes: c1 - c0, For: t1.Sub(t0), Calls: countCalls(b.st.NetBox.CallLog(), t0, t1), Measured: true}
	if m, err := b.op.Memory(); err == nil {
		r.Refresh.RSS = m.RSS
	}
	say(b.c, "   %.2f calls per refresh (%s)", r.Refresh.perRefresh(), r.Refresh.Calls.describe())
	return nil
}

// scale: c.nbScaleRequests requests × 1 host at once over c.nbDevices free hosts, until all are fulfilled
// or nbScaleMax.
func (b *nbBench) scale(ctx context.Context, r *nbScaleResult) error {
	n := b.c.nbScaleRequests
	sc := nbScale{Devices: b.c.nbDevices, Requests: n}
	say(b.c, "4b.4 scale: %d requests × 1 host at once over %d devices", n, sc.Devices)
	tr, err := track(ctx, b.dyn, b.selector("scale"))
	if err != nil {
		return err
	}
	objs := make([]*unstructured.Unstructured, n)
	for i := range objs {
		objs[i] = labelled(provisioningRequest(fmt.Sprintf("nb-scale-%04d", i), nbRun, oneHost()), "scale")
	}
	if m, err := b.op.Memory(); err == nil {
		sc.RSSIdle = m.RSS
	}
	p0 := len(b.st.NetBox.PatchLog())
	stopRSS := sampleRSS(b.op)
	t0 := time.Now()
	if _, err := createAll(ctx, b.dyn, objs, 8); err != nil {
		stopRSS()
		return err
	}
	err = tr.waitFor(ctx, nbScaleMax, func(c map[string]int) bool { return c[v1alpha1.StateFulfilled]+c[v1alpha1.StateFailed] >= n })
	t1 := time.Now()
	sc.RSSMax, sc.Settled = stopRSS(), err == nil
	b.scaleFigures(&sc, tr, p0, t0, t1)
	if sc.Double, err = b.scaleDoubles(ctx, sc.Double); err != nil {
		return err
	}
	sc.Measured = true
	r.Scale = sc
	say(b.c, "   %d fulfilled, %d failed in %s (settled %v); %d calls = %.2f per claimed host, the refresh's %d; %d × 412, %d double claims; RSS max %s, peak %s",
		sc.Fulfilled, sc.Failed, sc.Took.Round(time.Millisecond), sc.Settled, sc.Calls.Other, sc.perHost(), sc.Calls.Refresh, sc.Lost412,
		len(sc.Double), mib(sc.RSSMax), mib(sc.Peak))
	return nil
}

// scaleFigures reads the scale run's counts, calls, claims and memory.
func (b *nbBench) scaleFigures(sc *nbScale, tr *tracker, p0 int, t0, t1 time.Time) {
	c := tr.counts()
	sc.Fulfilled, sc.Failed = c[v1alpha1.StateFulfilled], c[v1alpha1.StateFailed]
	sc.Took = t1.Sub(t0)
	tr.mu.Lock()
	if sc.Settled {
		last := t0
		for _, at := range tr.fulfilled {
			if at.After(last) {
				last = at
			}
		}
		sc.Took = last.Sub(t0)
	}
	for name, s := range tr.state {
		if s == v1alpha1.StateFailed && sc.Message == "" {
			sc.Message = name + ": " + tr.message[name]
		}
	}
	tr.mu.Unlock()
	sc.Calls = countCalls(b.st.NetBox.CallLog(), t0, t1)
	perDevice, _, lost := claimsIn(b.st.NetBox.PatchLog()[p0:])
	sc.Lost412 = lost
	for id, k := range perDevice {
		sc.Committed += k
		if k > 1 {
			sc.Double = append(sc.Double, fmt.Sprintf("device %d: %d committed claims", id, k))
		}
	}
	if m, err := b.op.Memory(); err == nil {
		sc.RSSEnd, sc.Peak = m.RSS, m.Peak
	}
}

func (b *nbBench) scaleDoubles(ctx context.Context, have []string) ([]string, error) {
	more, err := b.doubleOwners(ctx, b.selector("scale"))
	if err != nil {
		return nil, err
	}
	out := append(have, more...)
	sort.Strings(out)
	return out, nil
}

// sampleRSS reads the operator's RSS every second until stop, which returns the most seen.
func sampleRSS(op *stack.Operator) (stop func() uint64) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var most uint64
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			if m, err := op.Memory(); err == nil && m.RSS > most {
				most = m.RSS
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		wg.Wait()
		return most
	}
}
