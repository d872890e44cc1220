package framework

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"golang.org/x/time/rate"
)

// MetricsAuthKubernetes is the one value of METRICS_AUTH: /metrics answers only a bearer token the API
// server authenticates (TokenReview) for a user it allows `get` on the non-resource URL /metrics
// (SubjectAccessReview), as controller-runtime's secure metrics do (sigs.k8s.io/controller-runtime
// pkg/metrics/filters/filters.go, WithAuthenticationAndAuthorization, at 8f8247fd). /healthz and /readyz
// stay open: the kubelet's probes carry no token.
const MetricsAuthKubernetes = "kubernetes"

// The caches, as controller-runtime's filter sets them: a token's review is kept a minute (refusals too),
// an allowed SubjectAccessReview five minutes and a denied one thirty seconds. Reviews not answered from
// them are rate-limited, so that junk tokens cannot turn scrapes into a flood of reviews.
const (
	metricsAuthnTTL      = time.Minute
	metricsAllowTTL      = 5 * time.Minute
	metricsDenyTTL       = 30 * time.Second
	metricsCacheLimit    = 1024
	metricsReviewRate    = 5 // per second, over every caller
	metricsReviewBurst   = 20
	metricsReviewTimeout = 10 * time.Second
	metricsPath          = "/metrics"
)

// metricsAuth guards /metrics with a TokenReview and a SubjectAccessReview.
type metricsAuth struct {
	kube    kubernetes.Interface
	log     *zap.Logger
	limiter *rate.Limiter
	// users: token hash → authnv1.UserInfo, or nil for a token the API server refused; grants: token
	// hash → whether get /metrics is allowed.
	users, grants *cache.LRUExpireCache
}

func newMetricsAuth(kube kubernetes.Interface, clk clock.PassiveClock, log *zap.Logger) *metricsAuth {
	return &metricsAuth{
		kube: kube, log: log, limiter: rate.NewLimiter(metricsReviewRate, metricsReviewBurst),
		users:  cache.NewLRUExpireCacheWithClock(metricsCacheLimit, clk),
		grants: cache.NewLRUExpireCacheWithClock(metricsCacheLimit, clk),
	}
}

// wrap answers 401 (no token, or one the API server refuses), 403 (not allowed get /metrics), 429 (past
// the review rate) or 503 (the API server did not answer) before next. Neither the token nor the API
// server's address is logged or answered.
func (m *metricsAuth) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, msg := m.check(r)
		if code != http.StatusOK {
			if code == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
			}
			if code == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", "1")
			}
			http.Error(w, msg, code)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (m *metricsAuth) check(r *http.Request) (int, string) {
	scheme, token, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		return http.StatusUnauthorized, "a bearer token is required"
	}
	key := sha256.Sum256([]byte(token))
	user, code, msg := m.authenticate(r.Context(), key, token)
	if code != http.StatusOK {
		return code, msg
	}
	return m.authorize(r.Context(), key, user)
}

func (m *metricsAuth) authenticate(ctx context.Context, key [32]byte, token string) (*authnv1.UserInfo, int, string) {
	if v, ok := m.users.Get(key); ok {
		if u, _ := v.(*authnv1.UserInfo); u != nil {
			return u, http.StatusOK, ""
		}
		return nil, http.StatusUnauthorized, "the bearer token is not valid"
	}
	if !m.limiter.Allow() {
		return nil, http.StatusTooManyRequests, "too many token reviews; retry later"
	}
	ctx, cancel := context.WithTimeout(ctx, metricsReviewTimeout)
	defer cancel()
	// No audiences: the API server's own, as controller-runtime's delegating authenticator asks (a
	// scraper presents its ServiceAccount token).
	review, err := m.kube.AuthenticationV1().TokenReviews().Create(ctx,
		&authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		m.log.Warn("/metrics: the API server did not answer a TokenReview", zap.Error(err))
		return nil, http.StatusServiceUnavailable, "the caller cannot be authenticated right now; retry later"
	}
	if !review.Status.Authenticated {
		m.users.Add(key, (*authnv1.UserInfo)(nil), metricsAuthnTTL)
		m.log.Debug("/metrics: bearer token refused")
		return nil, http.StatusUnauthorized, "the bearer token is not valid"
	}
	u := review.Status.User
	m.users.Add(key, &u, metricsAuthnTTL)
	return &u, http.StatusOK, ""
}

func (m *metricsAuth) authorize(ctx context.Context, key [32]byte, u *authnv1.UserInfo) (int, string) {
	denied := fmt.Sprintf("user %q may not get %s (a ClusterRole granting nonResourceURLs [%s] verbs [get])", u.Username, metricsPath, metricsPath)
	if v, ok := m.grants.Get(key); ok {
		if v.(bool) {
			return http.StatusOK, ""
		}
		return http.StatusForbidden, denied
	}
	if !m.limiter.Allow() {
		return http.StatusTooManyRequests, "too many access reviews; retry later"
	}
	extra := make(map[string]authzv1.ExtraValue, len(u.Extra))
	for k, v := range u.Extra {
		extra[k] = authzv1.ExtraValue(v)
	}
	ctx, cancel := context.WithTimeout(ctx, metricsReviewTimeout)
	defer cancel()
	sar, err := m.kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: u.Username, Groups: u.Groups, UID: u.UID, Extra: extra,
		NonResourceAttributes: &authzv1.NonResourceAttributes{Path: metricsPath, Verb: "get"},
	}}, metav1.CreateOptions{})
	if err != nil {
		m.log.Warn("/metrics: the API server did not answer a SubjectAccessReview", zap.Error(err))
		return http.StatusServiceUnavailable, "the caller cannot be authorised right now; retry later"
	}
	allowed := sar.Status.Allowed && !sar.Status.Denied
	if !allowed {
		m.grants.Add(key, false, metricsDenyTTL)
		m.log.Debug("/metrics: access denied", zap.String("user", u.Username), zap.String("reason", sar.Status.Reason))
		return http.StatusForbidden, denied
	}
	m.grants.Add(key, true, metricsAllowTTL)
	return http.StatusOK, ""
}
