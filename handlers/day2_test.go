package handlers

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/handlers/hosts"
	nbinventory "github.com/o2ims-operator/o2ims-operator/inventory"
	"github.com/o2ims-operator/o2ims-operator/netbox"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/promtest"
)

// Day-2 behaviour: what happens to a request after it was created, on the real API server with the
// world simulator and netboxsim.

func patchPR(t *testing.T, srv *kubeapi.Server, name, body string) {
	t.Helper()
	_, err := srv.AdminDynamic().Resource(v1alpha1.GVR).Patch(context.Background(), name, types.MergePatchType,
		[]byte(body), metav1.PatchOptions{})
	require.NoError(t, err)
}

func deletePR(t *testing.T, srv *kubeapi.Server, name string) {
	t.Helper()
	require.NoError(t, srv.AdminDynamic().Resource(v1alpha1.GVR).Delete(context.Background(), name, metav1.DeleteOptions{}))
}

func resourceIDs(u *unstructured.Unstructured) []string {
	ids, _, _ := unstructured.NestedStringSlice(u.Object, "status", "provisionedResourceSet", "oCloudInfrastructureResourceIds")
	return ids
}

// testOCloud is the O-Cloud of the chain's tests (HostsConfig in startChain).
var testOCloud = uuid.MustParse("5f0c7a52-9d1e-4f3b-8a61-2c4e7b9d0a13")

// resourceID is the id the inventory API answers for NetBox device id in testOCloud: what the request
// must record.
func resourceID(id int32) string { return nbinventory.Config{OCloudID: testOCloud}.ResourceID(id) }

// asResourceIDs maps host identities (netbox-<id>) to resourceID.
func asResourceIDs(identities []string) []string {
	out := make([]string, 0, len(identities))
	for _, s := range identities {
		n, err := netbox.ParseIdentity(s)
		if err != nil {
			panic(err)
		}
		out = append(out, resourceID(n))
	}
	return out
}

// GitOps tools label and annotate what they touch: neither may re-drive a fulfilled or failed request,
// re-create a PackageVariant removed on purpose, post events or grant a failed request a new budget.
func TestLabelAndAnnotationEditsNeverReDriveARequest(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	c := startChain(t, srv, "gitops", func(c *Config) { c.CreationTimeout = 3 * time.Second; c.Requeue = 300 * time.Millisecond }, nil)
	createPR(t, srv, provisioningRequest("gitops-ok", "gitops", tmplOK, map[string]any{"clusterName": "edge-gitops-ok"}))
	createPR(t, srv, provisioningRequest("gitops-failed", "gitops", tmplNeverRenders, map[string]any{"clusterName": "edge-gitops-failed"}))
	waitState(t, srv, "gitops-ok", v1alpha1.StateFulfilled, 30*time.Second)
	waitState(t, srv, "gitops-failed", v1alpha1.StateFailed, 30*time.Second)
	// The fulfilled request's PackageVariant is removed on purpose (its job is done).
	require.NoError(t, srv.AdminDynamic().Resource(external.PackageVariantGVR).Namespace("default").Delete(context.Background(), "gitops-ok", metav1.DeleteOptions{}))
	eventually(t, 20*time.Second, func() bool { _, ok := getPV(t, srv, "gitops-ok"); return !ok }, "package variant never went")

	before := map[string]*unstructured.Unstructured{}
	for _, name := range []string{"gitops-ok", "gitops-failed"} {
		before[name], _ = getPR(t, srv, name)
	}
	pvCreates := c.rec.Count("POST", "/packagevariants")
	for i, name := range []string{"gitops-ok", "gitops-failed"} {
		patchPR(t, srv, name, fmt.Sprintf(`{"metadata":{"labels":{"argocd.argoproj.io/instance":"edge-%d"}}}`, i))
		patchPR(t, srv, name, `{"metadata":{"annotations":{"kustomize.toolkit.fluxcd.io/checksum":"abc"}}}`)
	}
	// The edits are handled (the diff-base moves) and nothing else happens.
	for _, name := range []string{"gitops-ok", "gitops-failed"} {
		eventually(t, 20*time.Second, func() bool {
			u, _ := getPR(t, srv, name)
			return strings.Contains(u.GetAnnotations()[Prefix+"/last-handled-configuration"], "kustomize.toolkit.fluxcd.io/checksum")
		}, "the edits of %s were never handled", name)
	}
	time.Sleep(2 * time.Second) // several safety-net passes
	for _, name := range []string{"gitops-ok", "gitops-failed"} {
		after, _ := getPR(t, srv, name)
		assert.Equal(t, before[name].Object["status"], after.Object["status"], "%s: status moved on a label/annotation edit", name)
		assert.False(t, hasEvent(eventsOf(t, srv, name), corev1.EventTypeNormal, EventProgressing, "updated"), "%s was re-driven", name)
	}
	assert.Equal(t, pvCreates, c.rec.Count("POST", "/packagevariants"), "a package variant was re-created")
	_, recreated := getPV(t, srv, "gitops-ok")
	assert.False(t, recreated, "the package variant removed on purpose came back")

	// A spec change of the failed request starts again, with a budget of its own from the change.
	patchPR(t, srv, "gitops-failed", `{"spec":{"templateVersion":"v9.9.9"}}`)
	eventually(t, 20*time.Second, func() bool {
		u, _ := getPR(t, srv, "gitops-failed")
		s := v1alpha1.StatusOf(u)
		start, _, _ := unstructured.NestedString(u.Object, "status", "extensions", budgetStartKey)
		return start != "" && (s.State == v1alpha1.StateProgressing || strings.Contains(s.Message, "timed out")) &&
			hasEvent(eventsOf(t, srv, "gitops-failed"), corev1.EventTypeNormal, EventProgressing, "updated after it failed; provisioning again with a new budget of 3s")
	}, "the spec change did not re-drive the failed request with a new budget")
	waitState(t, srv, "gitops-failed", v1alpha1.StateFailed, 30*time.Second)
}

