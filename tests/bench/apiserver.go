package main

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

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
	r := apiRequests{ByResource: map[string]float64{}, Watched: map[string]float64{}}
	if fam, ok := fams["apiserver_watch_events_total"]; ok {
		for _, s := range fam.GetMetric() {
			l := labelsOf(s)
			what := cmp.Or(l["resource"], l["kind"])
			r.Watched[what] += s.GetCounter().GetValue()
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
		l := labelsOf(s)
		key := l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		r.ByResource[key+" "+l["verb"]] += s.GetCounter().GetValue()
	}
	return r
}

func (a apiRequests) minus(b apiRequests) apiRequests {
	by := map[string]float64{}
	for k, v := range a.ByResource {
		if d := v - b.ByResource[k]; d > 0 {
			by[k] = d
		}
	}
	watched := map[string]float64{}
	for k, v := range a.Watched {
		if d := v - b.Watched[k]; d > 0 {
			watched[k] = d
		}
	}
	return apiRequests{Writes: a.Writes - b.Writes, Reads: a.Reads - b.Reads, ByResource: by, Watched: watched}
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
