package performanceapi

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

const memJob = `{"consumerPerformanceJobId": "smo-7", "collectionInterval": 1,
	"measurementSelectionCriteria": {"performanceMeasurementId": ["memory.available", "memory.total"]},
	"extensions": {"owner": "smo"}}`

// A job is created (201, Location, the MeasurementJob), listed (exclude_default leaves out the
// measured resources and collected measurements unless all_fields asks), filtered, read and deleted;
// requests the spec's data types do not allow are 400s saying why; MaxJobs is a 409.
func TestJobsCreatedListedReadDeletedAndBounded(t *testing.T) {
	e := newEnv(t)
	x := e.post(v2+"/measurementJobs", memJob)
	require.Equal(t, http.StatusCreated, x.Code(), string(x.Body))
	job := x.Object(t)
	id := job["performanceMeasurementJobId"].(string)
	require.Equal(t, v2+"/measurementJobs/"+id, x.Resp.Header.Get("Location"))
	require.Equal(t, "ACTIVE", job["state"])
	require.Equal(t, "RUNNING", job["status"])
	require.Equal(t, false, job["preinstalledJob"])
	require.Equal(t, "smo-7", job["consumerPerformanceJobId"])
	require.EqualValues(t, 1, job["collectionInterval"])
	require.Equal(t, map[string]any{"performanceMeasurementId": []any{"memory.total", "memory.available"}}, job["measurementSelectionCriteria"],
		"in the dictionaries' order")
	require.Equal(t, "smo", job["extensions"].(map[string]any)["owner"])
	require.Equal(t, "waiting for the first collection from Prometheus", collection(job)["message"], "no success before Prometheus answered")

	list := e.get(v2 + "/measurementJobs").Items(t)
	require.Len(t, list, 1)
	require.NotContains(t, list[0], "collectedMeasurements")
	require.NotContains(t, list[0], "measuredResources")
	all := e.get(v2 + "/measurementJobs?all_fields").Items(t)
	require.Contains(t, all[0], "collectedMeasurements")
	require.Len(t, e.get(v2+"/measurementJobs?filter="+url.QueryEscape("(eq,consumerPerformanceJobId,smo-8)")).Items(t), 0)
	require.Len(t, e.get(Root+"/v2/measurementJobs?filter="+url.QueryEscape("(eq,status,RUNNING)")).Items(t), 1, "the alias is the same API")
	require.Equal(t, http.StatusBadRequest, e.get(v2+"/measurementJobs?filter=(eq,nope,1)").Code())

	for body, detail := range map[string]string{
		`{"measurementSelectionCriteria": {"performanceMeasurementId": "memory.total"}}`: "collectionInterval is required",
		`{"collectionInterval": 1}`: "performanceMeasurementId is required",
		`{"collectionInterval": 0, "measurementSelectionCriteria": {"performanceMeasurementId": "memory.total"}}`:                                                    "want seconds from 1",
		`{"collectionInterval": 1, "measurementSelectionCriteria": {"performanceMeasurementId": "disk.iops"}}`:                                                       "in no performance dictionary",
		`{"collectionInterval": 1, "measurementSelectionCriteria": {"name": "x"}}`:                                                                                   "only performanceMeasurementId",
		`{"collectionInterval": 1, "measurementSelectionCriteria": {"performanceMeasurementId": "memory.total"}, "resourceScopeCriteria": {"resourceId": "host-1"}}`: "not an inventory id",
		`{"collectionInterval": 1, "measurementSelectionCriteria": {"performanceMeasurementId": "memory.total"}, "extensions": {"collection": 1}}`:                   "the operator's",
		`{"collectionInterval": 1, "measurementSelectionCriteria": {"performanceMeasurementId": "memory.total"}, "state": "ACTIVE"}`:                                 "unknown field",
	} {
		x := e.post(v2+"/measurementJobs", body)
		require.Equal(t, http.StatusBadRequest, x.Code(), body)
		require.Contains(t, x.Problem(t).Detail, detail, body)
	}

	for range 2 {
		require.Equal(t, http.StatusCreated, e.post(v2+"/measurementJobs", memJob).Code())
	}
	x = e.post(v2+"/measurementJobs", memJob)
	require.Equal(t, http.StatusConflict, x.Code(), "MaxJobs is 3")
	require.Contains(t, x.Problem(t).Detail, "PERFORMANCE_MAX_JOBS")

	require.Equal(t, http.StatusNoContent, e.send(http.MethodDelete, v2+"/measurementJobs/"+id, "", "").Code())
	require.Equal(t, http.StatusNotFound, e.get(v2+"/measurementJobs/"+id).Code())
	require.Equal(t, http.StatusNotFound, e.send(http.MethodDelete, v2+"/measurementJobs/"+id, "", "").Code())
	require.Len(t, e.get(v2+"/measurementJobs").Items(t), 2)
}

