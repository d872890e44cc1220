package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// FailoverOptions shape MeasureFailover. Both operators run with --leader-elect on the same Lease and
// select the requests labelled Label=Value (PROVISIONING_REQUEST_SELECTOR).
type FailoverOptions struct {
	Label, Value string
	// Requests are created and fulfilled before the load; the readers GET them.
	Requests int
	// Readers are concurrent NBI clients, each sending its requests to the two replicas in turn, as a
	// Service spreads connections over its endpoints.
	Readers int
	// Trickle is the interval of new requests created meanwhile (handled by whoever leads).
	Trickle time.Duration
	// Before and After are how long the load runs before the kill and after the new leader took over.
	Before, After time.Duration
	// LeaseDuration is the operators' (the framework's default is 15 s).
	LeaseDuration time.Duration
}

// FailoverResult is what happened when the leader was SIGKILLed under NBI load.
type FailoverResult struct {
	LeaseDuration time.Duration
	// NewLeaderAfter is SIGKILL → the survivor reports leader_election_master_status 1 (polled every 100 ms).
	NewLeaderAfter time.Duration
	// Reads answered by the survivor over the whole run, and those that failed (anything but 200).
	SurvivorReads, SurvivorFailed int
	// Reads of the killed replica before the kill, and those that failed.
	LeaderReads, LeaderFailed int
	// DeadReads were sent to the killed replica after the kill (or were in flight at it); DeadRefused of
	// them got no answer, and were sent again to the survivor, which failed DeadRetryFailed of them.
	DeadReads, DeadRefused, DeadRetryFailed int
	// Failures are a few failed reads, described.
	Failures []string
	// Created is how many requests the trickle created; Total how many the pair had at the end,
	// Fulfilled of them fulfilled, SurvivorCurrent of them answered FULFILLED by the survivor's NBI.
	Created, Total, Fulfilled, SurvivorCurrent int
	// PackageVariantPOSTs is the API server's count of PackageVariant creates during the run, by code:
	// 201 should be one per request created meanwhile. A 409 is a create that found the PackageVariant
	// there already (the chain reads it back and goes on with it): a pass that looked before its own
	// earlier create reached the cache, or a create the kill interrupted before it was recorded.
	PackageVariantPOSTs map[string]float64
	// StandbyRunsBeforeLead is the survivor's handler runs while the other led (0: it only served reads).
	StandbyRunsBeforeLead float64
	Duration              time.Duration
}

// HandledTwice says whether any request was handled by both replicas: the standby ran handlers while the
// other led, or a request's PackageVariant was created more than once, or some request was not handled.
func (r FailoverResult) HandledTwice() bool {
	return r.StandbyRunsBeforeLead != 0 || r.PackageVariantPOSTs["201"] != float64(r.Created) || r.Fulfilled != r.Total
}

// CreatesSettledByReadBack are PackageVariant creates answered 409 (see PackageVariantPOSTs).
func (r FailoverResult) CreatesSettledByReadBack() float64 { return r.PackageVariantPOSTs["409"] }

var failoverPRGVR = schema.GroupVersionResource{Group: "o2ims.provisioning.oran.org", Version: "v1alpha1", Resource: "provisioningrequests"}

const failoverNBIBase = "/O2ims_infrastructureProvisioning/v1/provisioningRequests"

func failoverRequest(name, label, value string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": failoverPRGVR.GroupVersion().String(), "kind": "ProvisioningRequest",
		"metadata": map[string]any{"name": name, "labels": map[string]any{label: value}},
		"spec": map[string]any{
			"name": "failover " + name, "description": "failover measurement",
			"templateName": "nephio-workload-cluster", "templateVersion": "v3.0.0",
			"templateParameters": map[string]any{"clusterName": name},
		},
	}}
}

