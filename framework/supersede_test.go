package framework

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// startLimited runs an operator whose every resource has a client-side limit of qps with a burst of two,
// and answers the recorder of what it sent.
func startLimited(t *testing.T, label string, qps float32, setup func(w *Watch)) *kubeapi.Recorder {
	t.Helper()
	rec := &kubeapi.Recorder{}
	cfg := kubeapi.Shared(t).AdminConfig()
	cfg.WrapTransport = rec.Wrap
	clients, err := NewClients(cfg, ClientOptions{QPS: qps, Burst: 2, Timeout: 30 * time.Second})
	require.NoError(t, err)
	op, err := New(clients, Options{Prefix: testPrefix, Name: "test-" + label, Logger: zaptest.NewLogger(t),
		Liveness: "http://127.0.0.1:0/healthz", BackoffBase: 50 * time.Millisecond})
	require.NoError(t, err)
	setup(op.Watch(widgetGVR, WatchOptions{LabelSelector: "test=" + label, Finalizer: testFinalizer}))
	to := &testOperator{op: op, rec: rec}
	to.start(t)
	return rec
}

// statusWrites are the status PATCHes the operator sent for a widget, their bodies.
func statusWrites(rec *kubeapi.Recorder, name string) []string {
	return rec.Bodies("PATCH", "/widgets/"+name+"/status")
}

// A status write waiting for the limiter is superseded by the newer one: the world changes three times
// while the first write after the create waits for its token, and exactly one status write follows the
// create's, with the latest state and the time that state was seen; every pass's event is still posted,
// each once.
func TestHeldWriteIsSupersededByTheLatestState(t *testing.T) {
	t.Parallel()
	label := "supersede"
	name := fmt.Sprintf("sup%d", time.Now().UnixNano()) // its own object on each run of the test (-count)
	var c calls
	// One token a second, burst two: the create's status write and its diff-base take both (the
	// finalizer needs none: no delete handler); each later pass's two writes wait two seconds, while the
	// spec changes three times.
	rec := startLimited(t, label, 1, func(w *Watch) {
		observe := func(_ context.Context, cause *Cause) error {
			c.add(cause)
			v := fmt.Sprint(cause.Object.Object["spec"].(map[string]any)["value"])
			cause.Patch.SetStatus(v, "phase")
			cause.Patch.SetStatus(cause.Now.UTC().Format(time.RFC3339Nano), "message") // the time of the state
			cause.Event(corev1.EventTypeNormal, "Seen", "value "+v)
			return nil
		}
		w.OnCreate("observe", observe, OwnProgressEvents())
		w.OnUpdate("observe", observe, Field("spec"), OwnProgressEvents())
	})
	create(t, widget(label, name, map[string]any{"value": "v0"}))
	eventually(t, 30*time.Second, func() bool {
		u, ok := get(t, name)
		return ok && statusField(u, "phase") == "v0" && len(u.GetAnnotations()) > 0
	}, "the create was never handled")
	require.Len(t, statusWrites(rec, name), 1)

	dyn := kubeapi.Shared(t).AdminDynamic().Resource(widgetGVR)
	var lastChange time.Time
	for _, v := range []string{"v1", "v2", "v3"} {
		lastChange = time.Now()
		body := fmt.Sprintf(`{"spec":{"value":%q}}`, v)
		_, err := dyn.Patch(context.Background(), name, types.MergePatchType, []byte(body), metav1.PatchOptions{})
		require.NoError(t, err)
		// Long enough for the pass of each change to run (the cache sees it), short of a token.
		time.Sleep(150 * time.Millisecond)
	}
	eventually(t, 30*time.Second, func() bool {
		u, ok := get(t, name)
		return ok && statusField(u, "phase") == "v3"
	}, "the latest state was never written")
	time.Sleep(2500 * time.Millisecond) // anything still held or waiting would have come due
	writes := statusWrites(rec, name)
	require.Len(t, writes, 2, "one status write after the create's: %v", writes)
	require.Contains(t, writes[1], `"phase":"v3"`)
	at, err := time.Parse(time.RFC3339Nano, statusField(mustGet(t, name), "message"))
	require.NoError(t, err)
	require.False(t, at.Before(lastChange.Add(-time.Second)), "the time written is the latest state's (%s), not an earlier one's", at)
	require.GreaterOrEqual(t, len(c.of("observe", name)), 2, "an update pass ran on the changes")

	// Each pass's event is posted once, the superseded ones' too: no event lost, none doubled.
	eventually(t, 30*time.Second, func() bool {
		return len(seenEvents(t, name)) >= len(c.of("observe", name))
	}, "events missing")
	got := seenEvents(t, name)
	require.Equal(t, len(c.of("observe", name)), len(got), "one event per pass: %v", got)
	require.Contains(t, got, "value v3")
}

// seenEvents are the messages of the Seen events about a widget, a repeat counted as often as it was.
func seenEvents(t *testing.T, name string) []string {
	var out []string
	for _, e := range events(t, "default", name) {
		if e.Reason != "Seen" {
			continue
		}
		for range max(e.Count, 1) {
			out = append(out, strings.TrimSpace(e.Message))
		}
	}
	return out
}

// Composing two patches leaves the object as sending them one after the other would: a later value wins,
// a later nil still deletes, keys only the earlier one sets stay.
func TestComposedPatchActsAsBothInTurn(t *testing.T) {
	t.Parallel()
	first, second := newPatch(), newPatch()
	first.SetStatus("rendering", "phase")
	first.SetStatus(map[string]any{"a": "1", "b": "2"}, "extensions")
	first.SetAnnotation("progress", "1")
	first.SetAnnotation("gone", "x")
	second.SetStatus("fulfilled", "phase")
	second.SetStatus("3", "extensions", "a")
	second.SetStatus(nil, "message")
	second.DeleteAnnotation("gone")
	second.SetAnnotation("base", "b")
	both := first.then(second)

	obj := widget("x", "x", nil)
	obj.Object["status"] = map[string]any{"message": "old", "counter": int64(1)}
	want := mergeInto(mergeInto(obj.DeepCopy().Object["status"], first.Status), second.Status)
	require.Equal(t, want, mergeInto(obj.DeepCopy().Object["status"], both.Status))
	require.Equal(t, map[string]any{"phase": "fulfilled", "extensions": map[string]any{"a": "3", "b": "2"}, "counter": int64(1)}, want)
	require.Equal(t, "1", *both.Annotations["progress"])
	require.Equal(t, "b", *both.Annotations["base"])
	require.Nil(t, both.Annotations["gone"])
	require.Contains(t, both.Annotations, "gone", "the deletion is still sent")

	// The object a pass sees while the write is held is the object as the write will leave it.
	held := onHeld(obj, both)
	require.Equal(t, "fulfilled", statusField(held, "phase"))
	require.Equal(t, map[string]string{"progress": "1", "base": "b"}, held.GetAnnotations())
}
