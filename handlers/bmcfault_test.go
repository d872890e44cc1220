package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/handlers/hosts"
	"github.com/o2ims-operator/o2ims-operator/netbox"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/world"
)

// bmcAddr is the BMC address addHost gives a host of that name (the world's faults are keyed by it).
func bmcAddr(name string) string {
	return "redfish-virtualmedia+https://10.0.0.9/redfish/v1/Systems/" + name
}

// addHostAt adds a free pool device with its own BMC address and labelled credentials.
func (inv *inventory) addHostAt(t *testing.T, srv *kubeapi.Server, name, addr string) int32 {
	t.Helper()
	id := inv.sim.AddDevice(netboxsim.Device{Name: name, Status: "staged", Custom: map[string]any{
		"o2ims_managed": true, "cpu_cores": 64, "o2ims_bmc_address": addr, "o2ims_boot_mac": "52:54:00:00:aa:01",
	}})
	_, err := srv.AdminClientset().CoreV1().Secrets(inv.creds).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "bmc-", Labels: map[string]string{hosts.CredentialsLabel(id): "true"}},
		Data:       map[string][]byte{"username": []byte("admin"), "password": []byte("s3cret")},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return id
}

// quarantinedWith lists the devices NetBox has failed with reason in their last changelog entry.
func (inv *inventory) quarantinedWith(ids []int32, reason netbox.QuarantineReason) []int32 {
	var out []int32
	for _, id := range ids {
		d, _ := inv.sim.Device(id)
		if d.Status == "failed" && len(d.Changelog) > 0 && strings.Contains(d.Changelog[len(d.Changelog)-1], "("+string(reason)+")") {
			out = append(out, id)
		}
	}
	return out
}

// said is every status message the operator wrote for the request (its status PATCHes).
func (c *chain) said(name string) []string {
	var out []string
	for _, body := range c.rec.Bodies("PATCH", "/provisioningrequests/"+name+"/status") {
		var patch struct {
			Status struct {
				ProvisioningStatus struct {
					ProvisioningMessage string `json:"provisioningMessage"`
				} `json:"provisioningStatus"`
			} `json:"status"`
		}
		if json.Unmarshal([]byte(body), &patch) == nil && patch.Status.ProvisioningStatus.ProvisioningMessage != "" {
			out = append(out, patch.Status.ProvisioningStatus.ProvisioningMessage)
		}
	}
	return out
}

