package nbi

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	authnv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

func withKubernetesAuth(c *Config) { c.Auth = AuthKubernetes }

func bearer(token string) []string { return []string{"Authorization", "Bearer " + token} }

func status(code int) func(*exchange) bool { return func(x *exchange) bool { return x.code() == code } }

// requireNoSecretsLogged checks that no log line carries any of the tokens.
func (e *env) requireNoSecretsLogged(secrets ...string) {
	e.t.Helper()
	for _, entry := range e.logs.All() {
		line := entry.Message + " " + fmt.Sprint(entry.ContextMap())
		for _, s := range secrets {
			require.NotContains(e.t, line, s, "a token was logged")
		}
	}
}

func TestAuthRefusesMissingAndInvalidTokensWith401(t *testing.T) {
	e := newEnv(t, withKubernetesAuth)
	for name, headers := range map[string][]string{
		"no token":      nil,
		"invalid token": bearer("not-a-token"),
		"basic":         {"Authorization", "Basic YWRtaW46YWRtaW4="},
		"empty bearer":  {"Authorization", "Bearer "},
	} {
		for _, req := range []struct{ method, path string }{
			{http.MethodGet, collectionPath}, {http.MethodGet, namedPath("x")}, {http.MethodPost, collectionPath},
			{http.MethodPut, namedPath("x")}, {http.MethodDelete, namedPath("x")}, {http.MethodGet, apiRoot + "/api_versions"},
		} {
			var body []byte
			if req.method == http.MethodPost || req.method == http.MethodPut {
				body = jsonBody(t, requestBody("x"))
			}
			x := e.do(req.method, req.path, body, headers...)
			require.Equal(t, http.StatusUnauthorized, x.code(), "%s: %s %s", name, req.method, req.path)
			require.True(t, strings.HasPrefix(x.resp.Header.Get("WWW-Authenticate"), "Bearer"), name)
		}
	}
	require.Zero(t, e.apiCalls(), "nothing was written")
	e.requireNoSecretsLogged("not-a-token")

	// The probe proves serving with the 401 an anonymous GET earns.
	_, err := e.srv.Probe(context.Background())
	require.NoError(t, err)
}

func TestCallersActUnderTheirOwnRBAC(t *testing.T) {
	e := newEnv(t, withKubernetesAuth)
	kapi, ctx, cs := e.kapi, context.Background(), e.kapi.AdminClientset()
	tester := kapi.TesterToken
	id := e.id("rbac")
	e.createDirect(id, simpleSpec("rbac"))
	e.eventuallyAs(kapi.AdminToken, namedPath(id), status(http.StatusOK), "cached, read by the admin")

	// Authenticated but without permissions: every operation is forbidden, and no write is sent.
	for _, x := range []*exchange{
		e.do(http.MethodGet, collectionPath, nil, bearer(tester)...),
		e.do(http.MethodGet, namedPath(id), nil, bearer(tester)...),
		e.do(http.MethodPost, collectionPath, jsonBody(t, requestBody(e.id("denied"))), bearer(tester)...),
		e.do(http.MethodPut, namedPath(id), jsonBody(t, requestBody(id)), bearer(tester)...),
		e.do(http.MethodDelete, namedPath(id), nil, bearer(tester)...),
	} {
		require.Equal(t, http.StatusForbidden, x.code(), "%s %s: %s", x.req.Method, x.req.URL.Path, x.body)
		require.Contains(t, x.problem(t).Status, `"tester"`)
	}
	require.Zero(t, e.apiCalls(), "a forbidden write is never sent")

	// A ClusterRole granting get and list only.
	reader := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "nbi-test-reader"},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{v1alpha1.Group}, Resources: []string{v1alpha1.Resource},
			Verbs: []string{"get", "list"},
		}},
	}
	_, err := cs.RbacV1().ClusterRoles().Create(ctx, reader, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), "nbi-test-reader", metav1.DeleteOptions{})
		_ = cs.RbacV1().ClusterRoles().Delete(context.Background(), "nbi-test-reader", metav1.DeleteOptions{})
	})
	require.NoError(t, kapi.BindClusterRole(ctx, "nbi-test-reader", "nbi-test-reader",
		rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: kubeapi.TesterUser}))

	// Denials are not cached, so the grant counts as soon as RBAC has it.
	e.eventuallyAs(tester, namedPath(id), status(http.StatusOK), "GET allowed by the binding")
	require.Equal(t, http.StatusOK, e.do(http.MethodGet, collectionPath, nil, bearer(tester)...).code())
	require.Equal(t, http.StatusForbidden, e.do(http.MethodPost, collectionPath, jsonBody(t, requestBody(e.id("denied"))), bearer(tester)...).code())
	require.Equal(t, http.StatusForbidden, e.do(http.MethodPut, namedPath(id), jsonBody(t, requestBody(id)), bearer(tester)...).code())
	require.Equal(t, http.StatusForbidden, e.do(http.MethodDelete, namedPath(id), nil, bearer(tester)...).code())
	require.Zero(t, e.apiCalls(), "still nothing written")

	e.requireNoSecretsLogged(tester, kapi.AdminToken)
}