// The configuration: the default, a PUT of a whole one, a merge PATCH answered with what it modified;
// out-of-range retention is a 400; what is stored survives a restart.
func TestPerformanceServiceConfiguration(t *testing.T) {
	e := newEnv(t)
	cfg := v2 + "/performanceServiceConfiguration"
	require.JSONEq(t, `{"retentionPeriod": 1, "extensions": {}}`, string(e.get(cfg).Body))
	x := e.send(http.MethodPut, cfg, `{"retentionPeriod": 7, "extensions": {"a": 1, "b": 2}}`, "application/json")
	require.Equal(t, http.StatusOK, x.Code(), string(x.Body))
	require.JSONEq(t, `{"retentionPeriod": 7, "extensions": {"a": 1, "b": 2}}`, string(x.Body))
	x = e.send(http.MethodPatch, cfg, `{"extensions": {"a": null, "c": 3}}`, mediaMergePatch)
	require.Equal(t, http.StatusOK, x.Code(), string(x.Body))
	require.JSONEq(t, `{"extensions": {"b": 2, "c": 3}}`, string(x.Body), "only what the patch modified")
	for _, bad := range []string{`{"retentionPeriod": 0}`, `{"retentionPeriod": 366}`, `{"retentionPeriod": null}`, `{}`} {
		require.Equal(t, http.StatusBadRequest, e.send(http.MethodPatch, cfg, bad, mediaMergePatch).Code(), bad)
	}
	require.Equal(t, http.StatusUnsupportedMediaType, e.send(http.MethodPut, cfg, `{"retentionPeriod": 2}`, "text/plain").Code())
	e.restart()
	x = e.get(cfg)
	require.JSONEq(t, `{"retentionPeriod": 7, "extensions": {"b": 2, "c": 3}}`, string(x.Body))

	// If-Match: the ETag read is honoured; one from before another change is 412, nothing written.
	tag := x.Resp.Header.Get("ETag")
	require.NotEmpty(t, tag)
	x = e.send(http.MethodPatch, cfg, `{"retentionPeriod": 8}`, mediaMergePatch, "If-Match", tag)
	require.Equal(t, http.StatusOK, x.Code(), string(x.Body))
	require.NotEqual(t, tag, x.Resp.Header.Get("ETag"))
	x = e.send(http.MethodPut, cfg, `{"retentionPeriod": 9}`, "application/json", "If-Match", tag)
	require.Equal(t, http.StatusPreconditionFailed, x.Code(), string(x.Body))
	require.EqualValues(t, 8, e.get(cfg).Object(t)["retentionPeriod"])
}

// With Prometheus unreachable a job is collected all the same: FAILED, a gap opened with the reason
// (its class, no address), no crash; a restart (another replica) finds the job and its gap.
func TestPrometheusUnreachableIsAGapInTheJobsStatus(t *testing.T) {
	e := newEnv(t)
	id := e.post(v2+"/measurementJobs", memJob).Object(t)["performanceMeasurementJobId"].(string)
	e.evaluate()
	job := e.job(id)
	require.Equal(t, "FAILED", job["status"])
	c := collection(job)
	require.NotContains(t, c, "lastSuccess")
	require.Contains(t, c["message"], "Prometheus unreachable (connection refused)")
	require.NotContains(t, c["message"], "127.0.0.1")
	gaps := c["gaps"].([]any)
	require.Len(t, gaps, 1)
	require.NotContains(t, gaps[0], "to", "the gap is still open")
	e.evaluate()
	require.Len(t, collection(e.job(id))["gaps"], 1, "one outage, one gap")
	e.restart()
	require.Equal(t, "FAILED", e.job(id)["status"])
}
