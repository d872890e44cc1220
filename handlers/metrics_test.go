package handlers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/promtest"
)

// The chain's counters exist at zero before their first event, and the gauges the alerts need are there
// from the start: every state's oldest age at 0, the waiting-for-hosts count at 0, CREATION_TIMEOUT.
func TestChainSeriesExistBeforeTheFirstRequest(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	c := startChain(t, srv, "metrics-fresh", func(c *Config) { c.CreationTimeout = 1234 * time.Second }, nil)
	reg := c.op.Registry()
	for _, tr := range [][2]string{{"", v1alpha1.StateProgressing}, {"", v1alpha1.StateFailed}, {v1alpha1.StateProgressing, v1alpha1.StateFailed}, {v1alpha1.StateProgressing, v1alpha1.StateFulfilled}, {v1alpha1.StateFulfilled, v1alpha1.StateDeleting}} {
		v, ok := promtest.Gather(t, reg).Value("o2ims_provisioning_state_transitions_total", map[string]string{"from": tr[0], "to": tr[1]})
		assert.True(t, ok, "transition %q → %q exposed before the first one", tr[0], tr[1])
		assert.Zero(t, v)
	}
	for _, stage := range []string{"hosts", "rendering", "cluster"} {
		_, ok := promtest.Gather(t, reg).Value("o2ims_provisioning_budget_expiries_total", map[string]string{"stage": stage})
		assert.True(t, ok, "budget expiries (%s)", stage)
	}
	for _, s := range metricStates {
		v, ok := promtest.Gather(t, reg).Value("o2ims_provisioning_request_oldest_age_seconds", map[string]string{"state": s})
		assert.True(t, ok, "oldest age (%s)", s)
		assert.Zero(t, v)
	}
	v, ok := promtest.Gather(t, reg).Value("o2ims_provisioning_requests_waiting_for_hosts", nil)
	assert.True(t, ok)
	assert.Zero(t, v)
	v, _ = promtest.Gather(t, reg).Value("o2ims_creation_timeout_seconds", nil)
	assert.Equal(t, 1234.0, v)
}

// A request that never renders ages in progressing on the budget's clock; one that waits for hosts no
// pool device matches is counted as waiting for hosts; a fulfilled one's age runs from its fulfilment.
func TestRequestAgesAndWaitingForHostsFollowTheRequests(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	inv := newInventory(t, srv, "metrics-age")
	inv.addHost(t, srv, "age-1", 16, "admin")
	c := startChain(t, srv, "metrics-age", func(c *Config) { inv.namespaces(c); c.Requeue = 300 * time.Millisecond }, nil, inv.client)
	reg := c.op.Registry()

	created := createPR(t, srv, provisioningRequest("age-stuck", "metrics-age", tmplNeverRenders, map[string]any{"clusterName": "edge-age-stuck"}))
	createPR(t, srv, provisioningRequest("age-hosts", "metrics-age", tmplOK, hostsParams("edge-age-hosts",
		map[string]any{"role": "worker", "count": 1, "selector": map[string]any{"cpu_cores": 99}})))
	createPR(t, srv, provisioningRequest("age-done", "metrics-age", tmplOK, map[string]any{"clusterName": "edge-age-done"}))
	waitState(t, srv, "age-done", v1alpha1.StateFulfilled, 60*time.Second)

	var waiting float64
	eventually(t, 30*time.Second, func() bool {
		waiting, _ = promtest.Gather(t, reg).Value("o2ims_provisioning_requests_waiting_for_hosts", nil)
		return waiting == 1
	}, "the request without a matching host was not counted as waiting for hosts: %v", &waiting)

	time.Sleep(2 * time.Second)
	age, _ := promtest.Gather(t, reg).Value("o2ims_provisioning_request_oldest_age_seconds", map[string]string{"state": v1alpha1.StateProgressing})
	upper := time.Since(created.GetCreationTimestamp().Time).Seconds() + 1 // creationTimestamp has whole seconds
	assert.GreaterOrEqual(t, age, 2.0, "the oldest progressing request is at least as old as we waited")
	assert.LessOrEqual(t, age, upper, "and no older than its creationTimestamp")
	done, _ := promtest.Gather(t, reg).Value("o2ims_provisioning_request_oldest_age_seconds", map[string]string{"state": v1alpha1.StateFulfilled})
	assert.Greater(t, done, 0.0)
	assert.Less(t, done, age+1, "fulfilled ages from its fulfilment, after the stuck request was created")
	n, _ := promtest.Gather(t, reg).Value("o2ims_provisioning_requests", map[string]string{"state": v1alpha1.StateProgressing})
	assert.Equal(t, 2.0, n)

	// More hosts: the request takes one and is no longer waiting.
	inv.addHost(t, srv, "age-2", 99, "admin")
	eventually(t, 30*time.Second, func() bool {
		waiting, _ = promtest.Gather(t, reg).Value("o2ims_provisioning_requests_waiting_for_hosts", nil)
		return waiting == 0
	}, "still counted as waiting for hosts after a matching host appeared: %v", &waiting)
}
