package handlers

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/handlers/hosts"
	"github.com/o2ims-operator/o2ims-operator/netbox"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// machineOf names the Machine the tests give a host to.
func machineOf(host string) string { return "machine-" + host }

// consume is a CAPI Machine consuming the host through CAPM3 (tests/sim/world/capm3.go); it returns once
// Metal3 reports the host provisioned.
func consume(t *testing.T, srv *kubeapi.Server, inv *inventory, host, cluster string) {
	t.Helper()
	taken, err := testWorld.ConsumeHost(context.Background(), inv.metal3NS, host, machineOf(host), cluster)
	require.NoError(t, err)
	require.True(t, taken, "%s could not be consumed", host)
	eventually(t, 30*time.Second, func() bool { return bmhState(t, srv, inv, host) == "provisioned" }, "%s never provisioned", host)
}

func bmhState(t *testing.T, srv *kubeapi.Server, inv *inventory, host string) string {
	t.Helper()
	b, err := srv.AdminDynamic().Resource(external.BareMetalHostGVR).Namespace(inv.metal3NS).Get(context.Background(), host, metav1.GetOptions{})
	if err != nil {
		return "gone"
	}
	if b.GetDeletionTimestamp() != nil {
		return "deleting"
	}
	s, _, _ := unstructured.NestedString(b.Object, "status", "provisioning", "state")
	return s
}

// inUseKept: the host is still claimed by uid in NetBox and its BareMetalHost is not being deleted.
func inUseKept(t *testing.T, srv *kubeapi.Server, inv *inventory, host, uid string) bool {
	t.Helper()
	id, err := netbox.ParseIdentity(host)
	require.NoError(t, err)
	d, _ := inv.sim.Device(id)
	st := bmhState(t, srv, inv, host)
	return d.Status == "active" && d.Custom["o2ims_request_uid"] == uid && st != "gone" && st != "deleting"
}

func freed(inv *inventory, host string) bool {
	id, _ := netbox.ParseIdentity(host)
	d, _ := inv.sim.Device(id)
	return d.Status == "staged" && d.Custom["o2ims_request_uid"] == nil
}

func setWorkers(t *testing.T, srv *kubeapi.Server, name string, n, cores int) {
	t.Helper()
	patchPR(t, srv, name, fmt.Sprintf(`{"spec":{"templateParameters":{"hosts":[{"role":"worker","count":%d,"selector":{"cpu_cores":%d}}]}}}`, n, cores))
}

// A scale-down never wipes a live node: of a role's hosts, the one no Machine consumes goes back first;
// hosts in use wait until Cluster API scales their node away, the status naming the Machine — whichever
// Machine CAPI removes, that host is the one released. A deletion waits the same way, across a restart.
func TestScaleDownReleasesFreeHostsFirstAndWaitsForCAPI(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	inv := newInventory(t, srv, "consumed")
	for i := 0; i < 3; i++ {
		inv.addHost(t, srv, fmt.Sprintf("consumed-%d", i), 512, "admin")
	}
	mutate := func(c *Config) { inv.namespaces(c); c.Requeue = 300 * time.Millisecond }
	ch := startChain(t, srv, "consumed", mutate, nil, inv.client)
	pr := createPR(t, srv, provisioningRequest("consumed-1", "consumed", tmplOK, hostsParams("edge-consumed-1",
		map[string]any{"role": "worker", "count": 3, "selector": map[string]any{"cpu_cores": 512}})))
	uid := string(pr.GetUID())
	slots, err := hosts.ReadSlots(waitState(t, srv, "consumed-1", v1alpha1.StateFulfilled, 60*time.Second))
	require.NoError(t, err)
	require.Len(t, slots, 3)
	spare, a, b := slots[0].ID, slots[1].ID, slots[2].ID
	consume(t, srv, inv, a, "edge-consumed-1")
	consume(t, srv, inv, b, "edge-consumed-1")

	// 3 → 2: worker/2 (in use) is the surplus by index; the spare goes instead.
	setWorkers(t, srv, "consumed-1", 2, 512)
	eventually(t, 60*time.Second, func() bool {
		u, _ := getPR(t, srv, "consumed-1")
		return freed(inv, spare) && v1alpha1.StatusOf(u).State == v1alpha1.StateFulfilled && specHandled(u)
	}, "the spare was never released")
	assert.True(t, inUseKept(t, srv, inv, a, uid), "%s is in use", a)
	assert.True(t, inUseKept(t, srv, inv, b, uid), "%s is in use", b)

	// 2 → 1: both in use. The request waits for Cluster API, naming the Machine; nothing is released.
	setWorkers(t, srv, "consumed-1", 1, 512)
	var surplus, kept, last string
	eventually(t, 30*time.Second, func() bool {
		u, _ := getPR(t, srv, "consumed-1")
		msg := v1alpha1.StatusOf(u).Message
		last = msg
		for _, pair := range [][2]string{{a, b}, {b, a}} {
			if strings.Contains(msg, fmt.Sprintf("releasing 1 hosts no longer requested: %s: in use by Machine %s/%s (Metal3Machine %s/%s, provisioned); released once Cluster API scales that node away",
				pair[0], inv.metal3NS, machineOf(pair[0]), inv.metal3NS, machineOf(pair[0]))) {
				surplus, kept = pair[0], pair[1]
				return true
			}
		}
		return false
	}, "the status never named the Machine it waits for: %s", lastMsg{&last})
	for i := 0; i < 5; i++ { // several passes (REQUEUE_INTERVAL 300 ms): still nothing released
		time.Sleep(300 * time.Millisecond)
		require.True(t, inUseKept(t, srv, inv, surplus, uid), "%s was released in use", surplus)
		require.True(t, inUseKept(t, srv, inv, kept, uid), "%s was released in use", kept)
	}
	u, _ := getPR(t, srv, "consumed-1")
	assert.Equal(t, v1alpha1.StateProgressing, v1alpha1.StatusOf(u).State)

	// Cluster API scales away the other Machine (its choice): that host is the one released.
	require.NoError(t, testWorld.ScaleDown(context.Background(), inv.metal3NS, machineOf(kept)))
	eventually(t, 60*time.Second, func() bool {
		u, _ := getPR(t, srv, "consumed-1")
		return freed(inv, kept) && v1alpha1.StatusOf(u).State == v1alpha1.StateFulfilled && specHandled(u)
	}, "the host CAPI scaled away was never released")
	require.True(t, inUseKept(t, srv, inv, surplus, uid))
	u, _ = getPR(t, srv, "consumed-1")
	sl, _ := hosts.ReadSlots(u)
	assert.Equal(t, []hosts.Slot{{Role: "worker", Index: 0, ID: surplus, Phase: hosts.PhaseClaimed}}, sl, "the host in use took the position")

	// Deleting the request waits the same way, and a restart keeps the record.
	deletePR(t, srv, "consumed-1")
	want := fmt.Sprintf("Deleting; releasing hosts: %s: in use by Machine %s/%s", surplus, inv.metal3NS, machineOf(surplus))
	eventually(t, 30*time.Second, func() bool {
		u, _ := getPR(t, srv, "consumed-1")
		return strings.HasPrefix(v1alpha1.StatusOf(u).Message, want)
	}, "the deletion never said what it waits for")
	ch.stop(t)
	startChain(t, srv, "consumed", mutate, nil, inv.client)
	for i := 0; i < 5; i++ {
		time.Sleep(300 * time.Millisecond)
		u, ok := getPR(t, srv, "consumed-1")
		require.True(t, ok, "the request went with a host in use")
		require.Equal(t, []string{surplus}, hosts.Held(u), "the record survives the restart")
		require.True(t, inUseKept(t, srv, inv, surplus, uid), "%s was released in use", surplus)
	}
	require.NoError(t, testWorld.ScaleDown(context.Background(), inv.metal3NS, machineOf(surplus)))
	eventually(t, 60*time.Second, func() bool { _, ok := getPR(t, srv, "consumed-1"); return !ok }, "the request never went")
	for _, h := range []string{spare, a, b} {
		assert.True(t, freed(inv, h), "%s back in the pool", h)
	}
	bmhs, secrets := metal3Objects(t, srv, inv.metal3NS, uid)
	assert.Empty(t, bmhs)
	assert.Empty(t, secrets)
}