// A request that failed (its budget ran out while waiting for hosts) gives back at once the hosts no
// machine uses (issue 34 item 8: others may use them), then claims, registers and writes nothing more: not
// on a label edit, not after a restart with free hosts now in the pool. Its spec change starts it again.
func TestFailedRequestClaimsNothingMoreAcrossRestarts(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	inv := newInventory(t, srv, "terminal")
	first := inv.addHost(t, srv, "t-1", 48, "admin")
	cfg := func(c *Config) {
		inv.namespaces(c)
		c.CreationTimeout = 4 * time.Second
		c.Requeue = 300 * time.Millisecond
	}
	c := startChain(t, srv, "terminal", cfg, nil, inv.client)
	createPR(t, srv, provisioningRequest("terminal-1", "terminal", tmplOK, hostsParams("edge-terminal-1",
		map[string]any{"role": "worker", "count": 2, "selector": map[string]any{"cpu_cores": 48}})))
	failed := waitState(t, srv, "terminal-1", v1alpha1.StateFailed, 30*time.Second)
	assert.Contains(t, v1alpha1.StatusOf(failed).Message, "timed out after 4s")
	eventually(t, 10*time.Second, func() bool {
		v, ok := promtest.Gather(t, c.op.Registry()).Value("o2ims_hosts_held_by_failed_requests", nil)
		return ok && v == 0
	},
		"the failed request still holds a host no machine uses")
	eventually(t, 10*time.Second, func() bool {
		d, _ := inv.sim.Device(first)
		return d.Status == "staged"
	}, "the failed request did not give its host back")
	c.stop(t)

	// More hosts arrive; a label edit; a restart.
	more := []int32{inv.addHost(t, srv, "t-2", 48, "admin"), inv.addHost(t, srv, "t-3", 48, "admin")}
	patchPR(t, srv, "terminal-1", `{"metadata":{"labels":{"argocd.argoproj.io/instance":"edge"}}}`)
	before, _ := getPR(t, srv, "terminal-1")
	c2 := startChain(t, srv, "terminal", cfg, nil, inv.client)
	eventually(t, 20*time.Second, func() bool {
		u, _ := getPR(t, srv, "terminal-1")
		return strings.Contains(u.GetAnnotations()[Prefix+"/last-handled-configuration"], "argocd.argoproj.io/instance")
	}, "the label edit was never handled")
	time.Sleep(2 * time.Second)
	for _, id := range more {
		d, _ := inv.sim.Device(id)
		assert.Equal(t, "staged", d.Status, "a failed request claimed host %d", id)
	}
	after, _ := getPR(t, srv, "terminal-1")
	assert.Equal(t, before.Object["status"], after.Object["status"], "a failed request's status moved")
	assert.Empty(t, c2.rec.Writes("/provisioningrequests/terminal-1/status"), "status written for a failed request")
	assert.Empty(t, c2.rec.Writes("/baremetalhosts"), "registration for a failed request")
	assert.Empty(t, c2.rec.Writes("/packagevariants"), "package variant written for a failed request")
	d, _ := inv.sim.Device(first)
	assert.Equal(t, "staged", d.Status, "a failed request claimed its host again")

	// Its spec changes: provisioning starts again, with the hosts it holds.
	patchPR(t, srv, "terminal-1", `{"spec":{"templateParameters":{"hosts":[{"role":"worker","count":1,"selector":{"cpu_cores":48}}]}}}`)
	done := waitState(t, srv, "terminal-1", v1alpha1.StateFulfilled, 30*time.Second)
	assert.Len(t, resourceIDs(done), 1)
	eventually(t, 10*time.Second, func() bool {
		v, ok := promtest.Gather(t, c2.op.Registry()).Value("o2ims_hosts_held_by_failed_requests", nil)
		return ok && v == 0
	},
		"the gauge still counts a request that is no longer failed")
}

