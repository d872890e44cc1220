package inventoryapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/o2ims-operator/o2ims-operator/inventory"
	"github.com/o2ims-operator/o2ims-operator/nbi/callback"
	"github.com/o2ims-operator/o2ims-operator/netbox"
	"github.com/o2ims-operator/o2ims-operator/subscriptions"
	"github.com/o2ims-operator/o2ims-operator/subscriptions/smo"
	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
	"github.com/o2ims-operator/o2ims-operator/tests/promtest"
)

const subsPath = invV1 + "/subscriptions"

// subsEnv adds subscriptions (ConfigMaps in a namespace of the test's own, on the real API server).
type subsEnv struct {
	*invEnv
	kube      kubernetes.Interface
	namespace string
	subs      *subscriptions.SubscriptionStore
	policy    *callback.Policy
}

func newSubsEnv(t *testing.T) *subsEnv {
	t.Helper()
	se := &subsEnv{}
	se.invEnv = startInvEnv(t, seedSix, func(ie *invEnv) *subscriptions.SubscriptionStore {
		kube := kubernetes.NewForConfigOrDie(ie.Kapi.AdminConfig())
		ns := strings.TrimSuffix("inv-"+ie.Prefix, "-")
		_, err := kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
		// The SMO receivers listen on loopback, which the default policy refuses: the tests allow it as an
		// installation would with CALLBACK_ALLOW_CIDRS; names resolve through testLookup, never DNS.
		policy := testPolicy(t, callback.Config{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}, testLookup)
		se.kube, se.namespace, se.policy = kube, ns, policy
		se.subs = subscriptions.NewSubscriptionStore(kube, ns).WithBaseline(ie.view, nil).WithPolicy(policy)
		t.Cleanup(se.subs.Close)
		return se.subs
	})
	return se
}

func (se *subsEnv) subscribe(callback, filter string) string {
	se.T.Helper()
	body := map[string]any{"callback": callback, "consumerSubscriptionId": "8c1c151d-2899-4c96-b76f-4fe92064b57b"}
	if filter != "" {
		body["filter"] = filter
	}
	x := se.send(http.MethodPost, subsPath, nbitest.JSONBody(se.T, body))
	require.Equal(se.T, http.StatusCreated, x.Code(), string(x.Body))
	return x.Object(se.T)["subscriptionId"].(string)
}

func TestSubscriptionsAreStoredAsConfigMapsAndValidated(t *testing.T) {
	se := newSubsEnv(t)
	for _, c := range []struct{ body, says string }{
		{`{"callback":"ftp://smo.example.com/x"}`, "absolute http:// or https://"},
		{`{"callback":"/relative/path"}`, "absolute http:// or https://"},
		{`{"callback":"https://"}`, "no host"},
		{`{"callback":"https://u:p@smo.example.com/"}`, "credentials"},
		{`{}`, "callback is required"},
		{`{"callback":"https://smo.example.com/","consumerSubscriptionId":"x"}`, "not a UUID"},
		{`{"callback":"https://smo.example.com/","filter":"(eq,nothing,1)"}`, "filter"},
		{`{"callback":"https://smo.example.com/","subscriptionId":"65221564-8b05-416a-bfc3-c250bc64e1aa"}`, "readOnly"},
		{`{"callback":"https://smo.example.com/","extra":1}`, "unknown field"},
		{`[`, "not a Subscription"},
		{`{"callback":"https://smo.example.com/","callback":"https://elsewhere.example.com/"}`, `duplicate field "callback"`},
		{`{"Callback":"https://smo.example.com/"}`, `unknown field "Callback"`},
		{`{"callback":"https://smo.example.com/"} {}`, "after top-level value"},
	} {
		x := se.send(http.MethodPost, subsPath, []byte(c.body))
		require.Equal(t, http.StatusBadRequest, x.Code(), c.body)
		require.Contains(t, x.Object(t)["detail"], c.says, c.body)
	}
	x := se.send(http.MethodPost, subsPath, []byte(`{"callback":"https://smo.example.com/"}`), "Content-Type", "text/plain")
	require.Equal(t, http.StatusUnsupportedMediaType, x.Code())
	require.JSONEq(t, `[]`, string(se.get(subsPath).Body), "nothing stored by a refused create")

	a := se.subscribe("https://smo.example.com/smo/v1/observer", "(eq,objectType,resource)")
	b := se.subscribe("http://smo.example.com:8080/other", "")
	cms, err := se.kube.CoreV1().ConfigMaps(se.namespace).List(context.Background(), metav1.ListOptions{LabelSelector: subscriptions.SubscriptionLabel + "=true"})
	require.NoError(t, err)
	require.Len(t, cms.Items, 2)

	list := se.get(subsPath).Items(t)
	want := []string{a, b}
	slices.Sort(want)
	require.Equal(t, want, idsOf(list, "subscriptionId"))
	got := se.get(subsPath + "/" + a).Object(t)
	require.Equal(t, "https://smo.example.com/smo/v1/observer", got["callback"])
	require.Equal(t, "(eq,objectType,resource)", got["filter"])
	require.Equal(t, "8c1c151d-2899-4c96-b76f-4fe92064b57b", got["consumerSubscriptionId"])
	require.Len(t, se.get(subsPath+"?filter=(cont,callback,8080)").Items(t), 1)

	x = se.send(http.MethodDelete, subsPath+"/"+a, nil)
	require.Equal(t, http.StatusOK, x.Code())
	require.Equal(t, http.StatusNotFound, se.get(subsPath+"/"+a).Code())
	require.Equal(t, http.StatusNotFound, se.send(http.MethodDelete, subsPath+"/"+a, nil).Code())
	require.Equal(t, http.StatusNotFound, se.get(subsPath+"/not-a-uuid").Code())
	require.Len(t, se.get(subsPath).Items(t), 1)
}

