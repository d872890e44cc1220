package main

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/o2ims-operator/o2ims-operator/tests/promtest"
	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

// apiRequests is the API server's own count of the requests it served (apiserver_request_total), by
// "writes" (POST, PUT, PATCH, DELETE, APPLY) and "reads" — everyone's: the operator's, the simulated
// world's and the load generator's. ByResource splits them (watches aside) by "resource[/subresource]
// VERB", so a run says whose calls load the API server (the world's Cluster updates, or ours).
type apiRequests struct {
	Writes, Reads float64
	ByResource    map[string]float64
	// Watched: watch events the server sent, by resource, summed over every watcher (a write watched by
	// more clients costs the server more).
	Watched map[string]float64
	// WatchBytes: the bytes of those events, by resource (apiserver_watch_events_sizes): a larger object
	// costs the server more on every write and every watcher.
	WatchBytes map[string]float64
	// Served: the time the server took to answer, in seconds, and the calls, by "resource[/subresource]
	// VERB" (apiserver_request_duration_seconds): what a worker waiting on its call waits for.
	Served map[string]servedTime
}

// servedTime is the API server's answer time summed over Calls calls.
type servedTime struct{ Seconds, Calls float64 }

// Mean is the mean answer time of a call.
func (s servedTime) Mean() time.Duration {
	return time.Duration(s.Seconds / max(s.Calls, 1) * float64(time.Second))
}

func scrapeAPIServer(ctx context.Context, st *stack.Stack) (apiRequests, error) {
	raw, err := st.API.AdminClientset().CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return apiRequests{}, err
	}
	fams, err := promtest.Parse(bytes.NewReader(raw))
	if err != nil {
		return apiRequests{}, err
	}
	return apiRequestsOf(fams), nil
}

// apiRequestsOf reads apiserver_request_total from the API server's metrics.
func apiRequestsOf(fams promtest.Families) apiRequests {
	r := apiRequests{ByResource: map[string]float64{}, Watched: map[string]float64{}, WatchBytes: map[string]float64{},
		Served: map[string]servedTime{}}
	if fam, ok := fams["apiserver_watch_events_total"]; ok {
		for _, s := range fam.GetMetric() {
			l := labelsOf(s)
			what := cmp.Or(l["resource"], l["kind"])
			r.Watched[what] += s.GetCounter().GetValue()
		}
	}
	if fam, ok := fams["apiserver_watch_events_sizes"]; ok {
		for _, s := range fam.GetMetric() {
			l := labelsOf(s)
			r.WatchBytes[cmp.Or(l["resource"], l["kind"])] += s.GetHistogram().GetSampleSum()
		}
	}
	if fam, ok := fams["apiserver_request_duration_seconds"]; ok {
		for _, s := range fam.GetMetric() {
			key := callKey(labelsOf(s))
			t := r.Served[key]
			t.Seconds += s.GetHistogram().GetSampleSum()
			t.Calls += float64(s.GetHistogram().GetSampleCount())
			r.Served[key] = t
		}
	}
	fam, ok := fams["apiserver_request_total"]
	if !ok {
		return r
	}
	for _, s := range fam.GetMetric() {
		switch labelsOf(s)["verb"] {
		case "POST", "PUT", "PATCH", "DELETE", "APPLY", "DELETECOLLECTION":
			r.Writes += s.GetCounter().GetValue()
		case "WATCH", "CONNECT":
			continue
		default:
			r.Reads += s.GetCounter().GetValue()
		}
		r.ByResource[callKey(labelsOf(s))] += s.GetCounter().GetValue()
	}
	return r
}

// callKey is "resource[/subresource] VERB" of a sample of the API server's request metrics.
func callKey(l map[string]string) string {
	key := l["resource"]
	if l["subresource"] != "" {
		key += "/" + l["subresource"]
	}
	return key + " " + l["verb"]
}

func (a apiRequests) minus(b apiRequests) apiRequests {
	served := map[string]servedTime{}
	for k, v := range a.Served {
		if d := (servedTime{v.Seconds - b.Served[k].Seconds, v.Calls - b.Served[k].Calls}); d.Calls > 0 {
			served[k] = d
		}
	}
	return apiRequests{Writes: a.Writes - b.Writes, Reads: a.Reads - b.Reads, ByResource: grown(a.ByResource, b.ByResource),
		Watched: grown(a.Watched, b.Watched), WatchBytes: grown(a.WatchBytes, b.WatchBytes), Served: served}
}

// grown is what each counter of after gained over before (only those that did).
func grown(after, before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// watchEventBytes is the mean size of the watch events the server sent about a resource.
func (a apiRequests) watchEventBytes(resource string) float64 {
	return a.WatchBytes[resource] / max(a.Watched[resource], 1)
}

// topWrites is the entries of by of at least least per request, largest first ("clusters/status PATCH 2.10").
func topWrites(by map[string]float64, requests int, least float64) string {
	keys := slices.Collect(maps.Keys(by))
	slices.SortFunc(keys, func(x, y string) int {
		if c := cmp.Compare(by[y], by[x]); c != 0 {
			return c
		}
		return strings.Compare(x, y)
	})
	var out []string
	for _, k := range keys {
		if per := by[k] / float64(max(requests, 1)); per >= least {
			out = append(out, fmt.Sprintf("%s %.2f", k, per))
		}
	}
	if len(out) == 0 {
		return "–"
	}
	return strings.Join(out, ", ")
}

// answerTimes is the mean answer time of each call made at least once per ten requests, the most
// frequent first ("provisioningrequests/status PATCH 34.6 ms, ...").
func answerTimes(a apiRequests, requests int) string {
	keys := slices.Collect(maps.Keys(a.Served))
	slices.SortFunc(keys, func(x, y string) int {
		return cmp.Or(cmp.Compare(a.Served[y].Calls, a.Served[x].Calls), cmp.Compare(x, y))
	})
	var out []string
	for _, k := range keys {
		if a.Served[k].Calls >= 0.1*float64(max(requests, 1)) {
			out = append(out, fmt.Sprintf("%s %.1f ms", k, float64(a.Served[k].Mean().Microseconds())/1000))
		}
	}
	if len(out) == 0 {
		return "–"
	}
	return strings.Join(out, ", ")
}

// watchSizes is the mean size of a watch event of each resource watched at least once per ten requests
// ("provisioningrequests 3321 B").
func watchSizes(a apiRequests, requests int) string {
	keys := slices.Sorted(maps.Keys(a.WatchBytes))
	var out []string
	for _, k := range keys {
		if a.Watched[k] > 0 && a.Watched[k] >= 0.1*float64(max(requests, 1)) {
			out = append(out, fmt.Sprintf("%s %.0f B", k, a.watchEventBytes(k)))
		}
	}
	if len(out) == 0 {
		return "–"
	}
	return strings.Join(out, ", ")
}