// Issue 34's starvation: a request that cannot be satisfied (3 hosts asked, 2 in the pool) takes both and
// waits; a later request for one waits behind it. When the first one's budget is spent it gives both
// back at once and fails, and the later request gets one within its own budget. Before, the failed
// request kept both and the later one timed out too. The bound on holding: the CREATION_TIMEOUT budget.
func TestUnsatisfiableRequestGivesBackItsHostsWhenItsBudgetIsSpent(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	inv := newInventory(t, srv, "starve")
	h1 := netbox.Identity(inv.addHost(t, srv, "starve-1", 768, "admin"))
	h2 := netbox.Identity(inv.addHost(t, srv, "starve-2", 768, "admin"))
	ch := startChain(t, srv, "starve", func(c *Config) {
		inv.namespaces(c)
		c.Requeue, c.CreationTimeout = 300*time.Millisecond, 14*time.Second
	}, nil, inv.client)
	big := createPR(t, srv, provisioningRequest("starve-big", "starve", tmplOK, hostsParams("edge-starve-big",
		map[string]any{"role": "worker", "count": 3, "selector": map[string]any{"cpu_cores": 768}})))
	eventually(t, 5*time.Second, func() bool {
		u, _ := getPR(t, srv, "starve-big")
		return len(hosts.Held(u)) == 2
	}, "the big request never took both hosts")
	// The small one comes half a budget later: it outlives the big one's budget by as much.
	time.Sleep(time.Until(big.GetCreationTimestamp().Add(7 * time.Second)))
	created := time.Now()
	small := createPR(t, srv, provisioningRequest("starve-small", "starve", tmplOK, hostsParams("edge-starve-small",
		map[string]any{"role": "worker", "count": 1, "selector": map[string]any{"cpu_cores": 768}})))

	failedBig := waitState(t, srv, "starve-big", v1alpha1.StateFailed, 30*time.Second)
	assert.Contains(t, v1alpha1.StatusOf(failedBig).Message, "timed out after 14s waiting for the hosts")
	assert.Empty(t, hosts.Held(failedBig), "a failed request holds nothing")
	done := waitState(t, srv, "starve-small", v1alpha1.StateFulfilled, 30*time.Second)
	t.Logf("the later request was fulfilled %s after it was created (budget 14s)", time.Since(created).Round(time.Millisecond))
	held := hosts.Held(done)
	require.Len(t, held, 1)
	for _, h := range []string{h1, h2} {
		id, _ := netbox.ParseIdentity(h)
		d, _ := inv.sim.Device(id)
		if h == held[0] {
			assert.Equal(t, string(small.GetUID()), d.Custom["o2ims_request_uid"])
			continue
		}
		assert.True(t, freed(inv, h), "%s back in the pool", h)
		assert.NotEqual(t, string(big.GetUID()), d.Custom["o2ims_request_uid"])
	}
	// The giving back was said while it happened.
	ch.trail.await(t, "starve-big", msgHostsGivingBack, time.Second)
}

// lastMsg prints a message an eventually saw last, when it gives up.
type lastMsg struct{ p *string }

func (l lastMsg) String() string { return *l.p }
