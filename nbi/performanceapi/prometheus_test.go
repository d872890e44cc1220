package performanceapi

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/tests/alerting"
)

// End to end with a real Prometheus: a job created through the NBI reports exactly the values the
// exporters expose, per inventory resource (instance label = NetBox device name, a port stripped);
// a changed value is the next collection's; Prometheus stopped is a FAILED status and an open gap with
// the last values kept; a restart of the NBI and its store finds the job; Prometheus back closes the gap.
func TestJobsReportWhatPrometheusScraped(t *testing.T) {
	e := newEnv(t)
	h1 := alerting.NewNodeExporter(t, 64e9, 48e9, true)
	h2 := alerting.NewNodeExporter(t, 32e9, 8e9, false)
	// Each target's instance label is its host's NetBox device name (host-2's with a port, as a
	// DNS-named target has one).
	config := alerting.NodeScrapeConfig(map[string]string{h1.Addr: "host-1", h2.Addr: "host-2:9100"})
	prom := alerting.StartPrometheus(t, config)
	e.connect(prom.URL)
	prom.Await(t, alerting.Scraped, 1) // enough samples for a rate

	all := `{"collectionInterval": 1, "measurementSelectionCriteria": {"performanceMeasurementId":
		["cpu.utilization", "memory.total", "memory.available", "network.receive.bytes", "network.transmit.bytes", "power.average"]}}`
	id := e.post(v2+"/measurementJobs", all).Object(t)["performanceMeasurementJobId"].(string)
	only2 := fmt.Sprintf(`{"collectionInterval": 1, "resourceScopeCriteria": {"resourceId": %q},
		"measurementSelectionCriteria": {"performanceMeasurementId": "memory.total"}}`, e.resourceOf("host-2"))
	id2 := e.post(v2+"/measurementJobs", only2).Object(t)["performanceMeasurementJobId"].(string)
	e.evaluate()

	r1, r2 := e.resourceOf("host-1"), e.resourceOf("host-2")
	job := e.job(id)
	require.Equal(t, "RUNNING", job["status"], "every query answered: %v", collection(job))
	for _, c := range []struct {
		m, r string
		want float64
	}{
		{"memory.total", r1, 64e9}, {"memory.available", r1, 48e9}, {"memory.total", r2, 32e9}, {"memory.available", r2, 8e9},
		{"power.average", r1, 180}, {"cpu.utilization", r1, 100}, {"cpu.utilization", r2, 100},
		{"network.receive.bytes", r1, 0}, {"network.transmit.bytes", r2, 0},
	} {
		got, ok := value(job, c.m, c.r)
		require.True(t, ok, "%s of %s collected", c.m, c.r)
		require.Equal(t, c.want, got, "%s of %s", c.m, c.r)
	}
	_, ok := value(job, "power.average", r2)
	require.False(t, ok, "host-2 exposes no power sensor")
	require.Len(t, job["measuredResources"], 2)
	require.Len(t, job["qualifiedResourceTypes"], 1)
	firstSuccess := collection(job)["lastSuccess"]
	require.NotEmpty(t, firstSuccess)
	scoped := e.job(id2)
	require.Len(t, scoped["collectedMeasurements"], 1, "the scope is host-2 only")
	v, _ := value(scoped, "memory.total", r2)
	require.Equal(t, 32e9, v)

	h1.MemAvailable.Set(40e9)
	prom.Await(t, `node_memory_MemAvailable_bytes{instance="host-1"}`, 40e9)
	e.evaluate()
	v, _ = value(e.job(id), "memory.available", r1)
	require.Equal(t, 40e9, v, "the next collection's value")

	prom.Stop()
	e.evaluate()
	job = e.job(id)
	require.Equal(t, "FAILED", job["status"])
	c := collection(job)
	require.Contains(t, c["message"], "Prometheus unreachable (connection refused)")
	require.Len(t, c["gaps"], 1)
	kept, _ := value(job, "memory.available", r1)
	require.Equal(t, 40e9, kept, "the last values are kept")
	lastGood := c["lastSuccess"]

	e.restart() // a new process on the same store
	job = e.job(id)
	require.Equal(t, "FAILED", job["status"])
	require.Equal(t, lastGood, collection(job)["lastSuccess"])

	prom = alerting.StartPrometheus(t, config)
	e.connect(prom.URL)
	prom.Await(t, alerting.Scraped, 1)
	e.evaluate()
	job = e.job(id)
	require.Equal(t, "RUNNING", job["status"], "%v", collection(job))
	gap := collection(job)["gaps"].([]any)[0].(map[string]any)
	require.Contains(t, gap, "to", "Prometheus back closes the gap")
	require.NotEqual(t, lastGood, collection(job)["lastSuccess"])
}
