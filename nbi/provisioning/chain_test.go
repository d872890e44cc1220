package provisioning

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
)

// A body the provisioning chain would fail is refused at the door with the chain's own parser: a 400
// nbi.ProblemDetails naming the field (checked against the reference like every answer), nothing sent to the
// API server. Before, only a missing clusterName was a 400; a count of 2e9 was a 201 and then ran the
// operator out of memory.
func TestPostAndPutRefuseWhatTheChainWouldFail(t *testing.T) {
	e := newEnv(t, func(c *nbi.Config) {
		c.Chain = nbi.ChainRules{Reserved: map[string]bool{"o2ims_request_uid": true}, Inventory: true}
	})
	id := e.ID("chain")
	withParams := func(params map[string]any) []byte {
		b := nbitest.RequestBody(id)
		params["clusterName"] = "edge-" + id
		b["templateParameters"] = params
		return nbitest.JSONBody(t, b)
	}
	hosts := func(h ...map[string]any) map[string]any {
		list := make([]any, len(h))
		for i := range h {
			list[i] = h[i]
		}
		return map[string]any{"hosts": list}
	}
	bad := []struct {
		name string
		body []byte
		want string
	}{
		{"count 2e9", withParams(hosts(map[string]any{"role": "worker", "count": 2000000000})),
			"templateParameters.hosts[0].count must be at most 1000 (hosts per role), got 2000000000"},
		{"count 2e9 written as a float", []byte(`{"provisioningRequestId":"` + id + `","name":"n","description":"d","templateName":"t",` +
			`"templateVersion":"v","templateParameters":{"clusterName":"c","hosts":[{"role":"w","count":2e9}]}}`),
			"templateParameters.hosts[0].count must be at most 1000"},
		{"count over the request's bound", withParams(hosts(map[string]any{"role": "a", "count": 999}, map[string]any{"role": "b", "count": 2})),
			"templateParameters.hosts[1].count brings the request to 1001 hosts; a request holds at most 1000"},
		{"count a string", withParams(hosts(map[string]any{"role": "worker", "count": "2"})), "templateParameters.hosts[0].count must be a whole number"},
		{"count a fraction", withParams(hosts(map[string]any{"role": "worker", "count": 1.5})), "templateParameters.hosts[0].count must be a whole number"},
		{"reserved selector key", withParams(hosts(map[string]any{"role": "worker", "count": 1, "selector": map[string]any{"o2ims_request_uid": "x"}})),
			`templateParameters.hosts[0].selector key "o2ims_request_uid" is reserved`},
		{"hosts not a list", withParams(map[string]any{"hosts": "three"}), "templateParameters.hosts must be a list"},
		{"bad clusterName", nbitest.JSONBody(t, func() map[string]any {
			b := nbitest.RequestBody(id)
			b["templateParameters"] = map[string]any{"clusterName": "Edge_1"}
			return b
		}()), `templateParameters.clusterName "Edge_1" is not a valid name`},
		{"bad label value", withParams(map[string]any{"labels": map[string]any{"site": "a b"}}), `templateParameters.labels.site value "a b" is not a valid label value`},
		{"blank templateName", nbitest.JSONBody(t, func() map[string]any { b := nbitest.RequestBody(id); b["templateName"] = "  "; return b }()), "templateName is empty"},
	}
	for _, c := range bad {
		t.Run("POST "+c.name, func(t *testing.T) {
			x := e.Do(http.MethodPost, nbitest.CollectionPath, c.body)
			require.Equal(t, http.StatusBadRequest, x.Code(), "%s", x.Body)
			require.Contains(t, x.Problem(t).Status, c.want)
		})
	}
	require.Zero(t, e.APICalls(), "nothing the chain would fail reaches the API server")

	// PUT refuses the same bodies and leaves the stored spec as it was.
	e.CreateDirect(id, nbitest.SimpleSpec("edge-"+id))
	e.WaitCached(id)
	for _, c := range bad {
		t.Run("PUT "+c.name, func(t *testing.T) {
			x := e.Do(http.MethodPut, nbitest.NamedPath(id), c.body)
			require.Equal(t, http.StatusBadRequest, x.Code(), "%s", x.Body)
			require.Contains(t, x.Problem(t).Status, c.want)
		})
	}
	stored, err := e.Admin.Resource(v1alpha1.GVR).Get(context.Background(), id, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, nbitest.SimpleSpec("edge-"+id), stored.Object["spec"])

	// What the chain takes is still taken: the bound itself, through POST and PUT.
	x := e.Do(http.MethodPut, nbitest.NamedPath(id), withParams(hosts(map[string]any{"role": "control-plane", "count": 1},
		map[string]any{"role": "worker", "count": 999, "selector": map[string]any{"cpu_cores": 16}})))
	require.Equal(t, http.StatusOK, x.Code(), "%s", x.Body)
	other := e.ID("chain-ok")
	b := nbitest.RequestBody(other)
	b["templateParameters"] = map[string]any{"clusterName": "edge-" + other, "hosts": []any{map[string]any{"role": "worker", "count": 1000}}}
	x = e.Do(http.MethodPost, nbitest.CollectionPath, nbitest.JSONBody(t, b))
	require.Equal(t, http.StatusCreated, x.Code(), "%s", x.Body)
}

// Without an inventory the chain fails every request that asks for hosts, so the NBI refuses them.
func TestHostsWithoutAnInventoryAreRefused(t *testing.T) {
	e := newEnv(t)
	id := e.ID("noinv")
	b := nbitest.RequestBody(id)
	b["templateParameters"] = map[string]any{"clusterName": "edge-" + id, "hosts": []any{map[string]any{"role": "worker", "count": 1}}}
	x := e.Do(http.MethodPost, nbitest.CollectionPath, nbitest.JSONBody(t, b))
	require.Equal(t, http.StatusBadRequest, x.Code(), "%s", x.Body)
	require.Contains(t, x.Problem(t).Status, "templateParameters.hosts cannot be served: no inventory is configured on this operator (NETBOX_URL is not set)")
	require.Zero(t, e.APICalls())
}
