package alarms

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/inventory"
)

// fakeFacts are Facts a test sets.
type fakeFacts struct {
	reqs     []*unstructured.Unstructured
	reqErr   error
	snap     *inventory.Snapshot
	netbox   string
	managers []*inventory.Entry
}

func (f *fakeFacts) Requests() ([]*unstructured.Unstructured, error) { return f.reqs, f.reqErr }
func (f *fakeFacts) Inventory() (*inventory.Snapshot, bool)          { return f.snap, f.snap != nil }
func (f *fakeFacts) DeploymentManagers() ([]*inventory.Entry, error) { return f.managers, nil }
func (f *fakeFacts) NetBoxProblem() string                           { return f.netbox }

func failedRequest(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"status": map[string]any{"provisioningStatus": map[string]any{"provisioningState": "failed", "provisioningMessage": "failed"}},
	}}
	u.SetName(name)
	u.SetUID(types.UID("uid-" + name))
	u.SetCreationTimestamp(metav1.Now())
	return u
}

func newTestRaiser(t *testing.T, facts Facts, now *time.Time) (*Raiser, *Store) {
	t.Helper()
	cfg, err := inventory.ConfigFromEnv(func(string) string { return "" }, "http://netbox.example")
	require.NoError(t, err)
	clock := func() time.Time { return *now }
	store := NewStore(versioned(), "o2ims").WithClock(clock)
	t.Cleanup(store.Close)
	return NewRaiser(Config{Inventory: cfg, CreationTimeout: time.Hour, Now: clock}, facts, store, nil, nil), store
}

// versioned is a fake clientset that numbers the ConfigMaps' resourceVersions as the API server does
// (the fake leaves them empty): the store's cache tells a newer copy from an older one by them.
func versioned() *fake.Clientset {
	kube := fake.NewSimpleClientset()
	var n atomic.Uint64
	kube.PrependReactor("*", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if w, ok := a.(interface{ GetObject() runtime.Object }); ok {
			if cm, ok := w.GetObject().(*corev1.ConfigMap); ok {
				cm.ResourceVersion = strconv.FormatUint(n.Add(1), 10)
			}
		}
		return false, nil, nil // the tracker stores it
	})
	return kube
}

// Facts that cannot be read (the cache not synced) leave their alarms as they are: an unsynced cache
// must not clear every request alarm.
func TestUnreadableFactsLeaveTheirAlarmsAlone(t *testing.T) {
	now := time.Now()
	facts := &fakeFacts{reqs: []*unstructured.Unstructured{failedRequest("a")}, netbox: "NetBox unreachable since …"}
	r, store := newTestRaiser(t, facts, &now)
	ctx := context.Background()
	require.NoError(t, r.Evaluate(ctx))
	s, err := store.Load(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, s.Active())

	facts.reqs, facts.reqErr, facts.netbox = nil, errors.New("not synced"), ""
	require.NoError(t, r.Evaluate(ctx))
	s, err = store.Load(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, s.Active(), "NetBox is known to be back; the request alarm is unknown, so kept")
	for _, a := range s.Alarms {
		require.Equal(t, a.Definition() == RequestFailed, a.Active(), a.Definition().Name)
	}
}

// The store is bounded: no new alarm beyond MaxAlarms active ones, and the oldest cleared ones go
// first when the cap is reached.
func TestTheStoreIsBoundedByMaxAlarms(t *testing.T) {
	now := time.Now()
	facts := &fakeFacts{}
	for i := 0; i < MaxAlarms+5; i++ {
		facts.reqs = append(facts.reqs, failedRequest(fmt.Sprint("r", i)))
	}
	r, store := newTestRaiser(t, facts, &now)
	ctx := context.Background()
	require.NoError(t, r.Evaluate(ctx))
	s, err := store.Load(ctx)
	require.NoError(t, err)
	require.Len(t, s.Alarms, MaxAlarms)
	require.Equal(t, MaxAlarms, s.Active())

	// All cleared, then new faults: the oldest cleared make room.
	facts.reqs = nil
	now = now.Add(time.Minute)
	require.NoError(t, r.Evaluate(ctx))
	for i := 0; i < 10; i++ {
		facts.reqs = append(facts.reqs, failedRequest(fmt.Sprint("new", i)))
	}
	now = now.Add(time.Minute)
	require.NoError(t, r.Evaluate(ctx))
	s, err = store.Load(ctx)
	require.NoError(t, err)
	require.Len(t, s.Alarms, MaxAlarms)
	require.Equal(t, 10, s.Active())
}

// Only the leader raises: Run evaluates nothing while leading() is false, and starts once it is true.
func TestRunRaisesOnlyWhileLeading(t *testing.T) {
	now := time.Now()
	facts := &fakeFacts{reqs: []*unstructured.Unstructured{failedRequest("a")}}
	r, store := newTestRaiser(t, facts, &now)
	r.cfg.Interval = 10 * time.Millisecond
	var leading atomic.Bool
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, leading.Load) }()
	time.Sleep(100 * time.Millisecond)
	s, err := store.Load(ctx)
	require.NoError(t, err)
	require.Empty(t, s.Alarms, "a follower writes nothing")
	leading.Store(true)
	require.Eventually(t, func() bool {
		s, err := store.Load(ctx)
		return err == nil && s.Active() == 1
	}, 5*time.Second, 10*time.Millisecond)
	cancel()
	require.NoError(t, <-done)
	require.True(t, r.NeedLeaderElection())
}

// A request whose message says its BMC-fault quarantines are held (the hosts step's phrase) raises one
// BMCFaultBurst on the O-Cloud with the reason; it clears when no request says so any more.
func TestHeldQuarantinesRaiseBMCFaultBurstUntilNoRequestSaysIt(t *testing.T) {
	now := time.Now()
	held := failedRequest("held")
	msg := "Hosts are being prepared: 1 of 1 hosts claimed; " + v1alpha1.QuarantinesHeld + ": 4 hosts failed their BMC within 1h0m0s (BMC_FAULT_BURST 3): a shared cause; waiting"
	require.NoError(t, unstructured.SetNestedField(held.Object, map[string]any{"provisioningState": "progressing", "provisioningMessage": msg},
		"status", "provisioningStatus"))
	facts := &fakeFacts{reqs: []*unstructured.Unstructured{held}}
	r, store := newTestRaiser(t, facts, &now)
	ctx := context.Background()
	require.NoError(t, r.Evaluate(ctx))
	s, err := store.Load(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, s.ActiveOf(BMCFaultBurst))
	for _, a := range s.Alarms {
		if a.Definition() == BMCFaultBurst {
			require.Equal(t, []any{"held"}, a.Extensions[ExtWaiting])
			require.True(t, strings.HasPrefix(a.Extensions[ExtReason].(string), v1alpha1.QuarantinesHeld+": 4 hosts"), a.Extensions[ExtReason])
		}
	}
	facts.reqs = nil
	now = now.Add(time.Minute)
	require.NoError(t, r.Evaluate(ctx))
	s, err = store.Load(ctx)
	require.NoError(t, err)
	require.Equal(t, 0, s.ActiveOf(BMCFaultBurst), "cleared")
}
