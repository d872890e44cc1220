package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

const nbiBase = "/O2ims_infrastructureProvisioning/v1/provisioningRequests"

// nbiClient is a keep-alive loopback HTTP client.
func nbiClient(conns int) *http.Client {
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns,
			IdleConnTimeout: time.Minute, DisableCompression: true,
		},
	}
}

// get fetches a URL, reads the whole body and returns the status, the next-page link and the body size.
func get(ctx context.Context, c *http.Client, url string) (int, string, int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nextPage(resp.Header.Get("Link")), n, err
}

// nextPage extracts the target of `<…>; rel="next"`.
func nextPage(link string) string {
	for _, part := range strings.Split(link, ",") {
		target, params, ok := strings.Cut(part, ";")
		if ok && strings.Contains(params, `rel="next"`) {
			return strings.Trim(strings.TrimSpace(target), "<>")
		}
	}
	return ""
}

// samples is a set of latencies in seconds.
type samples []float64

func (s samples) stats() (p50, p99, max time.Duration) {
	c := append(samples(nil), s...)
	sort.Float64s(c)
	d := func(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }
	if len(c) == 0 {
		return 0, 0, 0
	}
	return d(quantile(c, 0.5)), d(quantile(c, 0.99)), d(c[len(c)-1])
}

// nbiLatency is section 3's result.
type nbiLatency struct {
	Cached                          int // requests the NBI listed (all pages)
	Pages                           int // pages of a full list
	PageBytes                       int64
	Named, FirstPage, FullList, Any samples
	// EmptyPage: a list page after the last id — no item answered, so only the store (the cache's list of
	// every request) and the scan for the marker are paid.
	EmptyPage   samples
	Timed       int     // GETs between the two scrapes (warm-up included)
	APIGets     float64 // the NBI instance's GETs of provisioningrequests across the section
	Leading     float64 // leader_election_master_status of the NBI instance (must be 0)
	HandlerRuns float64 // its handler runs (must be 0)
	CPU         cpuWindow
	// Server side (o2ims_nbi_request_duration_seconds): the handler's own time, without HTTP transfer.
	ServerNamed, ServerList histDelta
}

// nbiRoutes splits the NBI's duration histogram into named GETs and list GETs.
func nbiServerSide(before, after stack.Metrics) (named, list histDelta) {
	is := func(list bool) func(*dto.Metric) bool {
		return func(s *dto.Metric) bool {
			l := labelsOf(s)
			if l["method"] != http.MethodGet {
				return false
			}
			if list {
				return strings.HasSuffix(l["route"], "provisioningRequests")
			}
			return strings.Contains(l["route"], "provisioningRequests/{")
		}
	}
	const h = "o2ims_nbi_request_duration_seconds"
	return histogramDeltaWhere(before, after, h, is(false)), histogramDeltaWhere(before, after, h, is(true))
}

func apiGets(m stack.Metrics) float64 {
	return m.Sum("o2ims_rest_client_requests_by_resource_total", map[string]string{"resource": "provisioningrequests", "method": http.MethodGet})
}