// Hosts follow the spec: a lower count releases the surplus (Metal3 objects first, then NetBox), the rest
// stays claimed and registered, and the request lists exactly what it holds; a higher count claims more;
// a removed role is released like a lowered count.
func TestHostsFollowTheSpecDownAndUpAndAcrossRoles(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	inv := newInventory(t, srv, "follow")
	var workers []int32
	for i := 0; i < 3; i++ {
		workers = append(workers, inv.addHost(t, srv, fmt.Sprintf("f-w%d", i), 96, "admin"))
	}
	cp := inv.addHost(t, srv, "f-cp", 97, "admin")
	startChain(t, srv, "follow", func(c *Config) { inv.namespaces(c); c.Requeue = time.Second }, nil, inv.client)
	worker := func(n int) string {
		return fmt.Sprintf(`{"role":"worker","count":%d,"selector":{"cpu_cores":96}}`, n)
	}
	pr := createPR(t, srv, provisioningRequest("follow-1", "follow", tmplOK, hostsParams("edge-follow-1",
		map[string]any{"role": "worker", "count": 2, "selector": map[string]any{"cpu_cores": 96}})))
	uid := string(pr.GetUID())
	done := waitState(t, srv, "follow-1", v1alpha1.StateFulfilled, 60*time.Second)
	held := resourceIDs(done)
	require.Len(t, held, 2)

	ownedActive := func() []string {
		var out []string
		for _, d := range inv.sim.Devices() {
			if d.Status == "active" && d.Custom["o2ims_request_uid"] == uid {
				out = append(out, netbox.Identity(d.ID))
			}
		}
		return out
	}
	check := func(want []string) {
		t.Helper()
		u := waitState(t, srv, "follow-1", v1alpha1.StateFulfilled, 60*time.Second)
		eventually(t, 30*time.Second, func() bool {
			u, _ = getPR(t, srv, "follow-1")
			return v1alpha1.StatusOf(u).State == v1alpha1.StateFulfilled && len(resourceIDs(u)) == len(want)
		}, "never fulfilled with %d hosts", len(want))
		assert.ElementsMatch(t, asResourceIDs(want), resourceIDs(u), "the request lists exactly what it holds")
		assert.ElementsMatch(t, want, ownedActive(), "NetBox holds exactly what the request lists")
		bmhs, secrets := metal3Objects(t, srv, inv.metal3NS, uid)
		assert.ElementsMatch(t, want, bmhs, "BareMetalHosts")
		var wantSecrets []string
		for _, id := range want {
			wantSecrets = append(wantSecrets, id+"-bmc-secret")
		}
		assert.ElementsMatch(t, wantSecrets, secrets, "BMC Secrets")
		slots, err := hosts.ReadSlots(u)
		require.NoError(t, err)
		var recorded []string
		for _, s := range slots {
			recorded = append(recorded, s.ID)
		}
		assert.ElementsMatch(t, want, recorded, "records: exactly the held hosts")
	}

	// Down: 2 → 1. The highest index goes; worker/0 stays.
	slots, _ := hosts.ReadSlots(done)
	keep := slots[0].ID
	patchPR(t, srv, "follow-1", `{"spec":{"templateParameters":{"hosts":[`+worker(1)+`]}}}`)
	eventually(t, 30*time.Second, func() bool {
		return hasEvent(eventsOf(t, srv, "follow-1"), corev1.EventTypeNormal, hosts.EventHostFreed, slots[1].ID)
	}, "the surplus host was never released")
	check([]string{keep})

	// Up: 1 → 3.
	patchPR(t, srv, "follow-1", `{"spec":{"templateParameters":{"hosts":[`+worker(3)+`]}}}`)
	eventually(t, 30*time.Second, func() bool { return len(ownedActive()) == 3 }, "never claimed more")
	var all []string
	for _, id := range workers {
		all = append(all, netbox.Identity(id))
	}
	check(all)

	// The worker role removed, a control-plane role added: the workers go back, the control plane is claimed.
	patchPR(t, srv, "follow-1", `{"spec":{"templateParameters":{"hosts":[{"role":"control-plane","count":1,"selector":{"cpu_cores":97}}]}}}`)
	eventually(t, 60*time.Second, func() bool {
		u, _ := getPR(t, srv, "follow-1")
		ids := resourceIDs(u)
		return v1alpha1.StatusOf(u).State == v1alpha1.StateFulfilled && len(ids) == 1 && ids[0] == resourceID(cp)
	}, "never moved to the control-plane role")
	check([]string{netbox.Identity(cp)})
	for _, id := range workers {
		d, _ := inv.sim.Device(id)
		assert.Equal(t, "staged", d.Status, "worker %d back in the pool", id)
		assert.Nil(t, d.Custom["o2ims_request_uid"], "worker %d unowned", id)
	}

	deletePR(t, srv, "follow-1")
	eventually(t, 60*time.Second, func() bool { _, ok := getPR(t, srv, "follow-1"); return !ok }, "never deleted")
	assert.Empty(t, ownedActive())
}

