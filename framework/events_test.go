package framework

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// A burst far beyond client-go's 1000-event queue reaches the real API server whole: every object's
// events, each with its own message (two share a reason, so neither a series nor an aggregate may fold
// them), in "default" for cluster-scoped objects. client-go's broadcaster dropped everything beyond its
// queue here (1000 of 1500 at most could get through).
func TestABurstOfEventsReachesTheAPIServerWhole(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	clients, err := NewClients(srv.AdminConfig(), ClientOptions{QPS: 1000, Burst: 2000, Timeout: 30 * time.Second})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := newMetrics("burst", prometheus.NewRegistry())
	r := newEventRecorder(ctx, clients.Kubernetes, "burst-test", zaptest.NewLogger(t), m, nil)
	defer r.shutdown()

	const objects = 500
	for i := 0; i < objects; i++ {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "test.o2ims.io/v1", "kind": "Widget"}}
		u.SetName(fmt.Sprintf("burst-%03d", i))
		u.SetUID(types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i)))
		r.post(u, corev1.EventTypeNormal, "Created", "Created package variant default/"+u.GetName())
		r.post(u, corev1.EventTypeNormal, "Progressing", "Cluster instance rendering ongoing")
		r.post(u, corev1.EventTypeNormal, "Progressing", "Cluster resource creation ongoing (Provisioning)")
	}
	eventually(t, 120*time.Second, func() bool {
		return testutil.ToFloat64(m.EventWrites.WithLabelValues("success")) >= 3*objects
	}, "the burst never got through: %v writes", testutil.ToFloat64(m.EventWrites.WithLabelValues("success")))
	assert.Zero(t, testutil.ToFloat64(m.EventsDropped.WithLabelValues("queue_full")))

	list, err := srv.AdminClientset().CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.kind=Widget"})
	require.NoError(t, err)
	got := map[string]int{}
	for _, e := range list.Items {
		if strings.HasPrefix(e.InvolvedObject.Name, "burst-") {
			got[e.InvolvedObject.Name+"|"+e.Reason+"|"+e.Message] += int(e.Count)
			assert.Equal(t, "burst-test", e.Source.Component)
		}
	}
	assert.Len(t, got, 3*objects, "events lost or folded")
	for k, n := range got {
		if n != 1 {
			t.Errorf("%s counted %d times", k, n)
		}
	}
}

// The recorder's events are what `kubectl describe` and `kubectl events` show for a cluster-scoped
// object, and a repeat is one event with a count (client-go's aggregation), not a second object.
func TestEventsShowInKubectlDescribeAndKubectlEvents(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	assets, err := kubeapi.Assets()
	require.NoError(t, err)
	kubeconfig, err := srv.WriteKubeconfig(filepath.Join(t.TempDir(), "kubeconfig"), "", "")
	require.NoError(t, err)
	w := create(t, widget("kubectl-events", "kev1", map[string]any{}))

	clients, err := NewClients(srv.AdminConfig(), DefaultClientOptions())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := newMetrics("kev", prometheus.NewRegistry())
	r := newEventRecorder(ctx, clients.Kubernetes, "o2ims-operator", zaptest.NewLogger(t), m, nil)
	r.post(w, corev1.EventTypeNormal, "Progressing", "Cluster instance rendering ongoing")
	r.post(w, corev1.EventTypeWarning, "HandlerRetrying", "Handler \"create_fn\" failed; retrying in 1s: boom")
	r.post(w, corev1.EventTypeWarning, "HandlerRetrying", "Handler \"create_fn\" failed; retrying in 1s: boom")
	r.shutdown()
	require.Equal(t, 3.0, testutil.ToFloat64(m.EventsDispatched))

	kubectl := func(args ...string) string {
		out, err := exec.Command(filepath.Join(assets, "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
		require.NoError(t, err, string(out))
		return string(out)
	}
	describe := kubectl("describe", "widget", "kev1")
	assert.Contains(t, describe, "Cluster instance rendering ongoing")
	assert.Contains(t, describe, "HandlerRetrying")
	assert.Contains(t, describe, "(x2 over", "the repeat is not shown as a count")
	events := kubectl("events", "--for", "widget/kev1")
	assert.Contains(t, events, "Progressing")
	assert.Contains(t, events, "retrying in 1s: boom")
}
