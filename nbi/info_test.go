package nbi

import (
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func TestPhaseMapping(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	srv := &Server{log: zap.New(core)}
	for state, want := range map[string]string{
		"progressing": PhaseProgressing, "fulfilled": PhaseFulfilled, "failed": PhaseFailed, "deleting": PhaseDeleting,
		"": PhasePending, "paused": PhasePending, "FULFILLED": PhasePending,
	} {
		status := map[string]any{"provisioningStatus": map[string]any{"provisioningState": state}}
		if state == "" {
			status = nil
		}
		require.Equal(t, want, srv.infoOf(prObject("p", simpleSpec("c"), status)).Status.ProvisioningPhase, state)
	}
	unknown := logs.FilterMessage("provisioning request has a provisioningState with no O2IMS phase; answering PENDING").All()
	require.Len(t, unknown, 2, "each unknown state is logged")

	deleted := prObject("d", simpleSpec("c"), map[string]any{"provisioningStatus": map[string]any{"provisioningState": "fulfilled"}})
	now := metav1.Now()
	deleted.SetDeletionTimestamp(&now)
	require.Equal(t, PhaseDeleting, srv.infoOf(deleted).Status.ProvisioningPhase, "a deletionTimestamp wins")
}

func TestUpdateTimeIsTheRecordedTimeInUTCOrTheCreationTime(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	srv := &Server{log: zap.New(core)}
	at := func(recorded string) string {
		return srv.infoOf(prObject("u", simpleSpec("c"), map[string]any{"provisioningStatus": map[string]any{
			"provisioningState": "progressing", "provisioningUpdateTime": recorded,
		}})).Status.UpdateTime
	}
	require.Equal(t, "2026-11-30T08:00:00Z", at("2026-11-30T10:00:00+02:00"))
	require.Equal(t, "2026-11-30T10:00:00Z", at("2026-11-30T10:00:00.123456Z"))
	require.Equal(t, "2026-11-30T09:00:00Z", at("not a time"), "the creation time")
	require.Equal(t, "2026-11-30T09:00:00Z", at(""))
	require.Len(t, logs.FilterMessage("provisioning request has an unreadable provisioningUpdateTime; answering its creation time").All(), 1)

	noCreation := prObject("n", simpleSpec("c"), nil)
	noCreation.SetCreationTimestamp(metav1.Time{})
	_, err := time.Parse(time.RFC3339, srv.infoOf(noCreation).Status.UpdateTime)
	require.NoError(t, err, "still a date-time")
}

func TestInfoOfAMinimalObjectHasEveryRequiredMember(t *testing.T) {
	srv := &Server{log: nopLogger()}
	info := srv.infoOf(prObject("bare", map[string]any{}, map[string]any{
		"provisionedResourceSet": map[string]any{"oCloudInfrastructureResourceIds": []any{"a", int64(1), "b"}},
	}))
	require.Equal(t, map[string]any{}, info.ProvisioningRequestData.TemplateParameters)
	require.Equal(t, []string{"a", "b"}, info.ProvisionedResourceSet.InfrastructureResourceIDs)
}

func TestReviewsTheAPIServerCannotAnswerAre502Or503(t *testing.T) {
	for _, c := range []struct {
		code, want int
		reason     string
	}{
		{429, 503, "TooManyRequests"}, {500, 502, "InternalError"}, {403, 502, "Forbidden"},
	} {
		api := statusServer(t, c.code, c.reason, `,"details":{"retryAfterSeconds":3}`)
		kube := kubernetes.NewForConfigOrDie(restConfig(api.URL))
		s := startStub(t, newMemStore(), nil, kube, withKubernetesAuth)
		x := s.do(t, http.MethodGet, collectionPath, nil, bearer("some-token")...)
		require.Equal(t, c.want, x.code(), "%d", c.code)
		if c.want == 503 {
			require.Equal(t, "3", x.resp.Header.Get("Retry-After"))
		}
		for _, entry := range s.logs.All() {
			require.NotContains(t, entry.Message+" "+fieldsString(entry), "some-token")
		}
	}
}

func TestASecondServerOnTheSameRegistryShareTheMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	_, err := New(Config{}, newMemStore(), nil, nil, nil, reg)
	require.NoError(t, err)
	_, err = New(Config{}, newMemStore(), nil, nil, nil, reg)
	require.NoError(t, err)
	require.NoError(t, reg.Register(prometheus.NewCounter(prometheus.CounterOpts{Name: "unrelated"})))
	clash := prometheus.NewRegistry()
	require.NoError(t, clash.Register(prometheus.NewCounter(prometheus.CounterOpts{Name: "o2ims_nbi_requests_total", Help: "x"})))
	_, err = New(Config{}, newMemStore(), nil, nil, nil, clash)
	require.Error(t, err)
}
