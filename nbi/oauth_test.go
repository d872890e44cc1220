package nbi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/caller"
	"github.com/o2ims-operator/o2ims-operator/tests/hydra"
	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
)

// The NBI's OAuth side against a real ORY Hydra v2.3.0 (tests/hydra): its client-credentials tokens (RS256
// JWTs with aud and scp), its discovery document and JWKS, its key rotation and its outage.

const audience = "o2ims-nbi"

// withOAuth is the Config of an NBI trusting h.
func withOAuth(h *hydra.Hydra, auth string) func(*nbi.Config) {
	return func(c *nbi.Config) {
		c.Auth = auth
		// Refreshes for an unknown kid unthrottled, so a rotation is seen at once whatever the machine's
		// pace; TestEveryRefusalIsA401WithAChallenge throttles them.
		c.OAuth = nbi.OAuthConfig{IssuerURL: h.Issuer(), Audience: audience, MinKeyRefresh: time.Nanosecond}
	}
}

// stubAPI answers 204 on the inventory and monitoring operations the roles tell apart (the provisioning
// API is the real one), so the test sees only what authorisation decided.
type stubAPI struct{}

var stubRoutes = []string{
	"GET /o2ims-infrastructureInventory/v1/resourcePools",
	"POST /o2ims-infrastructureInventory/v1/subscriptions",
	"DELETE /o2ims-infrastructureInventory/v1/subscriptions/{id}",
	"GET /o2ims-infrastructureMonitoring/v1/alarms",
	"PATCH /o2ims-infrastructureMonitoring/v1/alarms/{id}",
	"PUT /o2ims-infrastructureMonitoring/v1/alarmServiceConfiguration",
	"POST /o2ims-infrastructureMonitoring/v1/alarmSubscriptions",
	"POST /o2ims-infrastructureMonitoring/v1/alertmanager",
}

func (stubAPI) Register(m *nbi.Mux) {
	for _, p := range stubRoutes {
		m.Handle(p, nbi.VerbGet, func(w http.ResponseWriter, _ *http.Request) error {
			w.WriteHeader(http.StatusNoContent)
			return nil
		})
	}
}

func oauthEnv(t *testing.T, h *hydra.Hydra, auth string, tweak ...func(*nbi.Config)) *nbitest.Env {
	t.Helper()
	e := nbitest.NewEnv(t, func(e *nbitest.Env) []nbi.API {
		return []nbi.API{mustProvisioning(t, e.Store, e.Dyn), stubAPI{}}
	}, append([]func(*nbi.Config){withOAuth(h, auth)}, tweak...)...)
	nbitest.ApplyO2IMSRoles(t, e.Kapi)
	return e
}

// raw sends a request without the reference check (the stub's answers are not the API's).
func raw(t *testing.T, e *nbitest.Env, method, path, token string, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, e.Base+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := e.Client.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

func TestEachO2IMSRoleIsAllowedItsOperationsOnlyWithHydraTokens(t *testing.T) {
	h := hydra.Start(t)
	e := oauthEnv(t, h, nbi.AuthOAuth)
	prov := "/o2ims-infrastructureProvisioning/v1/provisioningRequests"
	ops := []struct {
		method, path string
		allowed      []string // roles, besides admin
	}{
		{"GET", "/o2ims-infrastructureInventory/v1/resourcePools", []string{"reader"}},
		{"POST", "/o2ims-infrastructureInventory/v1/subscriptions", []string{"subscriber"}},
		{"DELETE", "/o2ims-infrastructureInventory/v1/subscriptions/x", []string{"subscriber"}},
		{"GET", "/o2ims-infrastructureMonitoring/v1/alarms", []string{"reader"}},
		{"PATCH", "/o2ims-infrastructureMonitoring/v1/alarms/x", []string{"maintainer"}},
		{"PUT", "/o2ims-infrastructureMonitoring/v1/alarmServiceConfiguration", []string{"maintainer"}},
		{"POST", "/o2ims-infrastructureMonitoring/v1/alarmSubscriptions", []string{"subscriber"}},
		{"GET", nbitest.CollectionPath, []string{"reader", "provisioner"}},
		{"GET", prov, []string{"reader", "provisioner"}},
		{"DELETE", prov + "/" + e.ID("absent"), []string{"provisioner"}},
	}
	for _, role := range []string{"reader", "subscriber", "maintainer", "provisioner", "admin"} {
		scope := nbi.RoleScopePrefix + "o2ims-" + role
		c := h.CreateClient(t, "smo-"+role, []string{scope}, []string{audience})
		token := h.Token(t, c, []string{scope}, []string{audience})
		for _, op := range ops {
			allowed := role == "admin" || contains(op.allowed, role)
			resp := raw(t, e, op.method, op.path, token, "{}")
			if allowed {
				require.Contains(t, []int{http.StatusNoContent, http.StatusOK, http.StatusNotFound}, resp.StatusCode, "%s: %s %s", role, op.method, op.path)
			} else {
				require.Equal(t, http.StatusForbidden, resp.StatusCode, "%s: %s %s", role, op.method, op.path)
			}
		}
		// Alertmanager's webhook is no O2IMS role's, the admin's neither.
		require.Equal(t, http.StatusForbidden, raw(t, e, "POST", "/o2ims-infrastructureMonitoring/v1/alertmanager", token, "{}").StatusCode)

		// A provisioning request: the provisioner and the admin create it, and it names who asked.
		id := e.ID("by-" + role)
		x := e.Do(http.MethodPost, nbitest.CollectionPath, nbitest.JSONBody(t, nbitest.RequestBody(id)), nbitest.Bearer(token)...)
		if role != "provisioner" && role != "admin" {
			require.Equal(t, http.StatusForbidden, x.Code(), "%s: %s", role, x.Body)
			require.Contains(t, x.Problem(t).Status, "o2ims-provisioner", "the 403 names the role that would allow it")
			continue
		}
		require.Equal(t, http.StatusCreated, x.Code(), "%s: %s", role, x.Body)
		obj, err := e.Admin.Resource(v1alpha1.GVR).Get(context.Background(), id, metav1.GetOptions{})
		require.NoError(t, err)
		var by caller.Caller
		require.NoError(t, json.Unmarshal([]byte(obj.GetAnnotations()[caller.Annotation]), &by))
		require.Equal(t, caller.Caller{Authenticator: "oauth", User: "oauth:smo-" + role, ClientID: "smo-" + role}, by)
		require.NotEmpty(t, e.Logs.FilterMessage("northbound write").FilterField(zap.String("user", "oauth:smo-"+role)).All(),
			"the write is logged at INFO with its caller")
		e.RequireNoSecretsLogged(token)
	}
	require.Positive(t, testutil.ToFloat64(e.Srv.AuthMetric().WithLabelValues("oauth", "allowed")))
	require.Positive(t, testutil.ToFloat64(e.Srv.AuthMetric().WithLabelValues("oauth", "forbidden")))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
