package nbi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/caller"
	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
)

func TestAuthRefusesMissingAndInvalidTokensWith401(t *testing.T) {
	e := newEnv(t, nbitest.WithKubernetesAuth)
	for name, headers := range map[string][]string{
		"no token":      nil,
		"invalid token": nbitest.Bearer("not-a-token"),
		"basic":         {"Authorization", "Basic YWRtaW46YWRtaW4="},
		"empty bearer":  {"Authorization", "Bearer "},
	} {
		for _, req := range []struct{ method, path string }{
			{http.MethodGet, nbitest.CollectionPath}, {http.MethodGet, nbitest.NamedPath("x")}, {http.MethodPost, nbitest.CollectionPath},
			{http.MethodPut, nbitest.NamedPath("x")}, {http.MethodDelete, nbitest.NamedPath("x")}, {http.MethodGet, apiRoot + "/api_versions"},
		} {
			var body []byte
			if req.method == http.MethodPost || req.method == http.MethodPut {
				body = nbitest.JSONBody(t, nbitest.RequestBody("x"))
			}
			x := e.Do(req.method, req.path, body, headers...)
			require.Equal(t, http.StatusUnauthorized, x.Code(), "%s: %s %s", name, req.method, req.path)
			require.True(t, strings.HasPrefix(x.Resp.Header.Get("WWW-Authenticate"), "Bearer"), name)
		}
	}
	require.Zero(t, e.APICalls(), "nothing was written")
	e.RequireNoSecretsLogged("not-a-token")

	// The probe proves serving with the 401 an anonymous GET earns.
	_, err := e.Srv.Probe(context.Background())
	require.NoError(t, err)
}

// nbiAdmin is a ServiceAccount token for the NBI's audience, bound to the o2ims-admin role.
func nbiAdmin(t *testing.T, e *nbitest.Env) string {
	t.Helper()
	nbitest.ApplyO2IMSRoles(t, e.Kapi)
	require.NoError(t, e.Kapi.BindClusterRole(context.Background(), "nbi-test-admin", "o2ims-nbi-admin",
		rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "nbi-test", Name: "admin"}))
	return nbitest.NBIToken(t, e.Kapi, "nbi-test", "admin")
}

func TestCallersActUnderTheirOwnRBAC(t *testing.T) {
	e := newEnv(t, nbitest.WithKubernetesAuth)
	kapi, ctx := e.Kapi, context.Background()
	admin := nbiAdmin(t, e)
	tester := nbitest.NBIToken(t, kapi, "nbi-test", "tester")
	id := e.ID("rbac")
	e.CreateDirect(id, nbitest.SimpleSpec("rbac"))
	e.EventuallyAs(admin, nbitest.NamedPath(id), nbitest.Status(http.StatusOK), "cached, read by the admin")

	// Authenticated but without permissions: every operation is forbidden, and no write is sent.
	for _, x := range []*nbitest.Exchange{
		e.Do(http.MethodGet, nbitest.CollectionPath, nil, nbitest.Bearer(tester)...),
		e.Do(http.MethodGet, nbitest.NamedPath(id), nil, nbitest.Bearer(tester)...),
		e.Do(http.MethodPost, nbitest.CollectionPath, nbitest.JSONBody(t, nbitest.RequestBody(e.ID("denied"))), nbitest.Bearer(tester)...),
		e.Do(http.MethodPut, nbitest.NamedPath(id), nbitest.JSONBody(t, nbitest.RequestBody(id)), nbitest.Bearer(tester)...),
		e.Do(http.MethodDelete, nbitest.NamedPath(id), nil, nbitest.Bearer(tester)...),
	} {
		require.Equal(t, http.StatusForbidden, x.Code(), "%s %s: %s", x.Req.Method, x.Req.URL.Path, x.Body)
		require.Contains(t, x.Problem(t).Status, `system:serviceaccount:nbi-test:tester"`)
		require.Contains(t, x.Problem(t).Status, "o2ims-provisioner", "the 403 names the role that would allow it")
	}
	require.Zero(t, e.APICalls(), "a forbidden write is never sent")

	// The O2IMS reader role: reads only.
	require.NoError(t, kapi.BindClusterRole(ctx, "nbi-test-reader", "o2ims-nbi-reader",
		rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "nbi-test", Name: "tester"}))

	// Denials are not cached, so the grant counts as soon as RBAC has it.
	e.EventuallyAs(tester, nbitest.NamedPath(id), nbitest.Status(http.StatusOK), "GET allowed by the binding")
	require.Equal(t, http.StatusOK, e.Do(http.MethodGet, nbitest.CollectionPath, nil, nbitest.Bearer(tester)...).Code())
	require.Equal(t, http.StatusForbidden, e.Do(http.MethodPost, nbitest.CollectionPath, nbitest.JSONBody(t, nbitest.RequestBody(e.ID("denied"))), nbitest.Bearer(tester)...).Code())
	require.Equal(t, http.StatusForbidden, e.Do(http.MethodPut, nbitest.NamedPath(id), nbitest.JSONBody(t, nbitest.RequestBody(id)), nbitest.Bearer(tester)...).Code())
	require.Equal(t, http.StatusForbidden, e.Do(http.MethodDelete, nbitest.NamedPath(id), nil, nbitest.Bearer(tester)...).Code())
	require.Zero(t, e.APICalls(), "still nothing written")

	e.RequireNoSecretsLogged(tester, admin)
}