// notifier runs a notifier over the env's view with fast retries.
func (se *subsEnv) notifier(ctx context.Context, view *inventory.View, reg prometheus.Registerer) *subscriptions.Notifier {
	se.T.Helper()
	n, err := subscriptions.NewNotifier(subscriptions.NotifierConfig{
		Timeout: 300 * time.Millisecond, BackoffBase: 20 * time.Millisecond, BackoffCap: 200 * time.Millisecond,
		SubscriptionPoll: 100 * time.Millisecond, ManagerPoll: 100 * time.Millisecond, PersistEvery: 50 * time.Millisecond,
		Policy: se.policy,
	}, view, se.subs, nil, nil, reg)
	require.NoError(se.T, err)
	go func() { _ = n.Start(ctx) }()
	return n
}

// events answers the (objectType, eventType, netboxId, status) of what a receiver accepted, checking
// each against the reference's InventoryChangeNotification.
func events(t *testing.T, r *smo.Receiver) []string {
	t.Helper()
	var out []string
	for _, n := range r.Notifications() {
		b, _ := json.Marshal(n.Body)
		nbitest.CheckNotification(t, b)
		if n.Body["objectType"] != "resource" {
			out = append(out, fmt.Sprintf("%v %v", n.Body["objectType"], n.Body["notificationEventType"]))
			continue
		}
		state := n.Body["postObjectState"]
		if state == nil {
			state = n.Body["priorObjectState"]
		}
		ext := state.(map[string]any)["extensions"].(map[string]any)
		out = append(out, fmt.Sprintf("resource %v %v %v", n.Body["notificationEventType"], ext["netboxId"], ext["status"]))
	}
	return out
}

func waitEvents(t *testing.T, r *smo.Receiver, n int) []string {
	t.Helper()
	require.Eventually(t, func() bool { return len(r.Notifications()) >= n }, 30*time.Second, 5*time.Millisecond,
		"wanted %d notifications, have %d", n, len(r.Notifications()))
	return events(t, r)
}

