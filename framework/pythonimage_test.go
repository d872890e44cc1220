package framework

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/o2ims-operator/o2ims-operator/framework/kopf"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/pythonimage"
)

// What the released Python image (kopf 1.40.1) left on ProvisioningRequests (tests/pythonimage: captured from
// a real API server), handled by the framework under the image's own prefix: the framework's kopf
// compatibility tested on the image's bytes, not on what we think they are.

const pyPrefix = "provisioningrequests.o2ims.provisioning.oran.org"

var prGVR = schema.GroupVersionResource{Group: "o2ims.provisioning.oran.org", Version: "v1alpha1", Resource: "provisioningrequests"}

// pythonImageOperator is newTestOperator on ProvisioningRequests: the captured scenario s, renamed for
// the test, installed (its request alone), and an operator watching it under the image's prefix.
func pythonImageOperator(t *testing.T, s pythonimage.Scenario, as pythonimage.As, opts Options, setup func(w *Watch)) (*testOperator, *unstructured.Unstructured) {
	t.Helper()
	o, err := pythonimage.Load(s, as)
	require.NoError(t, err)
	o.PackageVariant, o.Cluster = nil, nil // the framework knows only the request
	live, err := o.Install(context.Background(), kubeapi.Shared(t).AdminDynamic())
	require.NoError(t, err)
	srv := kubeapi.Shared(t)
	rec := &kubeapi.Recorder{}
	cfg := srv.AdminConfig()
	cfg.WrapTransport = rec.Wrap
	clients, err := NewClients(cfg, DefaultClientOptions())
	require.NoError(t, err)
	opts.Prefix, opts.Name = pyPrefix, "test-"+as.Label
	opts.Liveness, opts.BackoffBase = "http://127.0.0.1:0/healthz", 50*time.Millisecond
	op, err := New(clients, opts)
	require.NoError(t, err)
	setup(op.Watch(prGVR, WatchOptions{LabelSelector: as.Selector(), Finalizer: pyPrefix}))
	return &testOperator{op: op, rec: rec}, live.Request
}

func getPR(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := kubeapi.Shared(t).AdminDynamic().Resource(prGVR).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return u
}

// A request the Python image fulfilled (its diff-base under both keys, the marker) is resumed, never
// created again.
func TestObjectHandledByThePythonOperatorIsResumedNotRecreated(t *testing.T) {
	t.Parallel()
	var log calls
	as := pythonimage.As{Name: "fw-py-done", Label: "fw-py-done"}
	to, _ := pythonImageOperator(t, pythonimage.Fulfilled, as, Options{}, func(w *Watch) {
		fn := func(_ context.Context, c *Cause) error { log.add(c); return nil }
		w.OnCreate("create_fn", fn)
		w.OnResume("create_fn", fn)
	})
	to.start(t)
	eventually(t, 20*time.Second, func() bool { return len(log.of("create_fn", as.Name)) == 1 }, "never resumed")
	assert.Equal(t, ReasonResume, log.of("create_fn", as.Name)[0].Reason)
	time.Sleep(300 * time.Millisecond)
	assert.Len(t, log.of("create_fn", as.Name), 1)
}

// A request the Python image left in flight (create_fn waiting, its sub-handler records under both keys)
// continues its create with the image's retry count and start, and the records are purged once it is done.
func TestPythonOperatorsUnfinishedCreateContinuesWithItsProgress(t *testing.T) {
	t.Parallel()
	var log calls
	as := pythonimage.As{Name: "fw-py-midway", Label: "fw-py-midway"}
	to, pr := pythonImageOperator(t, pythonimage.NoLabels, as, Options{}, func(w *Watch) {
		fn := func(_ context.Context, c *Cause) error { log.add(c); return nil }
		w.OnCreate("create_fn", fn)
		w.OnResume("create_fn", fn)
	})
	n := kopf.Namer{Prefix: pyPrefix}
	captured, err := kopf.DecodeProgress(pr.GetAnnotations()[n.V2("create_fn")])
	require.NoError(t, err)
	var recordKeys []string
	for k := range pr.GetAnnotations() {
		if k != n.V2("kopf-managed") {
			recordKeys = append(recordKeys, k)
		}
	}
	require.Len(t, recordKeys, 7, "the capture: create_fn and three sub-handlers under two keys each")
	to.start(t)
	eventually(t, 20*time.Second, func() bool {
		return getPR(t, as.Name).GetAnnotations()[pyPrefix+"/last-handled-configuration"] != ""
	}, "create never completed")

	runs := log.of("create_fn", as.Name)
	require.Len(t, runs, 1)
	assert.Equal(t, ReasonCreate, runs[0].Reason, "no diff-base: still kopf's create cause")
	assert.Equal(t, *captured.Retries, runs[0].Retries, "continues with the Python image's retry count")
	started, _, err := kopf.ParseTime(*captured.Started)
	require.NoError(t, err)
	assert.True(t, started.Equal(runs[0].Started), "started %s, the image's %s", runs[0].Started, started)

	ann := getPR(t, as.Name).GetAnnotations()
	for _, k := range recordKeys {
		_, present := ann[k]
		assert.False(t, present, "%s purged with create_fn", k)
	}
}

// A record the Python image left on a request in flight is rewritten by a waiting handler in the form it
// was read in — aware, whatever the operator's setting — with its sub-handler ids byte for byte, and the
// sub-handler records themselves untouched.
func TestPythonImagesRecordKeepsItsFormAndBytesWhenRewritten(t *testing.T) {
	t.Parallel()
	as := pythonimage.As{Name: "fw-py-timeform", Label: "fw-py-timeform"}
	to, pr := pythonImageOperator(t, pythonimage.Labels, as, Options{TimeForm: kopf.TimeNaive}, func(w *Watch) {
		w.OnCreate("create_fn", func(_ context.Context, c *Cause) error {
			return Temporary(time.Hour, "Cluster resource creation ongoing")
		})
	})
	n := kopf.Namer{Prefix: pyPrefix}
	before := pr.GetAnnotations()
	capturedRaw := before[n.V2("create_fn")]
	started := capturedRaw[:len(`{"started":"2026-12-01T22:43:11.787145+00:00","delayed":"`)]
	require.Regexp(t, `^\{"started":"[^"]+\+00:00","delayed":"$`, started, "the capture's create_fn starts otherwise")
	to.start(t)
	var raw string
	eventually(t, 20*time.Second, func() bool {
		raw = getPR(t, as.Name).GetAnnotations()[n.V2("create_fn")]
		// More than the image's 2 retries: the watch event of a pass's own write can arrive before the
		// write's answer names its resourceVersion, and then wakes the handler once more.
		return retriedAgain.MatchString(raw)
	}, "the record was never rewritten")
	assert.Equal(t, started, raw[:len(started)], "started kept as it was")
	assert.Contains(t, raw, `"subrefs":["create_fn/create_fn.<locals>.check_c_status","create_fn/create_fn.<locals>.sub_creation","create_fn/create_fn.<locals>.sub_validations"]}`)
	got, err := kopf.DecodeProgress(raw)
	require.NoError(t, err)
	assert.Regexp(t, `\+00:00$`, *got.Delayed, "the new delay is aware too")
	after := getPR(t, as.Name).GetAnnotations()
	for _, id := range []string{"create_fn/create_fn.<locals>.sub_validations", "create_fn/create_fn.<locals>.sub_creation", "create_fn/create_fn.<locals>.check_c_status"} {
		for _, k := range n.Keys(id) {
			assert.Equal(t, before[k], after[k], "%s changed", k)
		}
	}
}
