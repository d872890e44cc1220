package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/promtest"
)

func TestTopWritesAreTheLargestPerRequest(t *testing.T) {
	by := map[string]float64{"events POST": 3000, "clusters/status PATCH": 4000, "packagevariants POST": 1000, "leases PUT": 10}
	require.Equal(t, "clusters/status PATCH 4.00, events POST 3.00, packagevariants POST 1.00", topWrites(by, 1000, 0.05))
	require.Equal(t, "–", topWrites(nil, 1000, 0.05))
	after := apiRequests{Writes: 5, ByResource: map[string]float64{"events POST": 7, "leases PUT": 2}}
	before := apiRequests{Writes: 2, ByResource: map[string]float64{"events POST": 4, "leases PUT": 2}}
	require.Equal(t, map[string]float64{"events POST": 3}, after.minus(before).ByResource)
}

// What the real kube-apiserver serves (tests/kubeapi: v1.37.2) is read into watch event sizes and answer
// times: a ConfigMap created while one client watches ConfigMaps shows up in both.
func TestWatchSizesAndAnswerTimesAreReadFromTheAPIServer(t *testing.T) {
	ctx := context.Background()
	srv, err := kubeapi.Start(ctx, kubeapi.Options{})
	require.NoError(t, err)
	defer srv.Stop()
	cs := srv.AdminClientset()
	scrape := func() apiRequests {
		raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		require.NoError(t, err)
		fams, err := promtest.Parse(bytes.NewReader(raw))
		require.NoError(t, err)
		return apiRequestsOf(fams)
	}
	w, err := cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer w.Stop()
	before := scrape()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "sized"}, Data: map[string]string{"k": strings.Repeat("x", 3000)}}
	_, err = cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
	require.NoError(t, err)
	select {
	case <-w.ResultChan():
	case <-time.After(30 * time.Second):
		t.Fatal("the watch saw no event")
	}
	var d apiRequests
	require.Eventually(t, func() bool {
		d = scrape().minus(before)
		return d.Watched["configmaps"] >= 1 && d.Served["configmaps POST"].Calls >= 1
	}, 30*time.Second, 100*time.Millisecond, "the API server's metrics never showed the create and its watch event")
	// The event carries the object: its 3000-byte value and the metadata around it.
	assert.Greater(t, d.watchEventBytes("configmaps"), 3000.0)
	assert.Less(t, d.watchEventBytes("configmaps"), 5000.0)
	assert.Positive(t, d.Served["configmaps POST"].Mean())
	assert.Contains(t, watchSizes(d, 1), "configmaps ")
	assert.Contains(t, answerTimes(d, 1), "configmaps POST ")
	assert.Equal(t, "–", watchSizes(d, 1000), "fewer events than one per ten requests: not shown")
}
