package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/tests/promtest"
)

func TestTopWritesAreTheLargestPerRequest(t *testing.T) {
	by := map[string]float64{"events POST": 3000, "clusters/status PATCH": 4000, "packagevariants POST": 1000, "leases PUT": 10}
	require.Equal(t, "clusters/status PATCH 4.00, events POST 3.00, packagevariants POST 1.00", topWrites(by, 1000, 0.05))
	require.Equal(t, "–", topWrites(nil, 1000, 0.05))
	after := apiRequests{Writes: 5, ByResource: map[string]float64{"events POST": 7, "leases PUT": 2}}
	before := apiRequests{Writes: 2, ByResource: map[string]float64{"events POST": 4, "leases PUT": 2}}
	require.Equal(t, map[string]float64{"events POST": 3}, after.minus(before).ByResource)
}

// The API server's exposition of the two histograms (names and labels as kube-apiserver v1.37.2 serves
// them: staging/src/k8s.io/apiserver/pkg/endpoints/metrics/metrics.go), read into sizes and answer times.
func TestWatchSizesAndAnswerTimesAreReadPerResource(t *testing.T) {
	text := func(prs, bytes, patches, seconds float64) string {
		return fmt.Sprintf(`# TYPE apiserver_watch_events_total counter
apiserver_watch_events_total{group="o2ims.provisioning.oran.org",resource="provisioningrequests",version="v1alpha1"} %[1]g
# TYPE apiserver_watch_events_sizes histogram
apiserver_watch_events_sizes_bucket{group="o2ims.provisioning.oran.org",resource="provisioningrequests",version="v1alpha1",le="+Inf"} %[1]g
apiserver_watch_events_sizes_sum{group="o2ims.provisioning.oran.org",resource="provisioningrequests",version="v1alpha1"} %[2]g
apiserver_watch_events_sizes_count{group="o2ims.provisioning.oran.org",resource="provisioningrequests",version="v1alpha1"} %[1]g
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="o2ims.provisioning.oran.org",resource="provisioningrequests",scope="cluster",subresource="status",verb="PATCH",version="v1alpha1",le="+Inf"} %[3]g
apiserver_request_duration_seconds_sum{component="apiserver",dry_run="",group="o2ims.provisioning.oran.org",resource="provisioningrequests",scope="cluster",subresource="status",verb="PATCH",version="v1alpha1"} %[4]g
apiserver_request_duration_seconds_count{component="apiserver",dry_run="",group="o2ims.provisioning.oran.org",resource="provisioningrequests",scope="cluster",subresource="status",verb="PATCH",version="v1alpha1"} %[3]g
`, prs, bytes, patches, seconds)
	}
	parse := func(s string) apiRequests {
		fams, err := promtest.Parse(strings.NewReader(s))
		require.NoError(t, err)
		return apiRequestsOf(fams)
	}
	d := parse(text(110, 330_000, 40, 2.0)).minus(parse(text(10, 30_000, 10, 0.5)))
	require.InDelta(t, 3000, d.watchEventBytes("provisioningrequests"), 0.001)
	require.Equal(t, 50*time.Millisecond, d.Served["provisioningrequests/status PATCH"].Mean())
	require.Zero(t, d.watchEventBytes("clusters"), "a resource nobody watched has no size")
	require.Equal(t, "provisioningrequests 3000 B", watchSizes(d, 1000))
	require.Equal(t, "–", watchSizes(d, 1001), "fewer events than one per ten requests: not shown")
	require.Equal(t, "provisioningrequests/status PATCH 50.0 ms", answerTimes(d, 300))
}
