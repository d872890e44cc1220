package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/tests/alerting"
	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

const perfBase = "/O2ims_infrastructurePerformance/v2"

// A measurement job through the binary with Debian's real Prometheus scraping two exporters whose
// values the test sets, each target's instance label its host's NetBox device name: the job reports
// exactly those values per inventory resource; a changed value is reported at a later collection;
// Prometheus stopped is a FAILED job with an open gap and the last values kept; a restarted binary
// finds the job, its values and its gap in the store.
func TestAMeasurementJobReportsWhatPrometheusScrapedThroughTheBinary(t *testing.T) {
	ctx := context.Background()
	h1 := alerting.NewNodeExporter(t, 64e9, 48e9, true)
	h2 := alerting.NewNodeExporter(t, 32e9, 8e9, false)
	prom := alerting.StartPrometheus(t, alerting.NodeScrapeConfig(map[string]string{h1.Addr: "server-01", h2.Addr: "server-02:9100"}))
	prom.Await(t, alerting.Scraped, 1)

	// An operator of its own with Prometheus (the shared one has none), leaving every request alone.
	env := map[string]string{"PROMETHEUS_URL": prom.URL, "PERFORMANCE_MIN_INTERVAL": "1", "PROVISIONING_REQUEST_SELECTOR": privateLabel}
	op, err := st.StartOperator(ctx, env)
	require.NoError(t, err)
	defer func() { _ = op.Stop(10 * time.Second) }()

	r1, r2 := resourceNamed(t, op, "server-01"), resourceNamed(t, op, "server-02")
	code, _, body := call(t, http.MethodPost, op.NBIURL+perfBase+"/measurementJobs", map[string]any{
		"collectionInterval":           1,
		"resourceScopeCriteria":        map[string]any{"resourceId": []string{r1, r2}},
		"measurementSelectionCriteria": map[string]any{"performanceMeasurementId": []string{"memory.total", "memory.available", "cpu.utilization", "power.average"}},
	})
	require.Equal(t, http.StatusCreated, code, string(body))
	var created map[string]any
	require.NoError(t, json.Unmarshal(body, &created))
	jobURL := op.NBIURL + perfBase + "/measurementJobs/" + created["performanceMeasurementJobId"].(string)
	defer func() { call(t, http.MethodDelete, jobURL, nil) }()

	var job perfJob
	eventually(t, 60*time.Second, func() bool {
		job = getJob(t, jobURL)
		return job.Status == "RUNNING" && job.value("memory.total", r1) != nil
	},
		"never collected: %v", lazy(func() string { return fmt.Sprint(job) }))
	for _, c := range []struct {
		m, r string
		want float64
	}{{"memory.total", r1, 64e9}, {"memory.available", r1, 48e9}, {"memory.total", r2, 32e9}, {"memory.available", r2, 8e9},
		{"cpu.utilization", r1, 100}, {"power.average", r1, 180}} {
		got := job.value(c.m, c.r)
		require.NotNil(t, got, "%s of %s", c.m, c.r)
		require.Equal(t, c.want, *got, "%s of %s", c.m, c.r)
	}
	require.Nil(t, job.value("power.average", r2), "server-02 exposes no power sensor")

	h1.MemAvailable.Set(40e9)
	eventually(t, 60*time.Second, func() bool {
		job = getJob(t, jobURL)
		v := job.value("memory.available", r1)
		return v != nil && *v == 40e9
	}, "the changed value was never reported")

	prom.Stop()
	eventually(t, 60*time.Second, func() bool { job = getJob(t, jobURL); return job.Status == "FAILED" },
		"Prometheus stopped, the job never FAILED: %v", lazy(func() string { return fmt.Sprint(job) }))
	require.Contains(t, job.Extensions.Collection.Message, "connection refused")
	require.Len(t, job.Extensions.Collection.Gaps, 1)
	require.Empty(t, job.Extensions.Collection.Gaps[0].To, "the gap is open")
	require.Equal(t, 40e9, *job.value("memory.available", r1), "the last value is kept")

	require.NoError(t, op.Stop(10*time.Second))
	op, err = st.StartOperator(ctx, env)
	require.NoError(t, err)
	jobURL = op.NBIURL + perfBase + "/measurementJobs/" + created["performanceMeasurementJobId"].(string)
	after := getJob(t, jobURL)
	require.Equal(t, "FAILED", after.Status, "the restarted binary finds the job as it was")
	require.Equal(t, job.Extensions.Collection.LastSuccess, after.Extensions.Collection.LastSuccess)
	require.Equal(t, 40e9, *after.value("memory.available", r1))
}

// perfJob is what the test reads of a MeasurementJob.
type perfJob struct {
	Status    string `json:"status"`
	Collected []struct {
		Measurement string  `json:"performanceMeasurementId"`
		Resource    string  `json:"resourceId"`
		Value       float64 `json:"value"`
	} `json:"collectedMeasurements"`
	Extensions struct {
		Collection struct {
			Message     string `json:"message"`
			LastSuccess string `json:"lastSuccess"`
			Gaps        []struct {
				From string `json:"from"`
				To   string `json:"to"`
			} `json:"gaps"`
		} `json:"collection"`
	} `json:"extensions"`
}

func (j perfJob) value(m, r string) *float64 {
	for _, c := range j.Collected {
		if c.Measurement == m && c.Resource == r {
			return &c.Value
		}
	}
	return nil
}

func getJob(t *testing.T, u string) perfJob {
	t.Helper()
	code, _, body := call(t, http.MethodGet, u, nil)
	require.Equal(t, http.StatusOK, code, string(body))
	var j perfJob
	require.NoError(t, json.Unmarshal(body, &j), string(body))
	return j
}

// resourceNamed is the inventory id of the NetBox device name, as the operator's inventory answers it.
func resourceNamed(t *testing.T, op *stack.Operator, name string) string {
	t.Helper()
	var id string
	eventually(t, 30*time.Second, func() bool {
		code, _, body := call(t, http.MethodGet, op.NBIURL+invBase+"/resourcePools", nil)
		var pools []map[string]any
		if code != http.StatusOK || json.Unmarshal(body, &pools) != nil {
			return false
		}
		for _, p := range pools {
			q := op.NBIURL + invBase + "/resourcePools/" + p["resourcePoolId"].(string) + "/resources?filter=" + url.QueryEscape("(eq,extensions/name,"+name+")")
			code, _, body := call(t, http.MethodGet, q, nil)
			var rs []map[string]any
			if code == http.StatusOK && json.Unmarshal(body, &rs) == nil && len(rs) == 1 {
				id = rs[0]["resourceId"].(string)
				return true
			}
		}
		return false
	}, "no inventory resource named %s", name)
	return id
}
