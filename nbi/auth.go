package nbi

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/client-go/kubernetes"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
)

// Review caching: a polling SMO must not cost a TokenReview and a SubjectAccessReview per GET, and a
// revoked token or binding must stop working soon. Only successes are cached (a denial is asked again,
// so a binding granted a moment ago counts at once), keyed by a hash of the token, never the token.
const (
	reviewTTL        = 10 * time.Second
	reviewCacheLimit = 4096
)

// authenticator authenticates bearer tokens with TokenReviews and authorises each operation with a
// SubjectAccessReview for the token's user, so the caller acts under its own RBAC even though the write
// itself is sent with the operator's service account.
type authenticator struct {
	kube    kubernetes.Interface
	timeout time.Duration
	log     *zap.Logger

	mu  sync.Mutex
	now func() time.Time // under mu: tests move it
	// users (token hash → authnv1.UserInfo) and grants (grantKey → struct{}) hold successes for
	// reviewTTL, at most reviewCacheLimit each, least recently used out first.
	users, grants *cache.LRUExpireCache
}

// Now is the caches' clock: a.now, which tests move.
func (a *authenticator) Now() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.now()
}

type grantKey struct {
	token [32]byte
	access
}

// access is what one SubjectAccessReview asks: verb on provisioningrequests (named when name is set), or,
// with path set, verb on that non-resource URL (a ClusterRole's nonResourceURLs), which grants nothing
// in the API server itself.
type access struct{ verb, name, path string }

func newAuthenticator(kube kubernetes.Interface, timeout time.Duration, log *zap.Logger) *authenticator {
	a := &authenticator{kube: kube, timeout: timeout, log: log, now: time.Now}
	a.users = cache.NewLRUExpireCacheWithClock(reviewCacheLimit, a)
	a.grants = cache.NewLRUExpireCacheWithClock(reviewCacheLimit, a)
	return a
}

// authorize checks the request's bearer token and, when verb is set, that its user may perform verb on
// provisioningrequests (named when name is set). It answers nil, or a 401/403 problem (or 502/503 when
// the API server cannot answer the reviews).
func (a *authenticator) authorize(ctx context.Context, r *http.Request, verb, name string) error {
	token, ok := bearerToken(r.Header.Get("Authorization"))
	if !ok {
		return unauthorized("a bearer token is required (Authorization: Bearer <token>)")
	}
	key := sha256.Sum256([]byte(token))
	user, err := a.authenticate(ctx, key, token)
	if err != nil || verb == "" {
		return err
	}
	return a.allowed(ctx, key, user, access{verb: verb, name: name})
}

// authorizeURL checks the request's bearer token and that its user may perform the request's method
// (lowercased: post, get…) on its path as a non-resource URL.
func (a *authenticator) authorizeURL(ctx context.Context, r *http.Request) error {
	token, ok := bearerToken(r.Header.Get("Authorization"))
	if !ok {
		return unauthorized("a bearer token is required (Authorization: Bearer <token>)")
	}
	key := sha256.Sum256([]byte(token))
	user, err := a.authenticate(ctx, key, token)
	if err != nil {
		return err
	}
	return a.allowed(ctx, key, user, access{verb: strings.ToLower(r.Method), path: r.URL.Path})
}

func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	return token, true
}

func unauthorized(message string) *Problem {
	return NewProblem(http.StatusUnauthorized, "%s", message).
		WithHeader("WWW-Authenticate", `Bearer realm="O2ims_infrastructureProvisioning"`)
}

func (a *authenticator) authenticate(ctx context.Context, key [32]byte, token string) (authnv1.UserInfo, error) {
	if u, ok := a.users.Get(key); ok {
		return u.(authnv1.UserInfo), nil
	}
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	review, err := a.kube.AuthenticationV1().TokenReviews().Create(ctx,
		&authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return authnv1.UserInfo{}, reviewFailed("TokenReview", err)
	}
	if !review.Status.Authenticated {
		a.log.Debug("bearer token refused", zap.String("reason", review.Status.Error))
		return authnv1.UserInfo{}, unauthorized("the bearer token is not valid")
	}
	a.users.Add(key, review.Status.User, reviewTTL)
	return review.Status.User, nil
}

func (a *authenticator) allowed(ctx context.Context, key [32]byte, user authnv1.UserInfo, acc access) error {
	gk := grantKey{key, acc}
	if _, ok := a.grants.Get(gk); ok {
		return nil
	}
	extra := make(map[string]authzv1.ExtraValue, len(user.Extra))
	for k, v := range user.Extra {
		extra[k] = authzv1.ExtraValue(v)
	}
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	spec := authzv1.SubjectAccessReviewSpec{User: user.Username, Groups: user.Groups, UID: user.UID, Extra: extra}
	if acc.path != "" {
		spec.NonResourceAttributes = &authzv1.NonResourceAttributes{Path: acc.path, Verb: acc.verb}
	} else {
		spec.ResourceAttributes = &authzv1.ResourceAttributes{
			Group: v1alpha1.Group, Version: v1alpha1.Version, Resource: v1alpha1.Resource, Verb: acc.verb, Name: acc.name,
		}
	}
	review, err := a.kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return reviewFailed("SubjectAccessReview", err)
	}
	if !review.Status.Allowed || review.Status.Denied {
		a.log.Debug("operation denied", zap.String("user", user.Username), zap.String("verb", acc.verb),
			zap.String("path", acc.path), zap.String("reason", review.Status.Reason))
		if acc.path != "" {
			return NewProblem(http.StatusForbidden, "user %q may not %s the non-resource URL %s", user.Username, acc.verb, acc.path)
		}
		return NewProblem(http.StatusForbidden, "user %q may not %s provisioningrequests in API group %s",
			user.Username, acc.verb, v1alpha1.Group)
	}
	a.grants.Add(gk, struct{}{}, reviewTTL)
	return nil
}

// reviewFailed: the API server could not review the caller, which is not the caller's fault.
func reviewFailed(kind string, err error) *Problem {
	if apierrors.IsTooManyRequests(err) {
		p := NewProblem(http.StatusServiceUnavailable, "the Kubernetes API server is busy; retry later").WithCause(err)
		if secs, ok := apierrors.SuggestsClientDelay(err); ok && secs > 0 {
			p.WithHeader("Retry-After", strconv.Itoa(secs))
		}
		return p
	}
	return NewProblem(http.StatusBadGateway, "the caller could not be authenticated: the Kubernetes API server did not answer a %s", kind).
		WithCause(errors.Join(errors.New(kind), err))
}