func anyContains(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func onePR(name, label string) map[string]any {
	return hostsParams("edge-"+name, map[string]any{"role": "worker", "count": 1, "selector": map[string]any{"cpu_cores": 64}})
}

// The repro: five pool hosts whose BMCs do not answer (a switch down) and a request for one.
// Quarantines stop at BMC_FAULT_BURST (3): the fourth host stays claimed, unquarantined, and the request
// waits saying why (the phrase the BMCFaultBurst alarm reads) — also when, as with the defaults, its
// BMC_MAX_REPLACEMENTS (3) is reached at the same time: the bound kept the fourth host and the hold was
// never said, so the alarm never came.
func TestFiveHostsFailingTogetherQuarantineNoMoreThanTheBurst(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	inv := newInventory(t, srv, "burst")
	var ids []int32
	for i := 0; i < 5; i++ {
		name := fmt.Sprintf("burst-%d", i)
		testWorld.SetBMCFault(bmcAddr(name), world.BMCUnreachable)
		ids = append(ids, inv.addHostAt(t, srv, name, bmcAddr(name)))
	}
	c := startChain(t, srv, "burst", func(c *Config) {
		inv.namespaces(c)
		c.Requeue = 300 * time.Millisecond
		c.BMCFaults.Grace, c.BMCFaults.ErrorCount = 300*time.Millisecond, 2
	}, nil, inv.client)
	createPR(t, srv, provisioningRequest("burst-1", "burst", tmplOK, onePR("burst-1", "burst")))
	var said []string // the failure prints what was said by then (an argument is evaluated at the call)
	eventually(t, 60*time.Second, func() bool { said = c.said("burst-1"); return anyContains(said, v1alpha1.QuarantinesHeld) },
		"the request never said the quarantines are held: %v", &said)
	eventually(t, 30*time.Second, func() bool { return len(inv.quarantinedWith(ids, netbox.ReasonRegistrationFailed)) >= 3 },
		"the hosts decided before the hold were never quarantined")
	time.Sleep(time.Second) // passes go on (REQUEUE_INTERVAL 300ms): still no more
	assert.Len(t, inv.quarantinedWith(ids, netbox.ReasonRegistrationFailed), 3, "still BMC_FAULT_BURST")
	u, ok := getPR(t, srv, "burst-1") // cluster-scoped
	require.True(t, ok)
	st := v1alpha1.StatusOf(u)
	assert.Equal(t, v1alpha1.StateProgressing, st.State)
	assert.Contains(t, st.Message, "a shared cause")
	assert.NotContains(t, st.Message, "10.0.0.9", "no BMC address")
	for _, m := range c.said("burst-1") {
		assert.NotContains(t, m, "10.0.0.9", "no BMC address")
	}
}

// One request replaces at most BMC_MAX_REPLACEMENTS hosts; then it waits for the host it holds.
func TestARequestReplacesAtMostMaxReplacementsHosts(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	inv := newInventory(t, srv, "bound")
	var ids []int32
	for i := 0; i < 4; i++ {
		name := fmt.Sprintf("bound-%d", i)
		testWorld.SetBMCFault(bmcAddr(name), world.BMCUnreachable)
		ids = append(ids, inv.addHostAt(t, srv, name, bmcAddr(name)))
	}
	c := startChain(t, srv, "bound", func(c *Config) {
		inv.namespaces(c)
		c.Requeue = 300 * time.Millisecond
		c.BMCFaults.Grace, c.BMCFaults.ErrorCount, c.BMCFaults.Burst, c.BMCFaults.MaxReplacements = 300*time.Millisecond, 2, 10, 2
	}, nil, inv.client)
	createPR(t, srv, provisioningRequest("bound-1", "bound", tmplOK, onePR("bound-1", "bound")))
	eventually(t, 60*time.Second, func() bool { return anyContains(c.said("bound-1"), "(BMC_MAX_REPLACEMENTS)") },
		"the request never said it reached its bound: %v", c.said("bound-1"))
	eventually(t, 30*time.Second, func() bool { return len(inv.quarantinedWith(ids, netbox.ReasonRegistrationFailed)) >= 2 }, "two replaced")
	time.Sleep(time.Second)
	assert.Len(t, inv.quarantinedWith(ids, netbox.ReasonRegistrationFailed), 2, "no more than BMC_MAX_REPLACEMENTS")
}

// A blip: the BMC does not answer for a while, Metal3 retries (errorCount grows) and then registers it:
// nothing is quarantined, the request is fulfilled with that host.
func TestABMCBlipQuarantinesNothing(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	inv := newInventory(t, srv, "blip")
	testWorld.SetBMCFault(bmcAddr("blip-1"), world.BMCUnreachable)
	id := inv.addHostAt(t, srv, "blip-1", bmcAddr("blip-1"))
	c := startChain(t, srv, "blip", func(c *Config) {
		inv.namespaces(c)
		c.Requeue = 300 * time.Millisecond
		c.BMCFaults.Grace, c.BMCFaults.ErrorCount = time.Hour, 2
	}, nil, inv.client)
	createPR(t, srv, provisioningRequest("blip-1", "blip", tmplOK, onePR("blip-1", "blip")))
	eventually(t, 60*time.Second, func() bool {
		list, err := srv.AdminDynamic().Resource(external.BareMetalHostGVR).Namespace(inv.metal3NS).List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		for _, b := range list.Items {
			if n, _, _ := unstructured.NestedInt64(b.Object, "status", "errorCount"); n >= 2 {
				return true
			}
		}
		return false
	}, "Metal3 never failed twice")
	testWorld.SetBMCFault(bmcAddr("blip-1"), world.BMCHealthy) // the switch is back
	done := waitState(t, srv, "blip-1", v1alpha1.StateFulfilled, 60*time.Second)
	assert.Equal(t, []string{resourceID(id)}, resourceIDs(done))
	d, _ := inv.sim.Device(id)
	assert.Equal(t, "active", d.Status)
	assert.False(t, hasEvent(eventsOf(t, srv, "blip-1"), corev1.EventTypeWarning, hosts.EventQuarantined, ""), "nothing quarantined")
	assert.True(t, anyContains(c.said("blip-1"), "quarantined if it lasts 1h0m0s and errorCount reaches 2"), "the wait said what it waits for")
}

// A fault that persists past the grace period and errorCount quarantines the host (registration-failed)
// and a replacement is used; before that, the request said it waited.
func TestAPersistentBMCFaultQuarantinesAfterGraceAndErrorCount(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	inv := newInventory(t, srv, "persist")
	testWorld.SetBMCFault(bmcAddr("persist-1"), world.BMCUnreachable)
	bad := inv.addHostAt(t, srv, "persist-1", bmcAddr("persist-1"))
	c := startChain(t, srv, "persist", func(c *Config) {
		inv.namespaces(c)
		c.Requeue = 300 * time.Millisecond
		c.BMCFaults.Grace, c.BMCFaults.ErrorCount = time.Second, 3
	}, nil, inv.client)
	createPR(t, srv, provisioningRequest("persist-1", "persist", tmplOK, onePR("persist-1", "persist")))
	eventually(t, 30*time.Second, func() bool { d, _ := inv.sim.Device(bad); return d.Status == "active" }, "never claimed")
	good := inv.addHostAt(t, srv, "persist-2", bmcAddr("persist-2"))
	done := waitState(t, srv, "persist-1", v1alpha1.StateFulfilled, 60*time.Second)
	assert.Equal(t, []string{resourceID(good)}, resourceIDs(done))
	assert.Equal(t, []int32{bad}, inv.quarantinedWith([]int32{bad}, netbox.ReasonRegistrationFailed))
	d, _ := inv.sim.Device(bad)
	last := d.Changelog[len(d.Changelog)-1]
	assert.Contains(t, last, "Metal3 could not register it for ")
	assert.Contains(t, last, "Failed to get power state") // NetBox's changelog keeps 200 characters
	assert.NotContains(t, last, "10.0.0.9", "no BMC address")
	assert.True(t, anyContains(c.said("persist-1"), "quarantined if it lasts 1s and errorCount reaches 3"), "it waited first: %v", c.said("persist-1"))
	assert.EqualValues(t, 1, nested(done, "status", "extensions", "hostReplacements"))
}

// Our credentials Secret for a host Metal3 cannot register is deleted: the cause is certain, the host is
// quarantined at once (credentials-missing), long before the grace period.
func TestAMissingCredentialsSecretQuarantinesAtOnce(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	inv := newInventory(t, srv, "nocreds")
	testWorld.SetBMCFault(bmcAddr("nocreds-1"), world.BMCUnreachable)
	bad := inv.addHostAt(t, srv, "nocreds-1", bmcAddr("nocreds-1"))
	c := startChain(t, srv, "nocreds", func(c *Config) {
		inv.namespaces(c)
		c.Requeue = 300 * time.Millisecond
	}, nil, inv.client) // default grace: 15 minutes
	createPR(t, srv, provisioningRequest("nocreds-1", "nocreds", tmplOK, onePR("nocreds-1", "nocreds")))
	eventually(t, 60*time.Second, func() bool { return anyContains(c.said("nocreds-1"), "errorCount ") }, "no registration error seen")
	require.NoError(t, srv.AdminClientset().CoreV1().Secrets(inv.creds).DeleteCollection(context.Background(), metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: hosts.CredentialsLabel(bad)}))
	good := inv.addHostAt(t, srv, "nocreds-2", bmcAddr("nocreds-2"))
	done := waitState(t, srv, "nocreds-1", v1alpha1.StateFulfilled, 60*time.Second)
	assert.Equal(t, []string{resourceID(good)}, resourceIDs(done))
	assert.Equal(t, []int32{bad}, inv.quarantinedWith([]int32{bad}, netbox.ReasonCredentialsMissing))
}