// MeasureFailover creates and fulfils the requests, reads them through both replicas' NBIs, SIGKILLs
// the one that leads, and follows the other until it leads and has handled what was created meanwhile.
func (s *Stack) MeasureFailover(ctx context.Context, a, b *Operator, o FailoverOptions) (FailoverResult, error) {
	res := FailoverResult{LeaseDuration: o.LeaseDuration, PackageVariantPOSTs: map[string]float64{}}
	start := time.Now()
	cfg := s.API.AdminConfig()
	cfg.QPS, cfg.Burst = -1, 0
	dyn := dynamic.NewForConfigOrDie(cfg)
	prs := dyn.Resource(failoverPRGVR)
	selector := o.Label + "=" + o.Value

	names := make([]string, o.Requests)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%03d", o.Value, i)
		if _, err := prs.Create(ctx, failoverRequest(names[i], o.Label, o.Value), metav1.CreateOptions{}); err != nil {
			return res, fmt.Errorf("creating %s: %w", names[i], err)
		}
	}
	if err := waitFulfilled(ctx, prs, selector, o.Requests, 2*time.Minute); err != nil {
		return res, err
	}
	leader, survivor, err := whoLeads(ctx, a, b, 30*time.Second)
	if err != nil {
		return res, err
	}
	if m, err := survivor.Scrape(); err == nil {
		res.StandbyRunsBeforeLead = m.Sum("o2ims_handler_runs_total", nil)
	}
	posts0, err := s.packageVariantPOSTs(ctx)
	if err != nil {
		return res, err
	}

	// The readers: round robin over the two NBIs; a read the killed replica does not answer is sent
	// to the survivor, as a client retrying another endpoint would.
	var killedAt atomic.Pointer[time.Time]
	var mu sync.Mutex
	fail := func(format string, args ...any) {
		if len(res.Failures) < 8 {
			res.Failures = append(res.Failures, fmt.Sprintf(format, args...))
		}
	}
	read := func(client *http.Client, base string, rng *rand.Rand) (int, error) {
		url := base + failoverNBIBase + "/" + names[rng.Intn(len(names))]
		if rng.Intn(10) == 0 {
			url = base + failoverNBIBase
		}
		resp, err := client.Get(url)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var turn atomic.Uint64
	for i := 0; i < max(o.Readers, 1); i++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed))
			client := &http.Client{Timeout: 5 * time.Second}
			for loadCtx.Err() == nil {
				target := a
				if turn.Add(1)%2 == 0 {
					target = b
				}
				sent := time.Now()
				code, err := read(client, target.NBIURL, rng)
				k := killedAt.Load()
				mu.Lock()
				switch {
				case target == survivor:
					res.SurvivorReads++
					if err != nil || code != http.StatusOK {
						res.SurvivorFailed++
						fail("survivor: %v %d", err, code)
					}
				case k == nil || (sent.Before(*k) && err == nil):
					res.LeaderReads++
					if err != nil || code != http.StatusOK {
						res.LeaderFailed++
						fail("leader before the kill: %v %d", err, code)
					}
				default:
					res.DeadReads++
					if err != nil {
						res.DeadRefused++
						mu.Unlock()
						code, err = read(client, survivor.NBIURL, rng)
						mu.Lock()
						if err != nil || code != http.StatusOK {
							res.DeadRetryFailed++
							fail("retried on the survivor: %v %d", err, code)
						}
					} else if code != http.StatusOK {
						res.DeadRetryFailed++
						fail("killed replica answered %d", code)
					}
				}
				mu.Unlock()
			}
		}(int64(i + 1))
	}
	var created atomic.Int64
	if o.Trickle > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(o.Trickle)
			defer t.Stop()
			for i := 0; ; i++ {
				select {
				case <-loadCtx.Done():
					return
				case <-t.C:
				}
				name := fmt.Sprintf("%s-new-%03d", o.Value, i)
				if _, err := prs.Create(ctx, failoverRequest(name, o.Label, o.Value), metav1.CreateOptions{}); err == nil {
					created.Add(1)
				}
			}
		}()
	}
	finish := func() { stopLoad(); wg.Wait() }

	sleepCtx(ctx, o.Before)
	now := time.Now()
	killedAt.Store(&now)
	leader.Kill()
	deadline := now.Add(3*o.LeaseDuration + 10*time.Second)
	for {
		m, err := survivor.Scrape()
		if err == nil && m.Sum("leader_election_master_status", nil) == 1 {
			res.NewLeaderAfter = time.Since(now)
			break
		}
		if time.Now().After(deadline) {
			finish()
			return res, fmt.Errorf("no new leader within %s of the kill", time.Since(now).Round(time.Second))
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
	sleepCtx(ctx, o.After)
	finish()
	res.Created = int(created.Load())

	total := o.Requests + res.Created
	if err := waitFulfilled(ctx, prs, selector, total, 2*time.Minute); err != nil {
		res.Total = total
		return res, err
	}
	list, err := prs.List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return res, err
	}
	res.Total = len(list.Items)
	client := &http.Client{Timeout: 5 * time.Second}
	for _, u := range list.Items {
		if state(u) == "fulfilled" {
			res.Fulfilled++
		}
		resp, err := client.Get(survivor.NBIURL + failoverNBIBase + "/" + u.GetName())
		if err != nil {
			continue
		}
		var body struct {
			Status struct {
				Phase string `json:"provisioningPhase"`
			} `json:"status"`
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK && json.Unmarshal(b, &body) == nil && body.Status.Phase == "FULFILLED" {
			res.SurvivorCurrent++
		}
	}
	posts1, err := s.packageVariantPOSTs(ctx)
	if err != nil {
		return res, err
	}
	for code, n := range posts1 {
		if d := n - posts0[code]; d != 0 {
			res.PackageVariantPOSTs[code] = d
		}
	}
	res.Duration = time.Since(start)
	return res, nil
}

func state(u unstructured.Unstructured) string {
	s, _, _ := unstructured.NestedString(u.Object, "status", "provisioningStatus", "provisioningState")
	return s
}

func waitFulfilled(ctx context.Context, prs dynamic.NamespaceableResourceInterface, selector string, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		list, err := prs.List(ctx, metav1.ListOptions{LabelSelector: selector})
		done := 0
		if err == nil {
			for _, u := range list.Items {
				if state(u) == "fulfilled" {
					done++
				}
			}
			if done >= n {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d requests fulfilled after %s (%v)", done, n, timeout, err)
		}
		sleepCtx(ctx, 200*time.Millisecond)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// whoLeads waits until exactly one of the two reports holding the Lease.
func whoLeads(ctx context.Context, a, b *Operator, timeout time.Duration) (leader, standby *Operator, err error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		ma, errA := a.Scrape()
		mb, errB := b.Scrape()
		if errA == nil && errB == nil {
			la, lb := ma.Sum("leader_election_master_status", nil), mb.Sum("leader_election_master_status", nil)
			switch {
			case la == 1 && lb == 0:
				return a, b, nil
			case lb == 1 && la == 0:
				return b, a, nil
			}
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
	return nil, nil, errors.New("neither operator (or both) holds the Lease")
}

// packageVariantPOSTs is the API server's apiserver_request_total of PackageVariant creates, by code.
func (s *Stack) packageVariantPOSTs(ctx context.Context) (map[string]float64, error) {
	raw, err := s.API.AdminClientset().CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, m := range fams["apiserver_request_total"].GetMetric() {
		l := map[string]string{}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		if l["resource"] == "packagevariants" && l["verb"] == "POST" {
			out[l["code"]] += m.GetCounter().GetValue()
		}
	}
	return out, nil
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
