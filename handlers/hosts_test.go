package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/handlers/hosts"
	"github.com/o2ims-operator/o2ims-operator/netbox"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
)

const testToken = "0123456789abcdef0123456789abcdef01234567"

// inventory is one test's NetBox: a simulator and a client of it, with Metal3 and credentials namespaces
// of its own (every simulator numbers its devices from 1, so netbox-1 exists in each).
type inventory struct {
	sim             *netboxsim.Server
	client          *netbox.Client
	reg             *prometheus.Registry
	metal3NS, creds string
}

// namespaces points the chain at the inventory's namespaces.
func (inv *inventory) namespaces(c *Config) {
	c.Metal3Namespace, c.CredentialsNamespace = inv.metal3NS, inv.creds
}

func newInventory(t *testing.T, srv *kubeapi.Server, label string) *inventory {
	t.Helper()
	inv := &inventory{metal3NS: "metal3-" + label, creds: "creds-" + label}
	for _, ns := range []string{inv.metal3NS, inv.creds} {
		require.NoError(t, srv.EnsureNamespace(context.Background(), ns))
	}
	sim := netboxsim.New(netboxsim.Options{Tokens: []string{testToken}})
	for _, f := range netboxsim.StandardFields() {
		sim.AddCustomField(f)
	}
	sim.AddCustomField(netboxsim.CustomField{Name: "cpu_cores", Type: "integer", FilterLogic: "exact"})
	ts := sim.Start()
	t.Cleanup(sim.Close)
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(testToken), 0o600))
	reg := prometheus.NewRegistry()
	client, err := netbox.New(netbox.Config{URL: ts.URL, TokenFile: tokenFile, AllowHTTP: true, Timeout: 5 * time.Second,
		Fields: netbox.DefaultFieldNames()}, zap.NewNop(), reg)
	require.NoError(t, err)
	inv.sim, inv.client, inv.reg = sim, client, reg
	return inv
}