// measureNBILatency times named GETs, first pages and full lists one at a time (no concurrency).
func measureNBILatency(ctx context.Context, op *stack.Operator, names []string, named, firstPages, fullLists, emptyPages int) (nbiLatency, []string, error) {
	var r nbiLatency
	c := nbiClient(1)
	coll := op.NBIURL + nbiBase
	// A full list first: how many the cache holds, and the page links the load section reuses.
	var pageLinks []string
	url := coll
	for url != "" {
		code, next, n, err := get(ctx, c, url)
		if err != nil || code != http.StatusOK {
			return r, nil, fmt.Errorf("GET %s: %d %v", url, code, err)
		}
		if r.Pages == 0 {
			r.PageBytes = n
		}
		pageLinks = append(pageLinks, url)
		r.Pages++
		if next != "" {
			url = op.NBIURL + next
		} else {
			url = ""
		}
	}
	count, err := countAll(ctx, c, coll)
	if err != nil {
		return r, nil, err
	}
	r.Cached = count

	before, err := op.Scrape()
	if err != nil {
		return r, nil, err
	}
	m := startMeter(map[string]int{"operator": op.Pid()})
	timed := func(url string) (float64, string, error) {
		r.Timed++
		t := time.Now()
		code, next, _, err := get(ctx, c, url)
		d := time.Since(t).Seconds()
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("GET %s answered %d", url, code)
		}
		return d, next, err
	}
	// Warm-up: connections, caches, the first-use paths.
	for i := 0; i < 200; i++ {
		if _, _, err := timed(coll + "/" + names[i%len(names)]); err != nil {
			return r, nil, err
		}
	}
	for i := 0; i < 5; i++ {
		if _, _, err := timed(coll); err != nil {
			return r, nil, err
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < named; i++ {
		d, _, err := timed(coll + "/" + names[rng.IntN(len(names))])
		if err != nil {
			return r, nil, err
		}
		r.Named = append(r.Named, d)
	}
	for i := 0; i < firstPages; i++ {
		d, _, err := timed(coll)
		if err != nil {
			return r, nil, err
		}
		r.FirstPage = append(r.FirstPage, d)
	}
	for i := 0; i < fullLists; i++ {
		t := time.Now()
		url := coll
		for url != "" {
			d, next, err := timed(url)
			if err != nil {
				return r, nil, err
			}
			r.Any = append(r.Any, d)
			url = ""
			if next != "" {
				url = op.NBIURL + next
			}
		}
		r.FullList = append(r.FullList, time.Since(t).Seconds())
	}
	empty := coll + "?nextpage_opaque_marker=" + base64.RawURLEncoding.EncodeToString([]byte("zzzz"))
	for i := 0; i < emptyPages; i++ {
		d, _, err := timed(empty)
		if err != nil {
			return r, nil, err
		}
		r.EmptyPage = append(r.EmptyPage, d)
	}
	r.CPU = m.end()
	after, err := op.Scrape()
	if err != nil {
		return r, nil, err
	}
	r.APIGets = apiGets(after) - apiGets(before)
	r.ServerNamed, r.ServerList = nbiServerSide(before, after)
	r.Leading = after.Sum("leader_election_master_status", nil)
	r.HandlerRuns = after.Sum("o2ims_handler_runs_total", nil)
	return r, pageLinks, nil
}

// countAll walks every page and counts the items.
func countAll(ctx context.Context, c *http.Client, coll string) (int, error) {
	base := coll[:strings.Index(coll, nbiBase)]
	url, total := coll, 0
	for url != "" {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		var page struct {
			Items []json.RawMessage `json:"items"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			return 0, err
		}
		total += len(page.Items)
		url = ""
		if next := nextPage(resp.Header.Get("Link")); next != "" {
			url = base + next
		}
	}
	return total, nil
}

// nbiLoad is section 5's result.
type nbiLoad struct {
	Duration     time.Duration
	Clients      int
	Requests     int64
	Named, Pages int64
	Errors       int64
	FirstError   string
	NamedLat     samples
	PageLat      samples
	RSS          []uint64  // one a second
	HeapGoal     []float64 // go_memstats_next_gc_bytes, one a second: about twice the heap live after the last GC
	PeakBefore   uint64
	PeakAfter    uint64
	HeapStart    float64
	HeapEnd      float64
	APIGets      float64
	CPU          cpuWindow
}

// runNBILoad drives the NBI with clients concurrent loops (named GETs, and a list page every tenth
// request) for d, sampling the operator's RSS every second.
func runNBILoad(ctx context.Context, op *stack.Operator, names, pageLinks []string, clients int, d time.Duration) (nbiLoad, error) {
	r := nbiLoad{Duration: d, Clients: clients}
	before, err := op.Scrape()
	if err != nil {
		return r, err
	}
	r.HeapStart = before.Sum("go_memstats_heap_inuse_bytes", nil)
	if mem, err := op.Memory(); err == nil {
		r.PeakBefore = mem.Peak
		r.RSS = append(r.RSS, mem.RSS)
	}
	c := nbiClient(clients)
	coll := op.NBIURL + nbiBase
	var mu sync.Mutex
	var requests, named, pages, errs atomic.Int64
	lctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	m := startMeter(map[string]int{"operator": op.Pid()})
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 7))
			var nl, pl samples
			for n := 0; lctx.Err() == nil; n++ {
				url, isPage := coll+"/"+names[rng.IntN(len(names))], false
				if n%10 == 9 {
					url, isPage = pageLinks[rng.IntN(len(pageLinks))], true
				}
				t := time.Now()
				code, _, _, err := get(lctx, c, url)
				lat := time.Since(t).Seconds()
				if lctx.Err() != nil {
					break // cut off by the end of the run: not an answer
				}
				requests.Add(1)
				if err != nil || code != http.StatusOK {
					if errs.Add(1) == 1 {
						mu.Lock()
						r.FirstError = fmt.Sprintf("GET %s: %d %v", url, code, err)
						mu.Unlock()
					}
					continue
				}
				if isPage {
					pages.Add(1)
					pl = append(pl, lat)
				} else {
					named.Add(1)
					nl = append(nl, lat)
				}
			}
			mu.Lock()
			r.NamedLat = append(r.NamedLat, nl...)
			r.PageLat = append(r.PageLat, pl...)
			mu.Unlock()
		}(uint64(i + 1))
	}
	tick := time.NewTicker(time.Second)
	start := time.Now()
sampling:
	for {
		select {
		case <-lctx.Done():
			break sampling
		case <-tick.C:
			if mem, err := op.Memory(); err == nil {
				r.RSS = append(r.RSS, mem.RSS)
			}
			if m, err := op.Scrape(); err == nil {
				r.HeapGoal = append(r.HeapGoal, m.Sum("go_memstats_next_gc_bytes", nil))
			}
		}
	}
	tick.Stop()
	wg.Wait()
	r.Duration = time.Since(start)
	r.CPU = m.end()
	if mem, err := op.Memory(); err == nil {
		r.RSS = append(r.RSS, mem.RSS)
		r.PeakAfter = mem.Peak
	}
	r.Requests, r.Named, r.Pages, r.Errors = requests.Load(), named.Load(), pages.Load(), errs.Load()
	after, err := op.Scrape()
	if err != nil {
		return r, err
	}
	r.HeapEnd = after.Sum("go_memstats_heap_inuse_bytes", nil)
	r.APIGets = apiGets(after) - apiGets(before)
	return r, nil
}

func (r nbiLoad) rssStats() (start, max, end uint64) {
	if len(r.RSS) == 0 {
		return 0, 0, 0
	}
	start, end = r.RSS[0], r.RSS[len(r.RSS)-1]
	for _, v := range r.RSS {
		if v > max {
			max = v
		}
	}
	return start, max, end
}

// warmup is when the RSS has reached the plateau the concurrent list pages set (Go's heap growing to its
// GC target); memory is flat when it does not grow after that.
const warmup = 10

// flatness compares the RSS after warm-up with its end: the plateau (max over seconds warmup/2…warmup),
// the end (max over the last 5 samples), and the least-squares slope from warm-up on, in bytes per minute.
func (r nbiLoad) flatness() (plateau, end uint64, slope float64, flat bool) {
	if len(r.RSS) < warmup+5 {
		s, _, e := r.rssStats()
		return s, e, 0, e <= s+s/20
	}
	for _, v := range r.RSS[warmup/2 : warmup+1] {
		plateau = max(plateau, v)
	}
	for _, v := range r.RSS[len(r.RSS)-5:] {
		end = max(end, v)
	}
	xs := r.RSS[warmup:]
	n := float64(len(xs))
	var sx, sy, sxy, sxx float64
	for i, v := range xs {
		x, y := float64(i), float64(v)
		sx, sy, sxy, sxx = sx+x, sy+y, sxy+x*y, sxx+x*x
	}
	if d := n*sxx - sx*sx; d != 0 {
		slope = (n*sxy - sx*sy) / d * 60 // samples are a second apart
	}
	return plateau, end, slope, end <= plateau+plateau/20
}