// Claim, release, quarantine and an administrator's change in NetBox each notify, in order, with prior
// and post state; a callback failing with 500 catches up in order while the others are delivered on
// time; one that never answers slows no one; a filter leaves out what it does not match.
func TestNotificationsForClaimReleaseQuarantineAndAdminChanges(t *testing.T) {
	se := newSubsEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	good, flaky, dead, pools := smo.New(), smo.New(), smo.New(), smo.New()
	for _, r := range []*smo.Receiver{good, flaky, dead, pools} {
		defer r.Close()
	}
	dead.Hang(true)
	flaky.Fail(http.StatusInternalServerError)
	se.subscribe(good.URL(), "")
	se.subscribe(flaky.URL(), "")
	se.subscribe(dead.URL(), "")
	se.subscribe(pools.URL(), "(eq,objectType,resourcePool)")
	reg := prometheus.NewRegistry()
	n := se.notifier(ctx, se.view, reg)
	_ = n
	time.Sleep(300 * time.Millisecond) // the notifier has read the subscriptions

	uid := "0b7a1f6e-0000-4000-8000-00000000aaaa"
	d, err := se.nb.Claims.GetDevice(ctx, 1)
	require.NoError(t, err)
	_, err = se.nb.Claims.Claim(ctx, d, uid)
	require.NoError(t, err)
	_, err = se.nb.Claims.Release(ctx, 1, uid)
	require.NoError(t, err)
	d, err = se.nb.Claims.GetDevice(ctx, 2)
	require.NoError(t, err)
	require.NoError(t, se.nb.Claims.Quarantine(ctx, d, netbox.ReasonCredentialsMissing, "no Secret"))
	require.NoError(t, se.sim.SetCustom(5, "o2ims_managed", false)) // the administrator takes host 5 out of the pool
	require.NoError(t, se.refresher.Refresh(ctx, false))

	want := []string{"resource 1 1 active", "resource 1 1 staged", "resource 1 2 failed", "resource 2 5 staged"}
	require.Equal(t, want, waitEvents(t, good, 4))
	first := good.Notifications()[0].Body
	require.Equal(t, "staged", first["priorObjectState"].(map[string]any)["extensions"].(map[string]any)["status"])
	require.Equal(t, "8c1c151d-2899-4c96-b76f-4fe92064b57b", first["consumerSubscriptionId"])
	require.Contains(t, first["objectRef"], "/o2ims-infrastructureInventory/v1/resourcePools/")
	require.Empty(t, pools.Notifications(), "the filter leaves resources out")
	require.Empty(t, dead.Notifications())
	// Its first attempt may be all it has made when good has its four: the retry follows the backoff.
	require.Eventually(t, func() bool { return flaky.Attempts() > 1 }, 20*time.Second, 10*time.Millisecond, "retried")

	// Host 6 leaves too: South and its device type lose their last device.
	require.NoError(t, se.sim.SetCustom(6, "o2ims_managed", false))
	require.NoError(t, se.refresher.Refresh(ctx, false))
	require.Equal(t, append(want, "resource 2 6 staged", "resourcePool 2", "resourceType 2"), waitEvents(t, good, 7))
	require.Equal(t, []string{"resourcePool 2"}, waitEvents(t, pools, 1))

	flaky.Fail(0)
	require.Equal(t, waitEvents(t, good, 7), waitEvents(t, flaky, 7), "caught up, in order")
	require.Empty(t, dead.Notifications())
	depth := promtest.Gather(t, reg).ByLabel("o2ims_inventory_notification_queue_depth", "subscription")
	var depths []float64
	for _, v := range depth {
		depths = append(depths, v)
	}
	slices.Sort(depths)
	require.Equal(t, []float64{0, 0, 0, 7}, depths, "the dead callback's queue holds everything, the others are empty")

	// Notification latency, change to callback (the healthy subscriber; reported, not asserted).
	lat := promtest.Gather(t, reg).Histogram("o2ims_inventory_notification_latency_seconds", nil)
	p50, _ := lat.Bound(0.5)
	p99, _ := lat.Bound(0.99)
	t.Logf("notification latency over %.0f deliveries: p50 ≤ %gs, p99 ≤ %gs", lat.Count, p50, p99)
}