// addHost adds a free pool device and, unless user is "", its labelled credentials Secret.
func (inv *inventory) addHost(t *testing.T, srv *kubeapi.Server, name string, cores int, user string) int32 {
	t.Helper()
	id := inv.sim.AddDevice(netboxsim.Device{Name: name, Status: "staged", Custom: map[string]any{
		"o2ims_managed": true, "cpu_cores": cores,
		"o2ims_bmc_address": "redfish-virtualmedia+https://10.0.0.9/redfish/v1/Systems/" + name,
		"o2ims_boot_mac":    fmt.Sprintf("52:54:00:00:%02x:%02x", len(name), rand.Intn(256)),
	}})
	if user != "" {
		_, err := srv.AdminClientset().CoreV1().Secrets(inv.creds).Create(context.Background(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "bmc-", Labels: map[string]string{hosts.CredentialsLabel(id): "true"}},
			Data:       map[string][]byte{"username": []byte(user), "password": []byte("s3cret")},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	return id
}

func hostsParams(cluster string, hosts ...map[string]any) map[string]any {
	list := make([]any, 0, len(hosts))
	for _, h := range hosts {
		list = append(list, h)
	}
	return map[string]any{"clusterName": cluster, "hosts": list}
}

func metal3Objects(t *testing.T, srv *kubeapi.Server, metal3NS, uid string) (bmhs, secrets []string) {
	t.Helper()
	list, err := srv.AdminDynamic().Resource(external.BareMetalHostGVR).Namespace(metal3NS).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	for _, b := range list.Items {
		if uid == "" || b.GetAnnotations()[AnnotationRequestUID] == uid {
			bmhs = append(bmhs, b.GetName())
		}
	}
	sl, err := srv.AdminClientset().CoreV1().Secrets(metal3NS).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	for _, s := range sl.Items {
		if uid == "" || s.Annotations[AnnotationRequestUID] == uid {
			secrets = append(secrets, s.Name)
		}
	}
	return bmhs, secrets
}

func TestRequestWithHostsWalksToFulfilledThenReleasesThem(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	inv := newInventory(t, srv, "hosts")
	big := inv.addHost(t, srv, "big-1", 32, "admin")
	w1 := inv.addHost(t, srv, "small-1", 8, "admin")
	w2 := inv.addHost(t, srv, "small-2", 8, "admin")
	inv.addHost(t, srv, "small-3", 4, "admin") // does not match the worker selector
	startChain(t, srv, "hosts", inv.namespaces, nil, inv.client)

	pr := createPR(t, srv, provisioningRequest("hosts-1", "hosts", tmplOK, hostsParams("edge-hosts-1",
		map[string]any{"role": "control-plane", "count": 1, "selector": map[string]any{"cpu_cores": 32}},
		map[string]any{"role": "worker", "count": 2, "selector": map[string]any{"cpu_cores": 8}},
	)))
	uid := string(pr.GetUID())
	done := waitState(t, srv, "hosts-1", v1alpha1.StateFulfilled, 60*time.Second)
	ids, _, _ := unstructured.NestedStringSlice(done.Object, "status", "provisionedResourceSet", "oCloudInfrastructureResourceIds")
	require.Len(t, ids, 3)
	assert.Equal(t, resourceID(big), ids[0], "slots in request order: the control plane first")
	assert.ElementsMatch(t, []string{resourceID(w1), resourceID(w2)}, ids[1:], "the workers match their selector")
	for _, id := range []int32{big, w1, w2} {
		d, _ := inv.sim.Device(id)
		assert.Equal(t, "active", d.Status)
		assert.Equal(t, uid, d.Custom["o2ims_request_uid"])
	}

	bmh, err := srv.AdminDynamic().Resource(external.BareMetalHostGVR).Namespace(inv.metal3NS).Get(context.Background(), netbox.Identity(big), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{hosts.LabelCluster: "edge-hosts-1", hosts.LabelRole: "control-plane", hosts.LabelManagedBy: hosts.ManagedByValue}, bmh.GetLabels())
	spec, _, _ := unstructured.NestedMap(bmh.Object, "spec")
	assert.Equal(t, false, spec["online"])
	assert.Equal(t, netbox.Identity(big)+"-bmc-secret", spec["bmc"].(map[string]any)["credentialsName"])
	sec, err := srv.AdminClientset().CoreV1().Secrets(inv.metal3NS).Get(context.Background(), netbox.Identity(big)+"-bmc-secret", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "admin", string(sec.Data["username"]))

	// NetBox calls per claimed host: a schema check per role, then a read and a conditional write each;
	// hosts are chosen from the inventory's view, whose listings are the shared refresh's, not a claim's.
	calls := inv.sim.Calls("GET", netboxsim.RouteCustomFields) + inv.sim.Calls("GET", netboxsim.RouteDevice) + inv.sim.Calls("PATCH", netboxsim.RouteDevice)
	t.Logf("NetBox calls for 3 claimed hosts: %d (%.2f per host)", calls, float64(calls)/3)
	assert.LessOrEqual(t, float64(calls)/3, 3.0)

	require.NoError(t, srv.AdminDynamic().Resource(v1alpha1.GVR).Delete(context.Background(), "hosts-1", metav1.DeleteOptions{}))
	var last any
	eventually(t, 60*time.Second, func() bool {
		u, ok := getPR(t, srv, "hosts-1")
		if ok {
			last = u.Object["status"]
		}
		return !ok
	}, "request never went away: %+v", lastStatus{&last})
	for _, id := range []int32{big, w1, w2} {
		d, _ := inv.sim.Device(id)
		assert.Equal(t, "staged", d.Status, "host %d back in the pool", id)
		assert.Nil(t, d.Custom["o2ims_request_uid"], "host %d unowned", id)
	}
	bmhs, secrets := metal3Objects(t, srv, inv.metal3NS, uid)
	assert.Empty(t, bmhs)
	assert.Empty(t, secrets)
	creds, err := srv.AdminClientset().CoreV1().Secrets(inv.creds).List(context.Background(), metav1.ListOptions{LabelSelector: hosts.CredentialsLabel(big)})
	require.NoError(t, err)
	assert.Len(t, creds.Items, 1, "the credentials Secret is never deleted")
}

func TestMissingHostsKeepTheRequestProgressingUntilThereAreEnough(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	inv := newInventory(t, srv, "missing")
	inv.addHost(t, srv, "m-1", 64, "admin")
	startChain(t, srv, "missing", func(c *Config) { inv.namespaces(c); c.Requeue = 300 * time.Millisecond }, nil, inv.client)
	createPR(t, srv, provisioningRequest("missing-1", "missing", tmplOK, hostsParams("edge-missing-1",
		map[string]any{"role": "worker", "count": 3, "selector": map[string]any{"cpu_cores": 64}})))
	eventually(t, 30*time.Second, func() bool {
		u, _ := getPR(t, srv, "missing-1")
		m := v1alpha1.StatusOf(u).Message
		return v1alpha1.StatusOf(u).State == v1alpha1.StateProgressing && containsAll(m, "1 of 3 hosts claimed", "2 more for role worker")
	}, "the missing hosts were not reported")
	inv.addHost(t, srv, "m-2", 64, "admin")
	inv.addHost(t, srv, "m-3", 64, "admin")
	waitState(t, srv, "missing-1", v1alpha1.StateFulfilled, 60*time.Second)
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !contains(s, p) {
			return false
		}
	}
	return true
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && indexOf(s, sub) >= 0)
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func TestHostsRequestedWithoutAnInventoryFail(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	startChain(t, srv, "no-inventory", nil, nil)
	createPR(t, srv, provisioningRequest("no-inventory-1", "no-inventory", tmplOK, hostsParams("edge-noinv-1",
		map[string]any{"role": "worker", "count": 1})))
	u := waitState(t, srv, "no-inventory-1", v1alpha1.StateFailed, 30*time.Second)
	assert.Contains(t, v1alpha1.StatusOf(u).Message, "hosts are requested but no inventory is configured")
}

func TestHostWithoutCredentialsIsQuarantinedAndAnotherChosen(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	inv := newInventory(t, srv, "quarantine")
	bare := inv.addHost(t, srv, "q-bare", 128, "") // no credentials Secret: the only host at first
	startChain(t, srv, "quarantine", func(c *Config) { inv.namespaces(c); c.Requeue = 300 * time.Millisecond }, nil, inv.client)
	createPR(t, srv, provisioningRequest("quarantine-1", "quarantine", tmplOK, hostsParams("edge-q-1",
		map[string]any{"role": "worker", "count": 1, "selector": map[string]any{"cpu_cores": 128}})))
	eventually(t, 30*time.Second, func() bool { d, _ := inv.sim.Device(bare); return d.Status == "failed" }, "never quarantined")
	u, _ := getPR(t, srv, "quarantine-1")
	assert.Equal(t, v1alpha1.StateProgressing, v1alpha1.StatusOf(u).State, "a quarantine is not a failure of the request")
	good := inv.addHost(t, srv, "q-good", 128, "admin")
	done := waitState(t, srv, "quarantine-1", v1alpha1.StateFulfilled, 60*time.Second)
	ids, _, _ := unstructured.NestedStringSlice(done.Object, "status", "provisionedResourceSet", "oCloudInfrastructureResourceIds")
	assert.Equal(t, []string{resourceID(good)}, ids)
	d, _ := inv.sim.Device(bare)
	assert.Equal(t, "failed", d.Status, "quarantined")
	assert.Nil(t, d.Custom["o2ims_request_uid"], "quarantine never claims")
	eventually(t, 10*time.Second, func() bool {
		return hasEvent(eventsOf(t, srv, "quarantine-1"), corev1.EventTypeWarning, hosts.EventQuarantined, "credentials-missing")
	}, "no Quarantined event")
	families, err := inv.reg.Gather()
	require.NoError(t, err)
	found := false
	for _, f := range families {
		if f.GetName() == "o2ims_netbox_quarantines_total" {
			for _, m := range f.GetMetric() {
				if m.GetCounter().GetValue() == 1 {
					found = true
				}
			}
		}
	}
	assert.True(t, found, "quarantine counted by reason")
}

// Metal3 reports a registration error (the BMC refuses the credentials) on a claimed host: the host is
// quarantined like one without credentials — our BareMetalHost and BMC Secret removed with their
// checkpoint, the device failed in NetBox with the reason, its record kept — and another one is claimed.
func TestRefusedBMCCredentialsQuarantineTheHostAndAnotherIsClaimed(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	inv := newInventory(t, srv, "refused")
	refused := inv.addHost(t, srv, "refused-1", 256, "refused") // Metal3 cannot log in with these
	c := startChain(t, srv, "refused", func(c *Config) { inv.namespaces(c); c.Requeue = 300 * time.Millisecond }, nil, inv.client)
	pr := createPR(t, srv, provisioningRequest("refused-1", "refused", tmplOK, hostsParams("edge-refused-1",
		map[string]any{"role": "worker", "count": 1, "selector": map[string]any{"cpu_cores": 256}})))
	uid := string(pr.GetUID())
	eventually(t, 30*time.Second, func() bool { d, _ := inv.sim.Device(refused); return d.Status == "active" }, "the host was never claimed")
	good := inv.addHost(t, srv, "refused-2", 256, "admin") // the replacement: added once the refused one is taken

	done := waitState(t, srv, "refused-1", v1alpha1.StateFulfilled, 60*time.Second)
	ids, _, _ := unstructured.NestedStringSlice(done.Object, "status", "provisionedResourceSet", "oCloudInfrastructureResourceIds")
	assert.Equal(t, []string{resourceID(good)}, ids)
	slots, err := hosts.ReadSlots(done)
	require.NoError(t, err)
	assert.Equal(t, []hosts.Slot{{Role: "worker", Index: 0, ID: netbox.Identity(good), Phase: hosts.PhaseClaimed}}, slots,
		"only the replacement is recorded")

	d, _ := inv.sim.Device(refused)
	assert.Equal(t, "failed", d.Status, "quarantined")
	assert.Nil(t, d.Custom["o2ims_request_uid"], "no longer held by the request")
	require.NotEmpty(t, d.Changelog)
	last := d.Changelog[len(d.Changelog)-1]
	assert.True(t, strings.HasPrefix(last, "o2ims quarantine (credentials-refused): Metal3 could not register it with its BMC credentials: registration error: Failed to get power state"), last)
	d, _ = inv.sim.Device(good)
	assert.Equal(t, "active", d.Status)
	assert.Equal(t, uid, d.Custom["o2ims_request_uid"])

	bmhs, secrets := metal3Objects(t, srv, inv.metal3NS, uid)
	assert.Equal(t, []string{netbox.Identity(good)}, bmhs, "the refused host's BareMetalHost is gone")
	assert.Equal(t, []string{netbox.Identity(good) + "-bmc-secret"}, secrets, "the refused host's BMC Secret is gone")
	creds, err := srv.AdminClientset().CoreV1().Secrets(inv.creds).List(context.Background(), metav1.ListOptions{LabelSelector: hosts.CredentialsLabel(refused)})
	require.NoError(t, err)
	assert.Len(t, creds.Items, 1, "the credentials Secret is never deleted")

	// While it was set aside, the request's status said which host and why, sanitised.
	var said []string
	for _, body := range c.rec.Bodies("PATCH", "/provisioningrequests/refused-1/status") {
		var patch struct {
			Status struct {
				ProvisioningStatus struct {
					ProvisioningMessage string `json:"provisioningMessage"`
				} `json:"provisioningStatus"`
			} `json:"status"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &patch))
		if m := patch.Status.ProvisioningStatus.ProvisioningMessage; strings.Contains(m, "quarantining") {
			said = append(said, m)
		}
	}
	require.NotEmpty(t, said, "the status never said the host was being quarantined")
	for _, m := range said {
		assert.Contains(t, m, "quarantining 1 hosts and choosing others: "+netbox.Identity(refused)+
			" (Metal3 could not register it with its BMC credentials: registration error: Failed to get power state")
		assert.NotContains(t, m, "\n")
		assert.NotContains(t, m, "10.0.0.9", "no BMC address")
		assert.NotContains(t, m, "refused", "no credentials")
	}

	var quarantined []corev1.Event
	for _, e := range eventsOf(t, srv, "refused-1") {
		if e.Reason == hosts.EventQuarantined {
			quarantined = append(quarantined, e)
		}
	}
	require.Len(t, quarantined, 1, "one HostQuarantined event")
	e := quarantined[0]
	assert.Equal(t, corev1.EventTypeWarning, e.Type)
	assert.LessOrEqual(t, e.Count, int32(1), "posted once")
	assert.Contains(t, e.Message, "Quarantined host "+netbox.Identity(refused)+" (credentials-refused)")
	assert.Contains(t, e.Message, "registration error")
	assert.NotContains(t, e.Message, "10.0.0.9", "no BMC address")
	assert.NotContains(t, e.Message, "\n")
}

func TestUnknownSelectorFieldIsAConfigurationFailureNotNoCapacity(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	inv := newInventory(t, srv, "schema")
	inv.addHost(t, srv, "s-1", 8, "admin")
	startChain(t, srv, "schema", inv.namespaces, nil, inv.client)
	createPR(t, srv, provisioningRequest("schema-1", "schema", tmplOK, hostsParams("edge-schema-1",
		map[string]any{"role": "worker", "count": 1, "selector": map[string]any{"gpu_model": "a100"}})))
	u := waitState(t, srv, "schema-1", v1alpha1.StateFailed, 30*time.Second)
	assert.Contains(t, v1alpha1.StatusOf(u).Message, "Host assignment failed; reason: netbox")
	assert.Contains(t, v1alpha1.StatusOf(u).Message, "gpu_model")
}

// Fifty requests compete for twenty hosts: exactly twenty claims, never a host twice.
func TestCompetingRequestsNeverShareAHost(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	inv := newInventory(t, srv, "race")
	var hostIDs []int32
	for i := 0; i < 20; i++ {
		hostIDs = append(hostIDs, inv.addHost(t, srv, fmt.Sprintf("race-%02d", i), 512, "admin"))
	}
	startChain(t, srv, "race", func(c *Config) { inv.namespaces(c); c.Requeue = time.Second }, nil, inv.client)
	for i := 0; i < 50; i++ {
		createPR(t, srv, provisioningRequest(fmt.Sprintf("race-%02d", i), "race", tmplOK, hostsParams(fmt.Sprintf("edge-race-%02d", i),
			map[string]any{"role": "worker", "count": 1, "selector": map[string]any{"cpu_cores": 512}})))
	}
	eventually(t, 120*time.Second, func() bool {
		n := 0
		for i := 0; i < 50; i++ {
			if u, ok := getPR(t, srv, fmt.Sprintf("race-%02d", i)); ok && v1alpha1.StatusOf(u).State == v1alpha1.StateFulfilled {
				n++
			}
		}
		return n == 20
	}, "twenty requests never got their host")

	owners := map[string]int32{}
	for _, id := range hostIDs {
		d, _ := inv.sim.Device(id)
		require.Equal(t, "active", d.Status)
		owner, _ := d.Custom["o2ims_request_uid"].(string)
		prev, dup := owners[owner]
		assert.False(t, dup, "request %s owns hosts %d and %d", owner, prev, id)
		owners[owner] = id
	}
	committed, conflicts := 0, 0
	for _, p := range inv.sim.PatchLog() {
		if p.Committed {
			committed++
		}
		if p.Status == 412 {
			conflicts++
		}
	}
	assert.Equal(t, 20, committed, "one committed claim per host, never a second")
	claimedByRecords := map[string]string{}
	for i := 0; i < 50; i++ {
		u, _ := getPR(t, srv, fmt.Sprintf("race-%02d", i))
		slots, _ := hosts.ReadSlots(u)
		for _, s := range slots {
			if s.Phase == hosts.PhaseClaimed {
				other, dup := claimedByRecords[s.ID]
				assert.False(t, dup, "%s recorded as claimed by %s and %s", s.ID, other, u.GetName())
				claimedByRecords[s.ID] = u.GetName()
			}
		}
	}
	assert.Len(t, claimedByRecords, 20)
	t.Logf("race: 50 requests, 20 hosts: %d committed claims, %d claims lost on If-Match (412)", committed, conflicts)

	// The host step's NetBox calls (the view's listings are the shared refresh's): at most 4 per claimed
	// host until settled, and none while the other 30 wait, though the safety net looks every second.
	settled := hostStepCalls(inv.sim)
	t.Logf("race: %d NetBox calls of the host step until settled (%.2f per claimed host)", settled, float64(settled)/20)
	assert.LessOrEqual(t, float64(settled)/20, 4.0)
	time.Sleep(3 * time.Second)
	assert.Equal(t, settled, hostStepCalls(inv.sim), "requests waiting for hosts called NetBox")
	for i := 0; i < 50; i++ {
		if u, _ := getPR(t, srv, fmt.Sprintf("race-%02d", i)); v1alpha1.StatusOf(u).State != v1alpha1.StateFulfilled {
			assert.Contains(t, v1alpha1.StatusOf(u).Message, v1alpha1.WaitingForFreeHosts+": 1 more for role worker, since ")
		}
	}
}

// hostStepCalls counts the NetBox calls only the host step makes: selector checks, and reads and writes
// of one device (the inventory view lists devices; the host step no longer does).
func hostStepCalls(sim *netboxsim.Server) int {
	return sim.Calls("GET", netboxsim.RouteCustomFields) + sim.Calls("GET", netboxsim.RouteDevice) + sim.Calls("PATCH", netboxsim.RouteDevice)
}

// Hosts deleted in NetBox stay in the view until its next full listing; a request that chooses one meets
// its 404 once, which drops it from the view, and claims another — it never loops on it.
func TestAHostDeletedInNetBoxCostsOneReadNotALoop(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	inv := newInventory(t, srv, "deleted")
	var ids []int32
	for i := 0; i < 4; i++ {
		ids = append(ids, inv.addHost(t, srv, fmt.Sprintf("deleted-%d", i), 48, "admin"))
	}
	c := startChain(t, srv, "deleted", inv.namespaces, nil, inv.client)
	eventually(t, 20*time.Second, c.view.IsSynced, "the view never synced")
	for _, id := range ids[:3] {
		require.True(t, inv.sim.DeleteDevice(id))
	}
	gets := inv.sim.Calls("GET", netboxsim.RouteDevice)
	createPR(t, srv, provisioningRequest("deleted-1", "deleted", tmplOK, hostsParams("edge-deleted-1",
		map[string]any{"role": "worker", "count": 1, "selector": map[string]any{"cpu_cores": 48}})))
	done := waitState(t, srv, "deleted-1", v1alpha1.StateFulfilled, 30*time.Second)
	got, _, _ := unstructured.NestedStringSlice(done.Object, "status", "provisionedResourceSet", "oCloudInfrastructureResourceIds")
	assert.Equal(t, []string{resourceID(ids[3])}, got)
	t.Logf("device GETs: %d", inv.sim.Calls("GET", netboxsim.RouteDevice)-gets)
	// At most one read of each deleted host and the claim's own read of the one that is left: never a
	// loop. The fifth read seen before was registered()'s (metal3.go): the pass after the claim often runs
	// before the cache holds the BareMetalHost the claim created, and re-registering read the device
	// again; a live read of the BareMetalHost now answers that pass.
	assert.LessOrEqual(t, inv.sim.Calls("GET", netboxsim.RouteDevice)-gets, 4)
}

// Hosts freed go to the requests waiting for them in the order they began to wait, woken at once (the
// safety net is a minute away), and a request whose selector the freed host does not match never holds
// up one that it matches.
func TestFreedHostsGoToWaitersInTheOrderTheyBeganToWait(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	inv := newInventory(t, srv, "fifo")
	for i := 0; i < 2; i++ {
		inv.addHost(t, srv, fmt.Sprintf("fifo-%d", i), 64, "admin")
	}
	startChain(t, srv, "fifo", inv.namespaces, nil, inv.client)
	create := func(name string, cores int) {
		createPR(t, srv, provisioningRequest(name, "fifo", tmplOK, hostsParams("edge-"+name,
			map[string]any{"role": "worker", "count": 1, "selector": map[string]any{"cpu_cores": cores}})))
	}
	create("fifo-holder-0", 64)
	create("fifo-holder-1", 64)
	waitState(t, srv, "fifo-holder-0", v1alpha1.StateFulfilled, 60*time.Second)
	waitState(t, srv, "fifo-holder-1", v1alpha1.StateFulfilled, 60*time.Second)
	// Waiting in this order; the first wants hosts no freed one matches.
	waiters := []string{"fifo-other", "fifo-w0", "fifo-w1", "fifo-w2"}
	for _, name := range waiters {
		cores := 64
		if name == "fifo-other" {
			cores = 8
		}
		create(name, cores)
		eventually(t, 30*time.Second, func() bool {
			u, _ := getPR(t, srv, name)
			return strings.Contains(v1alpha1.StatusOf(u).Message, v1alpha1.WaitingForFreeHosts)
		}, name+" never waited")
		time.Sleep(1100 * time.Millisecond) // distinct waiting times, to the second as recorded
	}
	waitingFrom := hostStepCalls(inv.sim)
	time.Sleep(2 * time.Second)
	assert.Equal(t, waitingFrom, hostStepCalls(inv.sim), "requests waiting for hosts called NetBox")
	fields, patches := inv.sim.Calls("GET", netboxsim.RouteCustomFields), inv.sim.Calls("PATCH", netboxsim.RouteDevice)
	for i, holder := range []string{"fifo-holder-0", "fifo-holder-1"} {
		start := time.Now()
		require.NoError(t, srv.AdminDynamic().Resource(v1alpha1.GVR).Delete(context.Background(), holder, metav1.DeleteOptions{}))
		served := waitState(t, srv, waiters[1+i], v1alpha1.StateFulfilled, 30*time.Second)
		t.Logf("%s deleted → %s fulfilled in %s", holder, served.GetName(), time.Since(start))
		for _, later := range waiters[2+i:] {
			u, _ := getPR(t, srv, later)
			assert.NotEqual(t, v1alpha1.StateFulfilled, v1alpha1.StatusOf(u).State, "%s was served before %s", later, served.GetName())
		}
	}
	u, _ := getPR(t, srv, "fifo-other")
	assert.Contains(t, v1alpha1.StatusOf(u).Message, v1alpha1.WaitingForFreeHosts)
	// Two releases and two claims wrote; the woken waiters checked no selector again.
	assert.Equal(t, patches+4, inv.sim.Calls("PATCH", netboxsim.RouteDevice))
	assert.Equal(t, fields, inv.sim.Calls("GET", netboxsim.RouteCustomFields))
}

// The operator is stopped at random moments while it claims and releases (passes cut off mid-call);
// whatever it was doing, no host is ever claimed twice and, once every request is deleted, every host is
// back in the pool and nothing is left in Metal3.
func TestRandomRestartsDuringClaimsAndReleasesLeakNothing(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	inv := newInventory(t, srv, "chaos")
	var hostIDs []int32
	for i := 0; i < 16; i++ {
		hostIDs = append(hostIDs, inv.addHost(t, srv, fmt.Sprintf("chaos-%02d", i), 1024, "admin"))
	}
	// Slow NetBox writes so restarts land in the middle of claims and releases.
	inv.sim.SetLatency("PATCH", netboxsim.RouteDevice, 40*time.Millisecond)
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	cycle := func(n int) {
		for i := 0; i < n; i++ {
			c := startChain(t, srv, "chaos", func(c *Config) { inv.namespaces(c); c.Requeue = 300 * time.Millisecond }, nil, inv.client)
			time.Sleep(time.Duration(100+rng.Intn(500)) * time.Millisecond)
			c.stop(t)
		}
	}
	for i := 0; i < 8; i++ {
		createPR(t, srv, provisioningRequest(fmt.Sprintf("chaos-%d", i), "chaos", tmplOK, hostsParams(fmt.Sprintf("edge-chaos-%d", i),
			map[string]any{"role": "worker", "count": 2, "selector": map[string]any{"cpu_cores": 1024}})))
	}
	cycle(6)
	assertNoDoubleClaims(t, inv, hostIDs)
	for i := 0; i < 8; i++ {
		require.NoError(t, srv.AdminDynamic().Resource(v1alpha1.GVR).Delete(context.Background(), fmt.Sprintf("chaos-%d", i), metav1.DeleteOptions{}))
	}
	cycle(6)
	assertNoDoubleClaims(t, inv, hostIDs)
	startChain(t, srv, "chaos", func(c *Config) { inv.namespaces(c); c.Requeue = 300 * time.Millisecond }, nil, inv.client)
	eventually(t, 120*time.Second, func() bool {
		for i := 0; i < 8; i++ {
			if _, ok := getPR(t, srv, fmt.Sprintf("chaos-%d", i)); ok {
				return false
			}
		}
		return true
	}, "requests never finished deleting")
	for _, id := range hostIDs {
		d, _ := inv.sim.Device(id)
		assert.Equal(t, "staged", d.Status, "host %d", id)
		assert.Nil(t, d.Custom["o2ims_request_uid"], "host %d", id)
	}
	var leftBMH []string
	list, err := srv.AdminDynamic().Resource(external.BareMetalHostGVR).Namespace(inv.metal3NS).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	mine := map[string]bool{}
	for _, id := range hostIDs {
		mine[netbox.Identity(id)] = true
	}
	for _, b := range list.Items {
		if mine[b.GetName()] {
			leftBMH = append(leftBMH, b.GetName())
		}
	}
	assert.Empty(t, leftBMH, "BareMetalHosts left behind")
	for id := range mine {
		_, err := srv.AdminClientset().CoreV1().Secrets(inv.metal3NS).Get(context.Background(), id+"-bmc-secret", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "BMC Secret of %s left behind", id)
	}
}

// assertNoDoubleClaims: every committed claim PATCH took a host that was free (one committed claim per
// host until it is released), and no device names two owners over its life.
func assertNoDoubleClaims(t *testing.T, inv *inventory, hostIDs []int32) {
	t.Helper()
	var mu sync.Mutex
	mu.Lock()
	defer mu.Unlock()
	holder := map[int32]string{}
	for _, p := range inv.sim.PatchLog() {
		if !p.Committed {
			continue
		}
		cf, _ := p.Body["custom_fields"].(map[string]any)
		owner, has := cf["o2ims_request_uid"]
		if !has {
			continue
		}
		if s, ok := owner.(string); ok && s != "" {
			require.Empty(t, holder[p.DeviceID], "host %d claimed by %s while held by %s", p.DeviceID, s, holder[p.DeviceID])
			holder[p.DeviceID] = s
		} else {
			holder[p.DeviceID] = ""
		}
	}
	ids := make([]int, 0, len(hostIDs))
	for _, id := range hostIDs {
		ids = append(ids, int(id))
	}
	sort.Ints(ids)
}

type lastStatus struct{ v *any }

func (l lastStatus) String() string { return fmt.Sprint(*l.v) }

// NetBox down while the operator runs: a request with hosts waits, progressing, with a message naming the
// outage (the same from pass to pass: no status write per pass), and goes on once NetBox answers; a
// deletion waits the same way before it gives the host back. Neither fails nor loses a host.
func TestANetBoxOutageIsAWaitNamingIt(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	inv := newInventory(t, srv, "outage")
	id := inv.addHost(t, srv, "o-1", 48, "admin")
	startChain(t, srv, "outage", func(c *Config) { inv.namespaces(c); c.Requeue = 300 * time.Millisecond }, nil, inv.client)

	inv.sim.SetOutage(http.StatusServiceUnavailable)
	createPR(t, srv, provisioningRequest("outage-1", "outage", tmplOK, hostsParams("edge-outage-1",
		map[string]any{"role": "worker", "count": 1, "selector": map[string]any{"cpu_cores": 48}})))
	var s v1alpha1.ProvisioningStatus
	eventually(t, 30*time.Second, func() bool {
		u, _ := getPR(t, srv, "outage-1")
		s = v1alpha1.StatusOf(u)
		return contains(s.Message, "NetBox unreachable since")
	}, "the outage was never named: %+v", &s)
	assert.Equal(t, v1alpha1.StateProgressing, s.State)
	assert.Regexp(t, `^Hosts are being prepared: NetBox unreachable since \S+Z \(HTTP 503\); waiting$`, s.Message)
	calls := inv.sim.Calls("GET", netboxsim.RouteCustomFields)
	eventually(t, 30*time.Second, func() bool { return inv.sim.Calls("GET", netboxsim.RouteCustomFields) >= calls+8 }, // two passes: four attempts each
		"the request was not looked at again during the outage")
	u, _ := getPR(t, srv, "outage-1")
	assert.Equal(t, s, v1alpha1.StatusOf(u), "passes during the outage change nothing")

	inv.sim.SetOutage(0)
	waitState(t, srv, "outage-1", v1alpha1.StateFulfilled, 60*time.Second)

	inv.sim.SetOutage(http.StatusBadGateway)
	require.NoError(t, srv.AdminDynamic().Resource(v1alpha1.GVR).Delete(context.Background(), "outage-1", metav1.DeleteOptions{}))
	eventually(t, 30*time.Second, func() bool {
		u, _ := getPR(t, srv, "outage-1")
		s = v1alpha1.StatusOf(u)
		return contains(s.Message, "NetBox unreachable since")
	}, "the deletion never named the outage: %+v", &s)
	assert.Equal(t, v1alpha1.StateDeleting, s.State)
	assert.Regexp(t, `^Deleting; releasing hosts: NetBox unreachable since \S+Z \(HTTP 502\); waiting$`, s.Message)
	d, _ := inv.sim.Device(id)
	assert.Equal(t, "active", d.Status, "still claimed while NetBox is down")

	inv.sim.SetOutage(0)
	eventually(t, 60*time.Second, func() bool { _, ok := getPR(t, srv, "outage-1"); return !ok }, "never released after the outage")
	d, _ = inv.sim.Device(id)
	assert.Equal(t, "staged", d.Status, "back in the pool")
}

// A request fulfilled by an earlier version recorded its hosts as netbox-<id>: the first pass after a
// restart rewrites them to the inventory's resource ids in its one status write, and that is all — same
// state, message and time, no event, no re-drive, nothing written to NetBox or Metal3; later passes write
// nothing.
func TestOldFormResourceIdsAreRewrittenOnceWithoutReDriving(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	inv := newInventory(t, srv, "oldids")
	a := inv.addHost(t, srv, "old-1", 48, "admin")
	b := inv.addHost(t, srv, "old-2", 48, "admin")
	first := startChain(t, srv, "oldids", inv.namespaces, nil, inv.client)
	createPR(t, srv, provisioningRequest("oldids-1", "oldids", tmplOK, hostsParams("edge-oldids-1",
		map[string]any{"role": "worker", "count": 2, "selector": map[string]any{"cpu_cores": 48}})))
	done := waitState(t, srv, "oldids-1", v1alpha1.StateFulfilled, 60*time.Second)
	ids := resourceIDs(done)
	assert.ElementsMatch(t, []string{resourceID(a), resourceID(b)}, ids, "recorded as the inventory's ids")
	first.stop(t)

	// What the earlier version wrote: the same hosts as netbox-<id>.
	slots, err := hosts.ReadSlots(done)
	require.NoError(t, err)
	var old []any
	for _, s := range slots {
		old = append(old, s.ID)
	}
	set := map[string]any{"provisionedResourceSet": map[string]any{"oCloudNodeClusterId": v1alpha1.ResourceSetOf(done).NodeClusterID,
		"oCloudInfrastructureResourceIds": old}}
	body, _ := json.Marshal(map[string]any{"status": set})
	_, err = srv.AdminDynamic().Resource(v1alpha1.GVR).Patch(context.Background(), "oldids-1", types.MergePatchType, body, metav1.PatchOptions{}, "status")
	require.NoError(t, err)
	before, _ := getPR(t, srv, "oldids-1")
	require.Equal(t, []string{slots[0].ID, slots[1].ID}, resourceIDs(before))
	events := len(eventsOf(t, srv, "oldids-1"))
	patches := inv.sim.Calls("PATCH", netboxsim.RouteDevice)

	second := startChain(t, srv, "oldids", inv.namespaces, nil, inv.client)
	var after *unstructured.Unstructured
	eventually(t, 20*time.Second, func() bool {
		after, _ = getPR(t, srv, "oldids-1")
		return len(resourceIDs(after)) == 2 && !strings.HasPrefix(resourceIDs(after)[0], "netbox-")
	}, "the old ids were never rewritten")
	assert.Equal(t, asResourceIDs([]string{slots[0].ID, slots[1].ID}), resourceIDs(after), "the same hosts, in order")
	assert.Equal(t, v1alpha1.StatusOf(before), v1alpha1.StatusOf(after), "state, message and time unchanged")
	assert.Equal(t, v1alpha1.ResourceSetOf(before).NodeClusterID, v1alpha1.ResourceSetOf(after).NodeClusterID)
	assert.Equal(t, before.Object["status"].(map[string]any)["extensions"], after.Object["status"].(map[string]any)["extensions"],
		"status.extensions.hosts keeps netbox-<id>")
	time.Sleep(2 * time.Second)
	assert.Len(t, second.rec.Writes("/provisioningrequests/oldids-1/status"), 1, "one status write")
	assert.Empty(t, nonStatus(second.rec.Writes("/provisioningrequests/oldids-1")), "nothing else written to the request")
	assert.Zero(t, second.rec.Count("POST", "/packagevariants"), "re-rendered a fulfilled request")
	assert.Empty(t, second.rec.Writes("/baremetalhosts"), "Metal3 untouched")
	assert.Equal(t, patches, inv.sim.Calls("PATCH", netboxsim.RouteDevice), "NetBox untouched")
	assert.Len(t, eventsOf(t, srv, "oldids-1"), events, "no event")
}
