package handlers

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

const pvPath = "/apis/config.porch.kpt.dev/v1alpha1/namespaces/default/packagevariants"

// answerWith reroutes the named GET of one PackageVariant, while a mode is set, so the real API server
// answers it with something else: the collection (a PackageVariantList), another PackageVariant, or an
// object of another kind with the same name.
func answerWith(name string, mode *atomic.Value, rerouted *atomic.Int32) func(*http.Request) *http.Request {
	return func(req *http.Request) *http.Request {
		m, _ := mode.Load().(string)
		if m == "" || req.Method != http.MethodGet || req.URL.Path != pvPath+"/"+name {
			return req
		}
		u := *req.URL
		switch m {
		case "list":
			u.Path = pvPath
		case "other-name":
			u.Path = pvPath + "/" + name + "-other"
		case "other-kind":
			u.Path = "/apis/o2ims.provisioning.oran.org/v1alpha1/provisioningrequests/" + name
		}
		r := req.Clone(req.Context())
		r.URL = &u
		rerouted.Add(1)
		return r
	}
}

// A named GET answered with a list, another object or another kind is a protocol error: the release
// keeps the finalizer and retries, never taking the answer for "not found" or "someone else's". The
// release deletes the cached version without a read (issue 39); the live read comes once a finalizer
// keeps the package variant, so one is put on it here.
func TestReleaseTreatsAWrongAnswerToANamedReadAsAProtocolError(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	const name = "proto-release"
	var mode atomic.Value
	var rerouted atomic.Int32
	mode.Store("")
	other := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "PackageVariant",
		"metadata": map[string]any{"name": name + "-other", "namespace": "default"},
		"spec":     map[string]any{"upstream": map[string]any{"repo": "r", "package": "p"}, "downstream": map[string]any{"repo": "r", "package": "edge-proto-elsewhere"}},
	}}
	_, err := srv.AdminDynamic().Resource(external.PackageVariantGVR).Namespace("default").Create(context.Background(), other, metav1.CreateOptions{})
	require.NoError(t, err)

	c := startChain(t, srv, "proto-release", func(c *Config) { c.Requeue = 300 * time.Millisecond },
		&kubeapi.Recorder{Reroute: answerWith(name, &mode, &rerouted)})
	createPR(t, srv, provisioningRequest(name, "proto-release", tmplOK, map[string]any{"clusterName": "edge-proto-release"}))
	waitState(t, srv, name, v1alpha1.StateFulfilled, 30*time.Second)
	waitHandled(t, srv, name)

	pvs := srv.AdminDynamic().Resource(external.PackageVariantGVR).Namespace("default")
	_, err = pvs.Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":["test.o2ims/hold"]}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	mode.Store("list")
	require.NoError(t, srv.AdminDynamic().Resource(v1alpha1.GVR).Delete(context.Background(), name, metav1.DeleteOptions{}))
	// The DELETE of the cached version (refused while the cache is behind, then held by the finalizer)
	// comes first; any DELETE after the package variant is marked would rest on a wrong answer.
	eventually(t, 30*time.Second, func() bool {
		pv, ok := getPV(t, srv, name)
		return ok && pv.GetDeletionTimestamp() != nil
	}, "the cached version was never deleted")
	deletes := c.rec.Count("DELETE", "/packagevariants/"+name)
	for _, m := range []struct{ mode, says string }{
		{"list", "is a list"},
		{"other-name", `not "default/` + name + `"`},
		{"other-kind", `"ProvisioningRequest"`},
	} {
		mode.Store(m.mode)
		eventually(t, 30*time.Second, func() bool {
			u, ok := getPR(t, srv, name)
			return ok && v1alpha1.StatusOf(u).State == v1alpha1.StateDeleting && strings.Contains(v1alpha1.StatusOf(u).Message, m.says)
		}, "%s: the wrong answer was not reported", m.mode)
		time.Sleep(time.Second) // passes at the 300ms requeue, each meeting the wrong answer
		u, ok := getPR(t, srv, name)
		require.True(t, ok, "%s: the finalizer went while the package variant exists", m.mode)
		assert.Contains(t, v1alpha1.StatusOf(u).Message, "protocol", m.mode)
		assert.Contains(t, u.GetFinalizers(), Finalizer, m.mode)
		_, exists := getPV(t, srv, name)
		assert.True(t, exists, m.mode)
		assert.Equal(t, deletes, c.rec.Count("DELETE", "/packagevariants/"+name), "%s: deleted on a wrong answer", m.mode)
	}
	assert.Positive(t, rerouted.Load())

	mode.Store("")
	_, err = pvs.Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	eventually(t, 30*time.Second, func() bool { _, ok := getPR(t, srv, name); return !ok }, "the release never finished once the answers were right")
	_, left := getPV(t, srv, name)
	assert.False(t, left)
	_, otherLeft := getPV(t, srv, name+"-other")
	assert.True(t, otherLeft, "the other package variant was touched")
}

// A create whose answer was lost is settled by reading back; a list answered to that read is no
// "foreign package variant" (no conflict, no failure): the request carries on.
func TestReadBackAnsweredWithAListIsNoConflict(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	const name = "proto-readback"
	var mode atomic.Value
	var rerouted, dropped atomic.Int32
	mode.Store("list")
	rec := &kubeapi.Recorder{
		Reroute: func(req *http.Request) *http.Request {
			r := answerWith(name, &mode, &rerouted)(req)
			if r != req {
				mode.Store("") // one wrong answer
			}
			return r
		},
		Fault: func(req *http.Request) bool {
			return req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/packagevariants") && dropped.Add(1) == 1
		},
	}
	startChain(t, srv, "proto-readback", func(c *Config) { c.Requeue = 300 * time.Millisecond }, rec)
	createPR(t, srv, provisioningRequest(name, "proto-readback", tmplOK, map[string]any{"clusterName": "edge-proto-readback"}))
	waitState(t, srv, name, v1alpha1.StateFulfilled, 30*time.Second)
	assert.EqualValues(t, 1, rerouted.Load(), "the read-back was not answered with the list")
	evs := eventsOf(t, srv, name)
	assert.False(t, hasEvent(evs, corev1.EventTypeWarning, EventConflict, ""), "a list was taken for a foreign package variant")
	assert.False(t, hasEvent(evs, corev1.EventTypeWarning, EventFailed, ""))
}