// A token minted for the API server (no audience: what `kubectl` uses) is refused even for a caller the
// roles allow everything, and the NBI's token does not open the API server.
func TestAPlainClusterTokenIsRefused(t *testing.T) {
	e := newEnv(t, nbitest.WithKubernetesAuth)
	admin := nbiAdmin(t, e)
	plain, err := e.Kapi.ServiceAccountToken(context.Background(), "nbi-test", "admin", "")
	require.NoError(t, err)
	e.EventuallyAs(admin, nbitest.CollectionPath, nbitest.Status(http.StatusOK), "the NBI token is allowed")
	for _, token := range []string{plain, e.Kapi.AdminToken} {
		x := e.Do(http.MethodGet, nbitest.CollectionPath, nil, nbitest.Bearer(token)...)
		require.Equal(t, http.StatusUnauthorized, x.Code(), "%s", x.Body)
		require.Contains(t, x.Resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`)
	}
	_, err = kubernetes.NewForConfigOrDie(e.Kapi.ConfigForToken(admin)).CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	require.True(t, apierrors.IsUnauthorized(err), "the NBI's token is refused by the API server: %v", err)
	e.RequireNoSecretsLogged(admin, plain, e.Kapi.AdminToken)
}

func TestAServiceAccountWithTheProvisionerRoleMayWrite(t *testing.T) {
	e := newEnv(t, nbitest.WithKubernetesAuth)
	kapi, ctx := e.Kapi, context.Background()
	nbitest.ApplyO2IMSRoles(t, kapi)
	token := nbitest.NBIToken(t, kapi, "smo", "focom")
	require.NoError(t, kapi.BindClusterRole(ctx, "nbi-test-writer", "o2ims-nbi-provisioner",
		rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "smo", Name: "focom"}))

	e.EventuallyAs(token, nbitest.CollectionPath, nbitest.Status(http.StatusOK), "list allowed by the binding")
	id := e.ID("by-sa")
	x := e.Do(http.MethodPost, nbitest.CollectionPath, nbitest.JSONBody(t, nbitest.RequestBody(id)), nbitest.Bearer(token)...)
	require.Equal(t, http.StatusCreated, x.Code(), "%s", x.Body)
	e.EventuallyAs(token, nbitest.NamedPath(id), nbitest.Status(http.StatusOK), "cached")
	require.Equal(t, http.StatusOK, e.Do(http.MethodPut, nbitest.NamedPath(id), nbitest.JSONBody(t, nbitest.RequestBody(id)), nbitest.Bearer(token)...).Code())
	obj, err := e.Admin.Resource(v1alpha1.GVR).Get(ctx, id, metav1.GetOptions{})
	require.NoError(t, err)
	require.JSONEq(t, `{"authenticator":"kubernetes","user":"system:serviceaccount:smo:focom"}`,
		obj.GetAnnotations()[caller.Annotation], "the write names its caller, not the operator")
	require.Equal(t, http.StatusAccepted, e.Do(http.MethodDelete, nbitest.NamedPath(id), nil, nbitest.Bearer(token)...).Code())
	require.Len(t, e.Logs.FilterMessage("northbound write").FilterField(zap.String("user", "system:serviceaccount:smo:focom")).All(), 3,
		"each write is logged at INFO with its caller")
	e.RequireNoSecretsLogged(token)
}

func TestReviewsAreCachedBrieflySoPollingCostsNoReviews(t *testing.T) {
	e := newEnv(t, nbitest.WithKubernetesAuth)
	admin := nbiAdmin(t, e)
	id := e.ID("polled")
	e.CreateDirect(id, nbitest.SimpleSpec("polled"))
	e.EventuallyAs(admin, nbitest.NamedPath(id), nbitest.Status(http.StatusOK), "cached")

	before := e.AuthCalls()
	for i := 0; i < 10; i++ {
		require.Equal(t, http.StatusOK, e.Do(http.MethodGet, nbitest.NamedPath(id), nil, nbitest.Bearer(admin)...).Code())
	}
	require.Equal(t, before, e.AuthCalls(), "a polling caller costs no reviews while they are fresh")

	require.Equal(t, http.StatusOK, e.Do(http.MethodGet, nbitest.CollectionPath, nil, nbitest.Bearer(admin)...).Code())
	require.Equal(t, before+1, e.AuthCalls(), "another path: one SubjectAccessReview, the token is known")

	// Past the TTL both reviews are asked again.
	e.Srv.SetAuthNow(func() time.Time { return time.Now().Add(nbi.ReviewTTL + time.Second) })
	require.Equal(t, http.StatusOK, e.Do(http.MethodGet, nbitest.NamedPath(id), nil, nbitest.Bearer(admin)...).Code())
	require.Equal(t, before+3, e.AuthCalls(), "TokenReview and SubjectAccessReview again")
}

func TestKubernetesAuthNeedsAClient(t *testing.T) {
	_, err := newServer(nbi.Config{Auth: nbi.AuthKubernetes}, nbitest.NewMemStore(), nil, nil, nil, nil)
	require.ErrorContains(t, err, "NBI_AUTH=kubernetes")
}

// hookAPI is one route authorised on its path (Mux.HandleURL), as Alertmanager's webhook is.
type hookAPI struct{}

const hookPath = "/test-hooks/alerts"

func (hookAPI) Register(m *nbi.Mux) {
	m.HandleURL("POST "+hookPath, func(w http.ResponseWriter, _ *http.Request) error {
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
}

// A route authorised on its path asks for post on that non-resource URL: a grant on provisioningrequests
// does not reach it, and its grant reaches nothing else.
func TestARouteAuthorisedOnItsPathNeedsExactlyThatGrant(t *testing.T) {
	e := nbitest.NewEnv(t, func(e *nbitest.Env) []nbi.API {
		return []nbi.API{mustProvisioning(t, e.Store, e.Dyn), hookAPI{}}
	}, nbitest.WithKubernetesAuth)
	kapi, ctx, cs := e.Kapi, context.Background(), e.Kapi.AdminClientset()
	token := nbitest.NBIToken(t, kapi, "monitoring", "hook-sender")
	sa := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "monitoring", Name: "hook-sender"}
	grant := func(name string, rule rbacv1.PolicyRule) {
		_, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{rule}}, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
			_ = cs.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
		require.NoError(t, kapi.BindClusterRole(ctx, name, name, sa))
	}
	post := func() *nbitest.Exchange {
		return e.Do(http.MethodPost, hookPath, []byte(`{}`), nbitest.Bearer(token)...)
	}

	require.Equal(t, http.StatusUnauthorized, e.Do(http.MethodPost, hookPath, []byte(`{}`)).Code())
	require.Equal(t, http.StatusForbidden, post().Code(), "no grant")

	grant("nbi-test-hook-create", rbacv1.PolicyRule{
		APIGroups: []string{v1alpha1.Group}, Resources: []string{v1alpha1.Resource}, Verbs: []string{"create"}})
	require.Eventually(t, func() bool {
		sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
			User: "system:serviceaccount:monitoring:hook-sender", Groups: []string{"system:serviceaccounts"},
			ResourceAttributes: &authzv1.ResourceAttributes{Group: v1alpha1.Group, Resource: v1alpha1.Resource, Verb: "create"},
		}}, metav1.CreateOptions{})
		return err == nil && sar.Status.Allowed
	}, 30*time.Second, 100*time.Millisecond, "the API server has the create grant")
	require.Equal(t, http.StatusForbidden, post().Code(), "create on provisioningrequests does not reach the route")

	grant("nbi-test-hook-url", rbacv1.PolicyRule{NonResourceURLs: []string{hookPath}, Verbs: []string{"post"}})
	require.Eventually(t, func() bool { return post().Code() == http.StatusNoContent }, 30*time.Second, 100*time.Millisecond,
		"post on the non-resource URL reaches the route")
	require.Equal(t, http.StatusForbidden, e.Do(http.MethodGet, nbitest.CollectionPath, nil, nbitest.Bearer(token)...).Code(),
		"the path's grant reaches nothing else")
	e.RequireNoSecretsLogged(token)
}
