package framework

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// getWith GETs url with a bearer token ("" none) and answers the status, the challenge and the body.
func getWith(t *testing.T, url, token string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(body)
}

// applyMetricsReader creates the ClusterRole manifests/metrics-auth ships for scrapers, as shipped.
func applyMetricsReader(t *testing.T) string {
	t.Helper()
	path, err := kubeapi.RepoFile("manifests/metrics-auth/objects/rbac.yaml")
	require.NoError(t, err)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var r rbacv1.ClusterRole
		require.NoError(t, yaml.Unmarshal([]byte(doc), &r))
		if r.Kind != "ClusterRole" || r.Name != "o2ims-operator-metrics-reader" {
			continue
		}
		_, err := kubeapi.Shared(t).AdminClientset().RbacV1().ClusterRoles().Create(context.Background(), &r, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
		return r.Name
	}
	t.Fatal("manifests/metrics-auth ships no ClusterRole o2ims-operator-metrics-reader")
	return ""
}

// METRICS_AUTH=kubernetes on the real API server: /metrics refuses a request without a token or with one
// the API server does not know (401 with a Bearer challenge), and a real ServiceAccount token without the
// shipped reader role (403); bound to that role, the same ServiceAccount scrapes. /healthz and /readyz
// stay open for the kubelet. Reviews are cached: the same token again costs no review.
func TestMetricsNeedATokenAllowedToGetMetrics(t *testing.T) {
	t.Parallel()
	to := newTestOperator(t, "metrics-auth", Options{MetricsAuth: MetricsAuthKubernetes}, func(*Operator, *Watch) {})
	to.start(t)
	base := "http://" + to.op.HealthAddr()
	for _, p := range []string{"/healthz", "/readyz"} {
		code, _, _ := getWith(t, base+p, "")
		assert.Equal(t, http.StatusOK, code, p)
	}
	code, challenge, _ := getWith(t, base+"/metrics", "")
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.Equal(t, `Bearer realm="metrics"`, challenge)
	code, _, body := getWith(t, base+"/metrics", "not-a-token")
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.NotContains(t, body, "not-a-token")

	kapi, ctx := kubeapi.Shared(t), context.Background()
	before, err := kapi.ServiceAccountToken(ctx, "metrics-auth", "scraper", "")
	require.NoError(t, err)
	code, _, body = getWith(t, base+"/metrics", before)
	assert.Equal(t, http.StatusForbidden, code)
	assert.Contains(t, body, `"system:serviceaccount:metrics-auth:scraper" may not get /metrics`)

	role := applyMetricsReader(t)
	require.NoError(t, kapi.BindClusterRole(ctx, "metrics-auth-scraper", role,
		rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "metrics-auth", Name: "scraper"}))
	// A fresh token: the first one's denial is cached for thirty seconds.
	var token string
	eventually(t, 30*time.Second, func() bool {
		token, err = kapi.ServiceAccountToken(ctx, "metrics-auth", "scraper", "")
		require.NoError(t, err)
		c, _, _ := getWith(t, base+"/metrics", token)
		return c == http.StatusOK
	}, "the scraper bound to %s never scraped", role)
	reviews := to.rec.Count(http.MethodPost, "tokenreviews")
	code, _, body = getWith(t, base+"/metrics", token)
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "go_goroutines")
	assert.Equal(t, reviews, to.rec.Count(http.MethodPost, "tokenreviews"), "a token reviewed a moment ago is not reviewed again")
	for range 20 {
		c, _, _ := getWith(t, base+"/metrics", "not-a-token")
		require.Equal(t, http.StatusUnauthorized, c)
	}
	assert.Equal(t, reviews, to.rec.Count(http.MethodPost, "tokenreviews"), "a refused token is not reviewed again either")
}

// Both timeouts that bound an idle client hold on the health listener: an idle keep-alive connection is
// closed by the server after IdleTimeout (a raw TCP connection, reading until the server hangs up).
func TestHealthListenerClosesAnIdleKeepAliveConnection(t *testing.T) {
	t.Parallel()
	const idle = 300 * time.Millisecond
	to := newTestOperator(t, "health-idle", Options{HealthTimeouts: ServerTimeouts{Idle: idle}}, func(*Operator, *Watch) {})
	to.start(t)
	kubeapi.RequireIdleConnectionClosed(t, to.op.HealthAddr(), "/readyz", idle)
}