func TestAServiceAccountWithCreateMayPost(t *testing.T) {
	e := newEnv(t, withKubernetesAuth)
	kapi, ctx, cs := e.kapi, context.Background(), e.kapi.AdminClientset()
	token, err := kapi.ServiceAccountToken(ctx, "smo", "focom", "")
	require.NoError(t, err)

	_, err = cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "nbi-test-writer"},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{v1alpha1.Group}, Resources: []string{v1alpha1.Resource},
			Verbs: []string{"get", "list", "create", "update", "delete"},
		}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), "nbi-test-writer", metav1.DeleteOptions{})
		_ = cs.RbacV1().ClusterRoles().Delete(context.Background(), "nbi-test-writer", metav1.DeleteOptions{})
	})
	require.NoError(t, kapi.BindClusterRole(ctx, "nbi-test-writer", "nbi-test-writer",
		rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "smo", Name: "focom"}))

	e.eventuallyAs(token, collectionPath, status(http.StatusOK), "list allowed by the binding")
	id := e.id("by-sa")
	x := e.do(http.MethodPost, collectionPath, jsonBody(t, requestBody(id)), bearer(token)...)
	require.Equal(t, http.StatusCreated, x.code(), "%s", x.body)
	e.eventuallyAs(token, namedPath(id), status(http.StatusOK), "cached")
	require.Equal(t, http.StatusOK, e.do(http.MethodPut, namedPath(id), jsonBody(t, requestBody(id)), bearer(token)...).code())
	require.Equal(t, http.StatusAccepted, e.do(http.MethodDelete, namedPath(id), nil, bearer(token)...).code())
	e.requireNoSecretsLogged(token)
}

func TestReviewsAreCachedBrieflySoPollingCostsNoReviews(t *testing.T) {
	e := newEnv(t, withKubernetesAuth)
	admin := e.kapi.AdminToken
	id := e.id("polled")
	e.createDirect(id, simpleSpec("polled"))
	e.eventuallyAs(admin, namedPath(id), status(http.StatusOK), "cached")

	before := e.authCalls()
	for i := 0; i < 10; i++ {
		require.Equal(t, http.StatusOK, e.do(http.MethodGet, namedPath(id), nil, bearer(admin)...).code())
	}
	require.Equal(t, before, e.authCalls(), "a polling caller costs no reviews while they are fresh")

	require.Equal(t, http.StatusOK, e.do(http.MethodGet, collectionPath, nil, bearer(admin)...).code())
	require.Equal(t, before+1, e.authCalls(), "another verb: one SubjectAccessReview, the token is known")

	// Past the TTL both reviews are asked again.
	a := e.srv.auth
	a.mu.Lock()
	a.now = func() time.Time { return time.Now().Add(reviewTTL + time.Second) }
	a.mu.Unlock()
	require.Equal(t, http.StatusOK, e.do(http.MethodGet, namedPath(id), nil, bearer(admin)...).code())
	require.Equal(t, before+3, e.authCalls(), "TokenReview and SubjectAccessReview again")
}

func TestTheReviewCacheIsBounded(t *testing.T) {
	a := newAuthenticator(nil, time.Second, zap.NewNop())
	now := time.Now()
	a.now = func() time.Time { return now }
	for i := 0; i < reviewCacheLimit*2; i++ {
		a.users.Add(sha256.Sum256([]byte(strconv.Itoa(i))), authnv1.UserInfo{Username: strconv.Itoa(i)}, reviewTTL)
		a.grants.Add(grantKey{verb: "get", name: strconv.Itoa(i)}, struct{}{}, reviewTTL)
	}
	require.LessOrEqual(t, len(a.users.Keys()), reviewCacheLimit)
	require.LessOrEqual(t, len(a.grants.Keys()), reviewCacheLimit)
	last := sha256.Sum256([]byte(strconv.Itoa(reviewCacheLimit*2 - 1)))
	_, ok := a.users.Get(last)
	require.True(t, ok, "the newest entry is kept")
	// Past the TTL nothing is served, however recently it was used.
	a.mu.Lock()
	a.now = func() time.Time { return now.Add(reviewTTL + time.Second) }
	a.mu.Unlock()
	_, ok = a.users.Get(last)
	require.False(t, ok)
}

func TestKubernetesAuthNeedsAClient(t *testing.T) {
	_, err := New(Config{Auth: AuthKubernetes}, newMemStore(), nil, nil, nil, nil)
	require.ErrorContains(t, err, "NBI_AUTH=kubernetes")
}
