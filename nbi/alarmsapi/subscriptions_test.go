package alarmsapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/o2ims-operator/o2ims-operator/alarms"
	"github.com/o2ims-operator/o2ims-operator/nbi/callback"
	"github.com/o2ims-operator/o2ims-operator/subscriptions"
	"github.com/o2ims-operator/o2ims-operator/subscriptions/smo"
	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
)

const subsPath = v1 + "/alarmSubscriptions"

// subscribe creates an alarm subscription and answers its id.
func (e *env) subscribe(callback, filter string) string {
	e.T.Helper()
	body := map[string]any{"callback": callback}
	if filter != "" {
		body["filter"] = filter
	}
	b, _ := json.Marshal(body)
	x := e.send(http.MethodPost, subsPath, b, "application/json")
	require.Equal(e.T, http.StatusCreated, x.Code(), string(x.Body))
	id := x.Object(e.T)["alarmSubscriptionId"].(string)
	require.Equal(e.T, subsPath+"/"+id, x.Resp.Header.Get("Location"))
	return id
}

// notifier runs an alarm notifier (the leader's) over the env's store and subscriptions, fast.
func (e *env) notifier(ctx context.Context) *subscriptions.PolledNotifier {
	e.T.Helper()
	n, err := subscriptions.NewPolledNotifier(subscriptions.NotifierConfig{
		Timeout: 300 * time.Millisecond, BackoffBase: 20 * time.Millisecond, BackoffCap: 200 * time.Millisecond,
		SubscriptionPoll: 50 * time.Millisecond, PersistEvery: 50 * time.Millisecond, Policy: e.policy,
	}, subscriptions.Polled{
		API: "alarm", What: "Alarm event", Kind: alarms.KindAlarm, Read: e.store.Snapshot, Order: alarms.Order,
		Every: 50 * time.Millisecond, Render: alarms.Renderer{GlobalCloudID: e.cfg.GlobalCloudID.String(), Root: "https://o2ims.example.com" + v1},
	}, e.subs, zap.NewNop(), nil)
	require.NoError(e.T, err)
	require.True(e.T, n.NeedLeaderElection(), "a runnable of the leader: only the leader delivers")
	go func() { _ = n.Start(ctx) }()
	return n
}

// alarmEvents answers "<event> <alarmName>" of each notification r accepted, in order, each checked
// against the reference's AlarmEventNotification and against the alarm it names.
func alarmEvents(t *testing.T, r *smo.Receiver) []string {
	t.Helper()
	var out []string
	for _, n := range r.Notifications() {
		b, err := json.Marshal(n.Body)
		require.NoError(t, err)
		nbitest.CheckAlarmNotification(t, b)
		id := n.Body["alarmEventRecordId"].(string)
		require.Equal(t, "https://o2ims.example.com"+v1+"/alarms/"+id, n.Body["objectRef"])
		ext := n.Body["extensions"].(map[string]any)
		out = append(out, fmt.Sprintf("%v %s", n.Body["notificationEventType"], ext["alarmName"]))
	}
	return out
}

func waitAlarmEvents(t *testing.T, r *smo.Receiver, n int) []string {
	t.Helper()
	// The message is built after the wait: require.Eventually's arguments are evaluated before it starts.
	if !assert.Eventually(t, func() bool { return len(r.Notifications()) >= n }, 20*time.Second, 10*time.Millisecond) {
		require.FailNow(t, fmt.Sprintf("want %d notifications, got %v", n, alarmEvents(t, r)))
	}
	time.Sleep(300 * time.Millisecond) // nothing more (no duplicate) follows
	return alarmEvents(t, r)
}

// waitPersisted waits until every alarm subscription's ConfigMap holds progress.
func (e *env) waitPersisted(ctx context.Context) {
	e.T.Helper()
	require.Eventually(e.T, func() bool {
		cms, err := e.kube.CoreV1().ConfigMaps(e.namespace).List(ctx, metav1.ListOptions{LabelSelector: alarms.SubscriptionLabel + "=true"})
		if err != nil || len(cms.Items) == 0 {
			return false
		}
		for _, cm := range cms.Items {
			if len(cm.BinaryData["progress.json.gz"]) == 0 {
				return false
			}
		}
		return true
	}, 10*time.Second, 10*time.Millisecond)
}