// A change queued but not delivered when the operator stops, and one made in NetBox while it is down,
// are both notified after it starts again: the subscription's ConfigMap holds what it was last told.
func TestChangesWhileDownAreNotifiedAfterRestart(t *testing.T) {
	se := newSubsEnv(t)
	r := smo.New()
	defer r.Close()
	se.subscribe(r.URL(), "(eq,objectType,resource)")
	ctx, stop := context.WithCancel(context.Background())
	se.notifier(ctx, se.view, nil)
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, se.sim.SetStatus(3, "offline"))
	require.NoError(t, se.refresher.Refresh(ctx, false))
	require.Equal(t, []string{"resource 1 3 offline"}, waitEvents(t, r, 1))
	require.Eventually(t, func() bool {
		cms, err := se.kube.CoreV1().ConfigMaps(se.namespace).List(ctx, metav1.ListOptions{LabelSelector: subscriptions.SubscriptionLabel + "=true"})
		return err == nil && len(cms.Items) == 1 && len(cms.Items[0].BinaryData["progress.json.gz"]) > 0
	}, 10*time.Second, 10*time.Millisecond, "progress persisted in the subscription's ConfigMap once delivered")
	time.Sleep(200 * time.Millisecond)

	// Undeliverable now: the claim is queued when the operator stops.
	r.Fail(http.StatusServiceUnavailable)
	d, err := se.nb.Claims.GetDevice(ctx, 1)
	require.NoError(t, err)
	_, err = se.nb.Claims.Claim(ctx, d, "0b7a1f6e-0000-4000-8000-00000000bbbb")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return r.Attempts() > 1 }, 10*time.Second, 5*time.Millisecond)
	stop()
	// While down: an administrator fails host 4.
	require.NoError(t, se.sim.SetStatus(4, "failed"))
	r.Fail(0)

	// The restarted operator: a new view from NetBox, a new notifier over the same ConfigMaps.
	view := inventory.NewView(se.cfg, nil)
	ref, err := inventory.NewRefresher(view, se.nb.Search, nil, nil)
	require.NoError(t, err)
	require.NoError(t, ref.Refresh(context.Background(), true))
	ctx2, stop2 := context.WithCancel(context.Background())
	defer stop2()
	se.notifier(ctx2, view, nil)
	got := waitEvents(t, r, 3)
	require.Equal(t, "resource 1 3 offline", got[0])
	require.ElementsMatch(t, []string{"resource 1 1 active", "resource 1 4 failed"}, got[1:3], "both, none lost")
	prior := r.Notifications()[1].Body["priorObjectState"].(map[string]any)
	require.Equal(t, "staged", prior["extensions"].(map[string]any)["status"], "the prior state is what subscribers were last told")
}

// A change after the 201 but before any notifier has picked the subscription up (the leader polls for new
// ones, and may be restarting or on another replica) is still notified: the subscription is stored with
// what the creating replica's view held, and the notifier diffs from that.
func TestAChangeBeforeTheNotifierSeesANewSubscriptionIsNotLost(t *testing.T) {
	se := newSubsEnv(t)
	r := smo.New()
	defer r.Close()
	se.subscribe(r.URL(), "(eq,objectType,resource)")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	require.NoError(t, se.sim.SetStatus(3, "offline"))
	require.NoError(t, se.refresher.Refresh(ctx, false))
	se.notifier(ctx, se.view, nil) // only now
	require.Equal(t, []string{"resource 1 3 offline"}, waitEvents(t, r, 1))
	prior := r.Notifications()[0].Body["priorObjectState"].(map[string]any)
	require.Equal(t, "staged", prior["extensions"].(map[string]any)["status"], "the prior state is the one at creation")
}

// Only the leader delivers: a notifier whose replica does not lead sends nothing, and starts (with
// what changed meanwhile) once it does.
func TestOnlyTheLeaderDelivers(t *testing.T) {
	se := newSubsEnv(t)
	r := smo.New()
	defer r.Close()
	se.subscribe(r.URL(), "(eq,objectType,resource)")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n, err := subscriptions.NewNotifier(subscriptions.NotifierConfig{SubscriptionPoll: 50 * time.Millisecond, PersistEvery: 50 * time.Millisecond, Policy: se.policy},
		se.view, se.subs, nil, nil, nil)
	require.NoError(t, err)
	require.True(t, n.NeedLeaderElection(), "the notifier is a runnable of the leader: the framework starts it on leading")
	require.NoError(t, se.sim.SetStatus(3, "offline"))
	require.NoError(t, se.refresher.Refresh(ctx, false))
	time.Sleep(500 * time.Millisecond)
	require.Zero(t, r.Attempts(), "a replica that does not lead delivers nothing")
	go func() { _ = n.Start(ctx) }() // leading
	// Once it leads it starts from the progress stored at creation: the change made while nobody
	// delivered comes first, then what follows, in order.
	time.Sleep(400 * time.Millisecond)
	require.NoError(t, se.sim.SetStatus(3, "failed"))
	require.NoError(t, se.refresher.Refresh(ctx, false))
	require.Equal(t, []string{"resource 1 3 offline", "resource 1 3 failed"}, waitEvents(t, r, 2))
}

