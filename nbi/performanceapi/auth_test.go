package performanceapi

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
)

// The shipped O2IMS roles on the real API server: a reader reads jobs but creates none (403 naming the
// role that may); a maintainer creates and deletes them, under either spelling (the lowercase root is
// authorised as the spec's, one grant for both).
func TestReadersReadJobsMaintainersCreateAndDeleteThem(t *testing.T) {
	e := newEnvAuth(t, true)
	kapi, ctx := e.Kapi, context.Background()
	nbitest.ApplyO2IMSRoles(t, kapi)
	reader := nbitest.NBIToken(t, kapi, "smo", "perf-reader")
	maintainer := nbitest.NBIToken(t, kapi, "smo", "perf-maintainer")
	require.NoError(t, kapi.BindClusterRole(ctx, "perf-test-reader", "o2ims-nbi-reader",
		rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "smo", Name: "perf-reader"}))
	require.NoError(t, kapi.BindClusterRole(ctx, "perf-test-maintainer", "o2ims-nbi-maintainer",
		rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "smo", Name: "perf-maintainer"}))

	e.eventuallyAllowed(reader, v2+"/measurementJobs")
	x := e.send(http.MethodPost, v2+"/measurementJobs", memJob, "application/json", nbitest.Bearer(reader)...)
	require.Equal(t, http.StatusForbidden, x.Code(), string(x.Body))
	require.Contains(t, x.Problem(t).Detail, "o2ims-maintainer")

	e.eventuallyAllowed(maintainer, Root+"/v2/measurementJobs")
	x = e.send(http.MethodPost, Root+"/v2/measurementJobs", memJob, "application/json", nbitest.Bearer(maintainer)...)
	require.Equal(t, http.StatusCreated, x.Code(), string(x.Body))
	id := x.Object(t)["performanceMeasurementJobId"].(string)
	require.Equal(t, http.StatusOK, e.send(http.MethodGet, v2+"/measurementJobs/"+id, "", "", nbitest.Bearer(reader)...).Code())
	require.Equal(t, http.StatusForbidden, e.send(http.MethodDelete, v2+"/measurementJobs/"+id, "", "", nbitest.Bearer(reader)...).Code())
	require.Equal(t, http.StatusNoContent, e.send(http.MethodDelete, v2+"/measurementJobs/"+id, "", "", nbitest.Bearer(maintainer)...).Code())
}

// eventuallyAllowed waits until the API server's RBAC lets token GET path (bindings take a moment).
func (e *env) eventuallyAllowed(token, path string) {
	e.T.Helper()
	var last *nbitest.Exchange
	require.Eventually(e.T, func() bool {
		last = e.send(http.MethodGet, path, "", "", nbitest.Bearer(token)...)
		return last.Code() == http.StatusOK
	}, 30*time.Second, 20*time.Millisecond, "GET %s never allowed", path)
}