// CRUD per the reference: created with its Location, read, listed (with a filter), deleted; a filter
// that is not one of the reference's values, an id sent, an unknown field are 400s; beyond
// ALARMS_MAX_SUBSCRIPTIONS a 409 that names it. Every exchange is checked against the reference.
func TestAlarmSubscriptionsCRUDValidatedAndBounded(t *testing.T) {
	e := newEnv(t)
	r := smo.New()
	defer r.Close()
	for _, c := range []struct{ body, want string }{
		{`{"callback":"ftp://smo.example.com/x"}`, "absolute http:// or https://"},
		{`{"callback":"` + r.URL() + `","filter":"(eq,perceivedSeverity,0)"}`, "NEW, CHANGE, CLEAR, ACKNOWLEDGE"},
		{`{"callback":"` + r.URL() + `","filter":"new"}`, "NEW, CHANGE, CLEAR, ACKNOWLEDGE"},
		{`{"callback":"` + r.URL() + `","alarmSubscriptionId":"65221564-8b05-416a-bfc3-c250bc64e1aa"}`, "readOnly"},
		{`{"callback":"` + r.URL() + `","subscriptionId":"65221564-8b05-416a-bfc3-c250bc64e1aa"}`, "unknown field"},
		{`{"callback":"` + r.URL() + `","consumerSubscriptionId":"x"}`, "not a UUID"},
		{`{"callback":"http://169.254.169.254/latest"}`, "callback"},
	} {
		x := e.send(http.MethodPost, subsPath, []byte(c.body), "application/json")
		require.Equal(t, http.StatusBadRequest, x.Code(), c.body)
		require.Contains(t, x.Problem(t).Detail, c.want, c.body)
	}
	a := e.subscribe(r.URL(), "CHANGE")
	b := e.subscribe(r.URL(), "")
	got := e.get(subsPath + "/" + a).Object(t)
	require.Equal(t, map[string]any{"alarmSubscriptionId": a, "callback": r.URL(), "filter": "CHANGE"}, got)
	require.Len(t, e.get(subsPath).Items(t), 2)
	only := e.get(subsPath + "?filter=(eq,filter,CHANGE)").Items(t)
	require.Len(t, only, 1)
	require.Equal(t, a, only[0]["alarmSubscriptionId"])

	e.subs.WithMax(2)
	x := e.send(http.MethodPost, subsPath, []byte(`{"callback":"`+r.URL()+`"}`), "application/json")
	require.Equal(t, http.StatusConflict, x.Code())
	require.Contains(t, x.Problem(t).Detail, "ALARMS_MAX_SUBSCRIPTIONS")

	require.Equal(t, http.StatusOK, e.send(http.MethodDelete, subsPath+"/"+b, nil, "").Code())
	require.Equal(t, http.StatusNotFound, e.get(subsPath+"/"+b).Code())
	require.Equal(t, http.StatusNotFound, e.send(http.MethodDelete, subsPath+"/"+b, nil, "").Code())
	require.Equal(t, http.StatusNotFound, e.get(subsPath+"/not-a-uuid").Code())
	require.Len(t, e.get(subsPath).Items(t), 1)
	// The inventory's subscriptions are another kind in the same namespace: none of them is listed here.
	inv := subscriptions.NewSubscriptionStore(e.kube, e.namespace).WithPolicy(e.policy)
	t.Cleanup(inv.Close)
	_, err := inv.Create(context.Background(), subscriptions.Subscription{Callback: r.URL()})
	require.NoError(t, err)
	require.Len(t, e.get(subsPath).Items(t), 1)
	invs, err := inv.List(context.Background())
	require.NoError(t, err)
	require.Len(t, invs, 1, "nor is an alarm subscription an inventory one")
}