// Subscriptions are bounded (INVENTORY_MAX_SUBSCRIPTIONS): one more is a 409 nbi.ProblemDetails that says
// why; and a deleted subscription's metric series go with it, so the subscription label takes no more
// values than there are subscriptions.
func TestSubscriptionsAreBoundedAndTheirSeriesGoWithThem(t *testing.T) {
	se := newSubsEnv(t)
	se.subs.WithMax(2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := smo.New()
	defer r.Close()
	a := se.subscribe(r.URL(), "")
	b := se.subscribe(r.URL(), "")
	x := se.send(http.MethodPost, subsPath, []byte(`{"callback":"https://smo.example.com/"}`))
	require.Equal(t, http.StatusConflict, x.Code(), string(x.Body))
	require.Contains(t, x.Object(t)["detail"], "INVENTORY_MAX_SUBSCRIPTIONS")
	require.Len(t, se.get(subsPath).Items(t), 2, "nothing stored beyond the bound")

	reg := prometheus.NewRegistry()
	se.notifier(ctx, se.view, reg)
	time.Sleep(300 * time.Millisecond) // the notifier has read the subscriptions
	d, err := se.nb.Claims.GetDevice(ctx, 1)
	require.NoError(t, err)
	_, err = se.nb.Claims.Claim(ctx, d, "0b7a1f6e-0000-4000-8000-00000000bbbb")
	require.NoError(t, err)
	waitEvents(t, r, 2) // one each
	series := func() []string {
		var out []string
		for id := range promtest.Gather(t, reg).ByLabel("o2ims_inventory_notifications_delivered_total", "subscription") {
			out = append(out, id)
		}
		slices.Sort(out)
		return out
	}
	want := []string{a, b}
	slices.Sort(want)
	require.Equal(t, want, series())

	require.Equal(t, http.StatusOK, se.send(http.MethodDelete, subsPath+"/"+a, nil).Code())
	require.Eventually(t, func() bool { return slices.Equal(series(), []string{b}) }, 10*time.Second, 20*time.Millisecond,
		"the deleted subscription's series stayed: %v", series())
	require.NotContains(t, promtest.Gather(t, reg).ByLabel("o2ims_inventory_notification_queue_depth", "subscription"), a)
	se.subscribe(r.URL(), "") // room again
}

// The store's refusals of a creation, pinned whole: a callback the policy refuses is a 400, a resolver
// that did not answer a 503 with Retry-After, one beyond INVENTORY_MAX_SUBSCRIPTIONS a 409 — each detail
// the refusal's own words.
func TestSubscriptionCreationRefusalsAnswerAsTheyAlwaysDid(t *testing.T) {
	se := newSubsEnv(t)
	slow := func(ctx context.Context, host string) ([]netip.Addr, error) {
		if host == "smo.slow.example" {
			return nil, &net.DNSError{Err: "i/o timeout", Name: host, IsTimeout: true}
		}
		return testLookup(ctx, host)
	}
	se.subs.WithPolicy(testPolicy(t, callback.Config{}, slow))
	post := func(cb string) *nbitest.Exchange {
		return se.send(http.MethodPost, subsPath, []byte(`{"callback":"`+cb+`"}`))
	}
	nbitest.RequireCommonProblem(t, post("http://metadata.example.com/latest"), http.StatusBadRequest,
		`callback host "metadata.example.com" resolves to 169.254.169.254, a link-local address (such as the cloud metadata service): callbacks may not reach inside the O-Cloud`, "")
	nbitest.RequireCommonProblem(t, post("http://smo.slow.example/"), http.StatusServiceUnavailable,
		`callback host "smo.slow.example" could not be resolved right now: lookup smo.slow.example: i/o timeout; retry later`, "5")
	se.subs.WithMax(1)
	require.Equal(t, http.StatusCreated, post("https://smo.example.com/").Code())
	nbitest.RequireCommonProblem(t, post("https://smo.example.com/"), http.StatusConflict,
		"there are already 1 subscriptions, the most this O-Cloud keeps (INVENTORY_MAX_SUBSCRIPTIONS); delete one first", "")
}