// Deleting a request that holds hosts while the operator runs without NETBOX_URL keeps the finalizer and
// says why; an operator with the inventory back releases everything.
func TestDeletionWithoutTheInventoryKeepsTheFinalizerUntilItIsBack(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	inv := newInventory(t, srv, "noinv-del")
	host := inv.addHost(t, srv, "nd-1", 192, "admin")
	withInv := func(c *Config) { inv.namespaces(c); c.Requeue = 300 * time.Millisecond }
	c := startChain(t, srv, "noinv-del", withInv, nil, inv.client)
	pr := createPR(t, srv, provisioningRequest("noinv-del-1", "noinv-del", tmplOK, hostsParams("edge-noinv-del-1",
		map[string]any{"role": "worker", "count": 1, "selector": map[string]any{"cpu_cores": 192}})))
	uid := string(pr.GetUID())
	waitState(t, srv, "noinv-del-1", v1alpha1.StateFulfilled, 60*time.Second)
	c.stop(t)

	startChain(t, srv, "noinv-del", withInv, nil) // no inventory client: NETBOX_URL unset
	deletePR(t, srv, "noinv-del-1")
	eventually(t, 30*time.Second, func() bool {
		u, ok := getPR(t, srv, "noinv-del-1")
		return ok && strings.Contains(v1alpha1.StatusOf(u).Message, "NETBOX_URL is not set") &&
			hasEvent(eventsOf(t, srv, "noinv-del-1"), corev1.EventTypeWarning, EventReleaseBlocked, "NETBOX_URL")
	}, "the blocked release was not reported")
	time.Sleep(time.Second)
	u, ok := getPR(t, srv, "noinv-del-1")
	require.True(t, ok, "the request went away with its host still claimed")
	assert.Equal(t, []string{Finalizer}, u.GetFinalizers())
	assert.Contains(t, v1alpha1.StatusOf(u).Message, netbox.Identity(host))
	d, _ := inv.sim.Device(host)
	assert.Equal(t, "active", d.Status)
	bmhs, _ := metal3Objects(t, srv, inv.metal3NS, uid)
	assert.Len(t, bmhs, 1)

	startChain(t, srv, "noinv-del", withInv, nil, inv.client)
	eventually(t, 60*time.Second, func() bool { _, ok := getPR(t, srv, "noinv-del-1"); return !ok }, "release never resumed")
	d, _ = inv.sim.Device(host)
	assert.Equal(t, "staged", d.Status)
	assert.Nil(t, d.Custom["o2ims_request_uid"])
	bmhs, secrets := metal3Objects(t, srv, inv.metal3NS, uid)
	assert.Empty(t, bmhs)
	assert.Empty(t, secrets)
}