// Raise → notify → acknowledge → clear, for an automatic alarm (NetBox unreachable, cleared when it
// answers) and a manual one (a failed request, cleared by the SMO's PATCH): each subscriber is told in
// order; one whose filter is ACKNOWLEDGE is not told of acknowledgements.
func TestAlarmNotificationsOfRaiseAcknowledgeAndClear(t *testing.T) {
	e := newEnv(t)
	all, noAck := smo.New(), smo.New()
	defer all.Close()
	defer noAck.Close()
	e.subscribe(all.URL(), "")
	e.subscribe(noAck.URL(), "ACKNOWLEDGE")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.notifier(ctx)

	e.sim.SetOutage(http.StatusServiceUnavailable)
	require.Error(t, e.refresh())
	e.evaluate()
	id := e.only(alarms.NetBoxUnreachable)["alarmEventRecordId"].(string)
	require.Equal(t, []string{"0 NetBoxUnreachable"}, waitAlarmEvents(t, all, 1))
	first := all.Notifications()[0].Body
	require.Equal(t, id, first["alarmEventRecordId"])
	require.Equal(t, e.cfg.OCloudID.String(), first["resourceID"])
	require.Equal(t, e.cfg.GlobalCloudID.String(), first["globalCloudID"])
	require.EqualValues(t, alarms.SeverityCritical, first["perceivedSeverity"])

	e.acknowledge(id)
	require.Equal(t, []string{"0 NetBoxUnreachable", "3 NetBoxUnreachable"}, waitAlarmEvents(t, all, 2))
	require.Equal(t, true, all.Notifications()[1].Body["alarmAcknowledged"])
	require.Contains(t, all.Notifications()[1].Body, "alarmAcknowledgeTime")

	e.sim.SetOutage(0)
	require.NoError(t, e.refresh())
	e.evaluate()
	e.requireCleared(id)
	got := waitAlarmEvents(t, all, 3)
	require.Equal(t, "2 NetBoxUnreachable", got[2])
	cleared := all.Notifications()[2].Body
	require.EqualValues(t, alarms.SeverityCleared, cleared["perceivedSeverity"])
	require.Contains(t, cleared["extensions"], "alarmClearedTime")

	e.request("fails", "failed", "Provisioning request failed; reason: timed out")
	e.evaluate()
	rid := e.only(alarms.RequestFailed)["alarmEventRecordId"].(string)
	waitAlarmEvents(t, all, 4)
	e.acknowledge(rid)
	waitAlarmEvents(t, all, 5)
	x := e.patch(v1+"/alarms/"+rid, clear)
	require.Equal(t, http.StatusOK, x.Code(), string(x.Body))
	require.Equal(t, []string{"0 NetBoxUnreachable", "3 NetBoxUnreachable", "2 NetBoxUnreachable",
		"0 ProvisioningRequestFailed", "3 ProvisioningRequestFailed", "2 ProvisioningRequestFailed"}, waitAlarmEvents(t, all, 6))
	require.Equal(t, []string{"0 NetBoxUnreachable", "2 NetBoxUnreachable",
		"0 ProvisioningRequestFailed", "2 ProvisioningRequestFailed"}, waitAlarmEvents(t, noAck, 4), "ACKNOWLEDGE left out")
}

// The delivering component restarts between a raise and its delivery: the notification queued when it
// stopped (the callback refusing it), and an alarm raised while it was down, are both delivered after
// it starts again, in the order they were raised — the subscription's ConfigMap holds what it was told.
func TestAlarmRaisedBeforeARestartIsDeliveredAfterIt(t *testing.T) {
	e := newEnv(t)
	r := smo.New()
	defer r.Close()
	e.subscribe(r.URL(), "")
	ctx, stop := context.WithCancel(context.Background())
	e.notifier(ctx)
	e.waitPersisted(ctx)

	r.Fail(http.StatusServiceUnavailable)
	e.sim.SetOutage(http.StatusServiceUnavailable)
	require.Error(t, e.refresh())
	e.evaluate()
	require.Eventually(t, func() bool { return r.Attempts() > 1 }, 10*time.Second, 5*time.Millisecond, "the raise is being delivered")
	stop() // the operator goes (as a SIGKILL would: nothing more is written)
	time.Sleep(100 * time.Millisecond)
	attempts := r.Attempts()
	time.Sleep(200 * time.Millisecond)
	require.Equal(t, attempts, r.Attempts(), "stopped: no more attempts")

	// While it is down, a request fails.
	e.request("fails", "failed", "Provisioning request failed; reason: timed out")
	e.advance(time.Second)
	e.evaluate()
	r.Fail(0)

	// The restarted operator: a new store, raiser and API over the same ConfigMaps, and a new notifier.
	e.restart()
	ctx2, stop2 := context.WithCancel(context.Background())
	defer stop2()
	e.notifier(ctx2)
	require.Equal(t, []string{"0 NetBoxUnreachable", "0 ProvisioningRequestFailed"}, waitAlarmEvents(t, r, 2),
		"both delivered after the restart, none lost, in the order raised")
}

