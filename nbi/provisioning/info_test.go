package provisioning

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

	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
)

func TestPhaseMapping(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	srv := &API{log: zap.New(core)}
	for state, want := range map[string]string{
		"progressing": PhaseProgressing, "fulfilled": PhaseFulfilled, "failed": PhaseFailed, "deleting": PhaseDeleting,
		"": PhasePending, "paused": PhasePending, "FULFILLED": PhasePending,
	} {
		status := map[string]any{"provisioningStatus": map[string]any{"provisioningState": state}}
		if state == "" {
			status = nil
		}
		require.Equal(t, want, srv.infoOf(nbitest.PRObject("p", nbitest.SimpleSpec("c"), status)).Status.ProvisioningPhase, state)
	}
	unknown := logs.FilterMessage("provisioning request has a provisioningState with no O2IMS phase; answering PENDING").All()
	require.Len(t, unknown, 2, "each unknown state is logged")

	deleted := nbitest.PRObject("d", nbitest.SimpleSpec("c"), map[string]any{"provisioningStatus": map[string]any{"provisioningState": "fulfilled"}})
	now := metav1.Now()
	deleted.SetDeletionTimestamp(&now)
	require.Equal(t, PhaseDeleting, srv.infoOf(deleted).Status.ProvisioningPhase, "a deletionTimestamp wins")
}

func TestUpdateTimeIsTheRecordedTimeInUTCOrTheCreationTime(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	srv := &API{log: zap.New(core)}
	at := func(recorded string) string {
		return srv.infoOf(nbitest.PRObject("u", nbitest.SimpleSpec("c"), map[string]any{"provisioningStatus": map[string]any{
			"provisioningState": "progressing", "provisioningUpdateTime": recorded,
		}})).Status.UpdateTime
	}
	require.Equal(t, "2026-11-30T08:00:00Z", at("2026-11-30T10:00:00+02:00"))
	require.Equal(t, "2026-11-30T10:00:00Z", at("2026-11-30T10:00:00.123456Z"))
	require.Equal(t, "2026-11-30T09:00:00Z", at("not a time"), "the creation time")
	require.Equal(t, "2026-11-30T09:00:00Z", at(""))
	require.Len(t, logs.FilterMessage("provisioning request has an unreadable provisioningUpdateTime; answering its creation time").All(), 1)

	noCreation := nbitest.PRObject("n", nbitest.SimpleSpec("c"), nil)
	noCreation.SetCreationTimestamp(metav1.Time{})
	_, err := time.Parse(time.RFC3339, srv.infoOf(noCreation).Status.UpdateTime)
	require.NoError(t, err, "still a date-time")
}

func TestInfoOfAMinimalObjectHasEveryRequiredMember(t *testing.T) {
	srv := &API{log: nbitest.NopLogger()}
	info := srv.infoOf(nbitest.PRObject("bare", map[string]any{}, map[string]any{
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
		s := startStub(t, nbitest.NewMemStore(), nil, kube, nbitest.WithKubernetesAuth)
		x := s.Do(t, http.MethodGet, nbitest.CollectionPath, nil, nbitest.Bearer("some-token")...)
		require.Equal(t, c.want, x.Code(), "%d", c.code)
		if c.want == 503 {
			require.Equal(t, "3", x.Resp.Header.Get("Retry-After"))
		}
		for _, entry := range s.Logs.All() {
			require.NotContains(t, entry.Message+" "+fieldsString(entry), "some-token")
		}
	}
}

func TestASecondServerOnTheSameRegistryShareTheMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	_, err := newServer(nbi.Config{}, nbitest.NewMemStore(), nil, nil, nil, reg)
	require.NoError(t, err)
	_, err = newServer(nbi.Config{}, nbitest.NewMemStore(), nil, nil, nil, reg)
	require.NoError(t, err)
	require.NoError(t, reg.Register(prometheus.NewCounter(prometheus.CounterOpts{Name: "unrelated"})))
	clash := prometheus.NewRegistry()
	require.NoError(t, clash.Register(prometheus.NewCounter(prometheus.CounterOpts{Name: "o2ims_nbi_requests_total", Help: "x"})))
	_, err = newServer(nbi.Config{}, nbitest.NewMemStore(), nil, nil, nil, clash)
	require.Error(t, err)
}
