package main

import (
	"bytes"
	"context"

	"github.com/o2ims-operator/o2ims-operator/tests/promtest"
	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

// apiRequests is the API server's own count of the requests it served (apiserver_request_total), by
// "writes" (POST, PUT, PATCH, DELETE, APPLY) and "reads" — everyone's: the operator's, the simulated
// world's and the load generator's.
type apiRequests struct{ Writes, Reads float64 }

func scrapeAPIServer(ctx context.Context, st *stack.Stack) (apiRequests, error) {
	raw, err := st.API.AdminClientset().CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return apiRequests{}, err
	}
	fams, err := promtest.Parse(bytes.NewReader(raw))
	if err != nil {
		return apiRequests{}, err
	}
	var r apiRequests
	fam, ok := fams["apiserver_request_total"]
	if !ok {
		return r, nil
	}
	for _, s := range fam.GetMetric() {
		switch labelsOf(s)["verb"] {
		case "POST", "PUT", "PATCH", "DELETE", "APPLY", "DELETECOLLECTION":
			r.Writes += s.GetCounter().GetValue()
		case "WATCH", "CONNECT":
		default:
			r.Reads += s.GetCounter().GetValue()
		}
	}
	return r, nil
}

func (a apiRequests) minus(b apiRequests) apiRequests {
	return apiRequests{Writes: a.Writes - b.Writes, Reads: a.Reads - b.Reads}
}