// BMC addresses under policy: a plain-HTTP Redfish address (refused by default) and one outside
// BMC_ALLOW_CIDRS are quarantined with their reason, and nothing carrying credentials is ever created
// for them; a host inside the policy is used.
func TestBMCAddressesOutsideThePolicyNeverGetCredentials(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	inv := newInventory(t, srv, "policy")
	plain := inv.addHostAt(t, srv, "policy-1", "redfish+http://10.0.0.9/redfish/v1/Systems/policy-1")
	outside := inv.addHostAt(t, srv, "policy-2", "redfish+https://192.168.7.7/redfish/v1/Systems/policy-2")
	rec := &kubeapi.Recorder{}
	startChain(t, srv, "policy", func(c *Config) {
		inv.namespaces(c)
		c.Requeue = 300 * time.Millisecond
		var err error
		c.BMCAddresses, err = hosts.ParseAddressPolicy("10.0.0.0/8", "")
		require.NoError(t, err)
	}, rec, inv.client)
	createPR(t, srv, provisioningRequest("policy-1", "policy", tmplOK, onePR("policy-1", "policy")))
	eventually(t, 60*time.Second, func() bool {
		return len(inv.quarantinedWith([]int32{plain, outside}, netbox.ReasonBMCAddressNotAllowed)) == 2
	}, "both hosts outside the policy quarantined")
	good := inv.addHostAt(t, srv, "policy-3", bmcAddr("policy-3"))
	done := waitState(t, srv, "policy-1", v1alpha1.StateFulfilled, 60*time.Second)
	assert.Equal(t, []string{resourceID(good)}, resourceIDs(done))
	for _, id := range []int32{plain, outside} {
		for _, body := range append(rec.Bodies("POST", "/secrets"), rec.Bodies("POST", "/baremetalhosts")...) {
			assert.NotContains(t, body, fmt.Sprintf("%q:%q", hosts.AnnotationNetBoxDevice, fmt.Sprint(id)), "nothing created for %s", netbox.Identity(id))
		}
		d, _ := inv.sim.Device(id)
		assert.NotContains(t, d.Changelog[len(d.Changelog)-1], "192.168", "the address is not quoted")
	}
}