// Failover: a second replica's notifier, built all along, delivers nothing while the first leads; when
// the first loses the lease with an acknowledgement undelivered, the second takes over from the
// persisted progress and delivers it, then what follows, in order, nothing twice.
func TestAlarmNotificationsSurviveAFailover(t *testing.T) {
	e := newEnv(t)
	r := smo.New()
	defer r.Close()
	e.subscribe(r.URL(), "")
	ctxA, stopA := context.WithCancel(context.Background())
	e.notifier(ctxA) // replica A leads
	storeB := alarms.NewStore(e.kube, e.namespace)
	t.Cleanup(storeB.Close)
	subsB := subscriptions.NewSubscriptionStore(e.kube, e.namespace).WithKind(alarms.Subscriptions).WithPolicy(e.policy)
	t.Cleanup(subsB.Close)

	e.sim.SetOutage(http.StatusServiceUnavailable)
	require.Error(t, e.refresh())
	e.evaluate()
	id := e.only(alarms.NetBoxUnreachable)["alarmEventRecordId"].(string)
	require.Equal(t, []string{"0 NetBoxUnreachable"}, waitAlarmEvents(t, r, 1))
	e.waitPersisted(ctxA)
	time.Sleep(200 * time.Millisecond)

	r.Fail(http.StatusServiceUnavailable)
	e.acknowledge(id)
	require.Eventually(t, func() bool { return r.Attempts() > 2 }, 10*time.Second, 5*time.Millisecond)
	stopA() // A loses the lease
	r.Fail(0)

	// B takes over: its own store and subscription store on the same ConfigMaps.
	ctxB, stopB := context.WithCancel(context.Background())
	defer stopB()
	nB, err := subscriptions.NewPolledNotifier(subscriptions.NotifierConfig{
		BackoffBase: 20 * time.Millisecond, BackoffCap: 200 * time.Millisecond,
		SubscriptionPoll: 50 * time.Millisecond, PersistEvery: 50 * time.Millisecond, Policy: e.policy,
	}, subscriptions.Polled{API: "alarm", What: "Alarm event", Kind: alarms.KindAlarm, Read: storeB.Snapshot, Order: alarms.Order,
		Every: 50 * time.Millisecond, Render: alarms.Renderer{GlobalCloudID: e.cfg.GlobalCloudID.String(), Root: "https://o2ims.example.com" + v1}},
		subsB, zap.NewNop(), nil)
	require.NoError(t, err)
	go func() { _ = nB.Start(ctxB) }()
	require.Equal(t, []string{"0 NetBoxUnreachable", "3 NetBoxUnreachable"}, waitAlarmEvents(t, r, 2))

	e.sim.SetOutage(0)
	require.NoError(t, e.refresh())
	e.evaluate()
	got := waitAlarmEvents(t, r, 3)
	require.Equal(t, []string{"0 NetBoxUnreachable", "3 NetBoxUnreachable", "2 NetBoxUnreachable"}, got)
	require.False(t, strings.Contains(strings.Join(got, ","), "1 "), "no CHANGE")
}