// A quarantine that lost its 412 (the device changed between our read and our write) did not happen:
// no "Quarantined" event, and the device is left as whoever changed it left it.
func TestQuarantineThatLostItsPreconditionPostsNoEvent(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	inv := newInventory(t, srv, "q412")
	bare := inv.addHost(t, srv, "q412-bare", 384, "") // no credentials: quarantined if it stays free
	var hooked bool
	inv.sim.SetPatchHook(func(id int32) {
		if id == bare && !hooked {
			hooked = true
			_ = inv.sim.SetStatus(id, "offline") // an admin takes it out of the pool meanwhile
		}
	})
	startChain(t, srv, "q412", func(c *Config) { inv.namespaces(c); c.Requeue = 300 * time.Millisecond }, nil, inv.client)
	createPR(t, srv, provisioningRequest("q412-1", "q412", tmplOK, hostsParams("edge-q412-1",
		map[string]any{"role": "worker", "count": 1, "selector": map[string]any{"cpu_cores": 384}})))
	eventually(t, 30*time.Second, func() bool {
		for _, p := range inv.sim.PatchLog() {
			if p.DeviceID == bare && p.Status == 412 {
				return true
			}
		}
		return false
	}, "the quarantine never met its 412")
	good := inv.addHost(t, srv, "q412-good", 384, "admin")
	done := waitState(t, srv, "q412-1", v1alpha1.StateFulfilled, 60*time.Second)
	assert.Equal(t, []string{resourceID(good)}, resourceIDs(done))
	d, _ := inv.sim.Device(bare)
	assert.Equal(t, "offline", d.Status, "the admin's decision stands")
	assert.False(t, hasEvent(eventsOf(t, srv, "q412-1"), corev1.EventTypeWarning, hosts.EventQuarantined, netbox.Identity(bare)),
		"a quarantine that never committed was announced")
}

// A recorded candidate an admin half-reset (staged again, our uid left on it) is ours to take back: it
// is claimed, not forgotten with our uid on it (no other request could claim it then).
func TestHalfResetCandidateWithOurUIDIsTakenBack(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	inv := newInventory(t, srv, "halfreset")
	host := inv.addHost(t, srv, "hr-1", 768, "admin")
	pr := createPR(t, srv, provisioningRequest("halfreset-1", "halfreset", tmplOK, hostsParams("edge-halfreset-1",
		map[string]any{"role": "worker", "count": 1, "selector": map[string]any{"cpu_cores": 768}})))
	uid := string(pr.GetUID())
	// The state a crash plus an admin leave behind: the candidate recorded, the device staged with our uid.
	require.NoError(t, inv.sim.SetCustom(host, "o2ims_request_uid", uid))
	pr.Object["status"] = map[string]any{"extensions": map[string]any{"hosts": []any{
		map[string]any{"role": "worker", "index": int64(0), "id": netbox.Identity(host), "phase": string(hosts.PhaseCandidate)}}}}
	_, err := srv.AdminDynamic().Resource(v1alpha1.GVR).UpdateStatus(context.Background(), pr, metav1.UpdateOptions{})
	require.NoError(t, err)

	startChain(t, srv, "halfreset", func(c *Config) { inv.namespaces(c); c.Requeue = 300 * time.Millisecond }, nil, inv.client)
	done := waitState(t, srv, "halfreset-1", v1alpha1.StateFulfilled, 60*time.Second)
	assert.Equal(t, []string{resourceID(host)}, resourceIDs(done))
	d, _ := inv.sim.Device(host)
	assert.Equal(t, "active", d.Status)
	assert.Equal(t, uid, d.Custom["o2ims_request_uid"])
}