// Five hosts without a credentials Secret (one wrong label or namespace for a rack): certain for one
// host, a shared cause for five. Found before the claim, they count toward the burst like BMC faults,
// and the count is NetBox's: a restarted operator (a crash loop in a bad rack) quarantines no more.
func TestHostsWithoutCredentialsQuarantineNoMoreThanTheBurstAcrossRestarts(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	inv := newInventory(t, srv, "credsburst")
	var ids []int32
	for i := 0; i < 5; i++ {
		ids = append(ids, inv.addHost(t, srv, fmt.Sprintf("credsburst-%d", i), 64, ""))
	}
	cfg := func(c *Config) { inv.namespaces(c); c.Requeue = 300 * time.Millisecond }
	c := startChain(t, srv, "credsburst", cfg, nil, inv.client)
	createPR(t, srv, provisioningRequest("credsburst-1", "credsburst", tmplOK, onePR("credsburst-1", "credsburst")))
	var said []string
	eventually(t, 60*time.Second, func() bool { said = c.said("credsburst-1"); return anyContains(said, v1alpha1.QuarantinesHeld) },
		"the request never said the quarantines are held: %v", &said)
	assert.Len(t, inv.quarantinedWith(ids, netbox.ReasonCredentialsMissing), 3, "BMC_FAULT_BURST")

	c.stop(t)
	c2 := startChain(t, srv, "credsburst", cfg, nil, inv.client)
	// Passes of the new process judged the candidate again: its credentials were looked up (listed).
	eventually(t, 60*time.Second, func() bool { return c2.rec.Count("GET", "/namespaces/"+inv.creds+"/secrets") >= 3 },
		"the restarted operator never looked at the candidate again")
	assert.Len(t, inv.quarantinedWith(ids, netbox.ReasonCredentialsMissing), 3, "a restart quarantined more")
	u, ok := getPR(t, srv, "credsburst-1")
	require.True(t, ok)
	assert.Contains(t, v1alpha1.StatusOf(u).Message, v1alpha1.QuarantinesHeld)
}
