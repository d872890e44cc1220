package handlers

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// A request with hosts gets the finalizer in the pass that records its candidates — the write right after
// that status write, before any claim (claims come a pass later) — not in a pass of its own before that.
func TestTheFinalizerComesWithTheFirstHostRecord(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	inv := newInventory(t, srv, "holds")
	inv.addHost(t, srv, "holds-big-1", 32, "admin")
	c := startChain(t, srv, "holds", inv.namespaces, nil, inv.client)
	createPR(t, srv, provisioningRequest("holds-1", "holds", tmplOK, hostsParams("edge-holds-1",
		map[string]any{"role": "control-plane", "count": 1, "selector": map[string]any{"cpu_cores": 32}},
	)))
	waitState(t, srv, "holds-1", v1alpha1.StateFulfilled, 60*time.Second)

	recorded := c.rec.Requests()
	var reqs, bodies []string
	for _, q := range recorded {
		reqs, bodies = append(reqs, q.String()), append(bodies, q.Body)
	}
	first := -1
	for i, q := range reqs {
		if q == "PATCH /apis/o2ims.provisioning.oran.org/v1alpha1/provisioningrequests/holds-1" {
			first = i
			break
		}
	}
	require.GreaterOrEqual(t, first, 1, "no metadata write: %v", nonEvents(recorded))
	assert.Contains(t, bodies[first], `"finalizers":["`+Finalizer+`"]`, "the first metadata write does not add the finalizer")
	prev := first - 1
	for prev >= 0 && !strings.HasSuffix(reqs[prev], "/provisioningrequests/holds-1/status") {
		prev--
	}
	require.GreaterOrEqual(t, prev, 0, "no status write before the finalizer")
	assert.Contains(t, bodies[prev], `"phase":"candidate"`, "the finalizer did not come with the candidate record")
	for _, q := range reqs[:prev] {
		assert.NotContains(t, q, "/provisioningrequests/holds-1/status", "a status write before the candidate record: %v", q)
	}
}