// Every fault the operator raises, and an Alertmanager alert: raise → notify → acknowledge → notify →
// clear → notify, each notification in order and checked against the reference.
func TestEveryFaultIsNotifiedRaisedAcknowledgedAndCleared(t *testing.T) {
	// What Debian's real Alertmanager posted for a firing O2IMSNetBoxErrors and its resolution, as it is.
	alert := func(e *env, status string) {
		x := e.send(http.MethodPost, AlertmanagerPath, nbitest.AlertmanagerCapture(e.T, status), "application/json")
		require.Equal(e.T, http.StatusNoContent, x.Code(), string(x.Body))
	}
	for _, c := range []struct {
		def          *alarms.Definition
		raise, clear func(e *env)
	}{
		{alarms.HostQuarantined,
			func(e *env) {
				require.NoError(e.T, e.sim.SetStatus(1, "failed"))
				require.NoError(e.T, e.refresh())
				e.evaluate()
			},
			func(e *env) {
				require.NoError(e.T, e.sim.SetStatus(1, "staged"))
				require.NoError(e.T, e.refresh())
				e.evaluate()
			}},
		{alarms.PoolExhausted,
			func(e *env) {
				for id := int32(1); id <= 2; id++ {
					require.NoError(e.T, e.sim.SetStatus(id, "active"))
					require.NoError(e.T, e.sim.SetCustom(id, "o2ims_request_uid", "someone-else"))
				}
				require.NoError(e.T, e.refresh())
				e.request("waits", "progressing", "0 of 1 hosts claimed; waiting for free hosts: 1 more for role worker")
				e.evaluate()
			},
			func(e *env) { e.request("waits", "fulfilled", "provisioned"); e.evaluate() }},
		{alarms.NetBoxUnreachable,
			func(e *env) {
				e.sim.SetOutage(http.StatusServiceUnavailable)
				require.Error(e.T, e.refresh())
				e.evaluate()
			},
			func(e *env) { e.sim.SetOutage(0); require.NoError(e.T, e.refresh()); e.evaluate() }},
		{alarms.RequestFailed,
			func(e *env) {
				e.request("fails", "failed", "Provisioning request failed; reason: timed out")
				e.evaluate()
			},
			func(e *env) {
				id := e.only(alarms.RequestFailed)["alarmEventRecordId"].(string)
				require.Equal(e.T, http.StatusOK, e.patch(v1+"/alarms/"+id, clear).Code(), "cleared by hand")
			}},
		{alarms.RequestStuck,
			func(e *env) {
				e.request("slow", "progressing", "waiting for the Cluster resource")
				e.advance(testTimeout/2 + time.Minute)
				e.evaluate()
			},
			func(e *env) { e.request("slow", "fulfilled", "provisioned"); e.evaluate() }},
		{alarms.AlertFiring, func(e *env) { alert(e, "firing") }, func(e *env) { alert(e, "resolved") }},
	} {
		t.Run(c.def.Name, func(t *testing.T) {
			e := newEnv(t)
			r := smo.New()
			defer r.Close()
			e.subscribe(r.URL(), "")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			e.notifier(ctx)
			c.raise(e)
			id := e.only(c.def)["alarmEventRecordId"].(string)
			// of waits for n notifications of this alarm (others may come between) and answers their events.
			mine := func() []string {
				var out []string
				for _, n := range r.Notifications() {
					if n.Body["alarmEventRecordId"] == id {
						out = append(out, fmt.Sprint(n.Body["notificationEventType"]))
					}
				}
				return out
			}
			of := func(n int) []string {
				require.Eventually(t, func() bool { return len(mine()) >= n }, 20*time.Second, 10*time.Millisecond, "got %v", mine())
				time.Sleep(200 * time.Millisecond) // nothing more (no duplicate) follows
				alarmEvents(t, r)                  // each checked against the reference
				return mine()
			}
			require.Equal(t, []string{"0"}, of(1))
			e.acknowledge(id)
			require.Equal(t, []string{"0", "3"}, of(2))
			c.clear(e)
			e.requireCleared(id)
			require.Equal(t, []string{"0", "3", "2"}, of(3))
		})
	}
}

// The store's refusals of a creation, pinned whole: a callback the policy refuses is a 400, a resolver
// that did not answer a 503 with Retry-After, one beyond ALARMS_MAX_SUBSCRIPTIONS a 409 — each detail
// the refusal's own words.
func TestAlarmSubscriptionCreationRefusalsAnswerAsTheyAlwaysDid(t *testing.T) {
	e := newEnv(t)
	p, err := callback.New(callback.Config{SkipTest: true}) // the names resolve where nobody listens
	require.NoError(t, err)
	e.subs.WithPolicy(p.WithLookup(refusalsLookup))
	post := func(cb string) *nbitest.Exchange {
		return e.send(http.MethodPost, subsPath, []byte(`{"callback":"`+cb+`"}`), "application/json")
	}
	nbitest.RequireCommonProblem(t, post("http://metadata.example/latest"), http.StatusBadRequest,
		`callback host "metadata.example" resolves to 169.254.169.254, a link-local address (such as the cloud metadata service): callbacks may not reach inside the O-Cloud`, "")
	nbitest.RequireCommonProblem(t, post("http://smo.slow.example/"), http.StatusServiceUnavailable,
		`callback host "smo.slow.example" could not be resolved right now: lookup smo.slow.example: i/o timeout; retry later`, "5")
	e.subs.WithMax(1)
	require.Equal(t, http.StatusCreated, post("http://smo.example/").Code())
	nbitest.RequireCommonProblem(t, post("http://smo.example/"), http.StatusConflict,
		"there are already 1 subscriptions, the most this O-Cloud keeps (ALARMS_MAX_SUBSCRIPTIONS); delete one first", "")
}

// refusalsLookup resolves without DNS: smo.example outside, metadata.example to the metadata address,
// smo.slow.example not at all (the resolver timed out).
func refusalsLookup(_ context.Context, host string) ([]netip.Addr, error) {
	switch host {
	case "smo.example":
		return []netip.Addr{netip.MustParseAddr("198.51.100.7")}, nil
	case "metadata.example":
		return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
	case "smo.slow.example":
		return nil, &net.DNSError{Err: "i/o timeout", Name: host, IsTimeout: true}
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}
