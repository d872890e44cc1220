package nbi

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	authzv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/client-go/kubernetes"

	"github.com/o2ims-operator/o2ims-operator/nbi/caller"
)

// Caching: a polling SMO must not cost a review per GET, a revoked token or binding must stop working
// soon, and junk tokens must not cost a review each. Successes are kept reviewTTL (never past the token's
// expiry) and authentication refusals refusalTTL, keyed by a hash of the token, never the token. A
// denial (403) is asked again, so a binding granted a moment ago counts at once.
const (
	reviewTTL        = 10 * time.Second
	refusalTTL       = 5 * time.Second
	reviewCacheLimit = 4096
)

// tokenAuthenticator is one way of recognising a bearer token (NBI_AUTH lists them in order). A token it
// does not recognise is left to the next; one it recognises it accepts (an identity) or refuses (a
// Problem: 401, or 502/503 when what vouches for tokens cannot answer).
type tokenAuthenticator interface {
	name() string
	authenticate(ctx context.Context, token string) (id identity, recognised bool, err error)
}

// identity is an authenticated caller as the authenticators answer it.
type identity struct {
	caller.Caller
	uid     string
	extra   map[string][]string
	expires time.Time // zero: the authenticator does not say
	bound   bool      // the token has a cnf claim (RFC 8705)
	x5t     string    // its x5t#S256
}

// authenticator authenticates each request's bearer token with the configured authenticators and
// authorises it with ONE SubjectAccessReview model whoever vouched for the caller: the request's verb
// (its method, lowercased) on its path as a non-resource URL, which the O2IMS roles grant
// (manifests/nbi-auth/objects/o2ims-roles.yaml). The write itself is then sent with the operator's
// service account; nobody is impersonated.
type authenticator struct {
	methods   []tokenAuthenticator
	kube      kubernetes.Interface
	timeout   time.Duration
	log       *zap.Logger
	certBound bool
	limiter   *addrLimiter
	metrics   *metrics
	aliases   []alias // path prefixes SubjectAccessReviews name as another, longest first

	mu  sync.Mutex
	now func() time.Time // under mu: tests move it
	// users (token hash → identity), grants (grantKey → struct{}) and refusals (token hash → *Problem),
	// at most reviewCacheLimit each, least recently used out first.
	users, grants, refusals *cache.LRUExpireCache
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

// access is what one SubjectAccessReview asks: verb on the non-resource URL path.
type access struct{ verb, path string }

func newAuthenticator(kube kubernetes.Interface, timeout time.Duration, log *zap.Logger, m *metrics) *authenticator {
	a := &authenticator{kube: kube, timeout: timeout, log: log, now: time.Now, metrics: m}
	a.users = cache.NewLRUExpireCacheWithClock(reviewCacheLimit, a)
	a.grants = cache.NewLRUExpireCacheWithClock(reviewCacheLimit, a)
	a.refusals = cache.NewLRUExpireCacheWithClock(reviewCacheLimit, a)
	return a
}

// check authenticates r and, when authorize is set, authorises its method on its path. It answers the
// caller, or a Problem: 401 (with an RFC 6750 challenge), 403 naming the role that would grant the
// operation, 429 past the client address's rate, 502/503 when the API server cannot answer. Each
// outcome is counted by authenticator.
func (a *authenticator) check(r *http.Request, authorize bool) (identity, error) {
	id, key, err := a.authenticate(r)
	if err == nil && authorize {
		err = a.allowed(r.Context(), key, id, access{verb: verbOf(r.Method), path: a.canonical(r.URL.Path)})
	}
	a.count(id.Authenticator, err)
	return id, err
}

func (a *authenticator) count(authn string, err error) {
	if authn == "" {
		authn = "none"
	}
	outcome := "allowed"
	if err != nil {
		switch code := AsProblem(err).Code; {
		case code == http.StatusUnauthorized:
			outcome = "unauthenticated"
		case code == http.StatusForbidden:
			outcome = "forbidden"
		case code == http.StatusTooManyRequests:
			outcome = "rate_limited"
		default:
			outcome = "unavailable"
		}
	}
	a.metrics.auth.WithLabelValues(authn, outcome).Inc()
}

func (a *authenticator) authenticate(r *http.Request) (identity, [32]byte, error) {
	token, ok := bearerToken(r.Header.Get("Authorization"))
	if !ok {
		return identity{}, [32]byte{}, unauthorized()
	}
	key := sha256.Sum256([]byte(token))
	if v, ok := a.users.Get(key); ok {
		id := v.(identity)
		return id, key, a.bind(r, id)
	}
	if v, ok := a.refusals.Get(key); ok {
		return identity{}, key, v.(*Problem)
	}
	if !a.limiter.allow(clientAddr(r), a.Now()) {
		return identity{}, key, NewProblem(http.StatusTooManyRequests,
			"too many authentication attempts from this address; retry later").WithHeader("Retry-After", "1")
	}
	for _, m := range a.methods {
		id, recognised, err := m.authenticate(r.Context(), token)
		if !recognised {
			continue
		}
		if err != nil {
			if p := AsProblem(err); p.Code == http.StatusUnauthorized {
				a.refusals.Add(key, p, refusalTTL)
			}
			a.log.Debug("bearer token refused", zap.String("authenticator", m.name()), zap.Error(err))
			// Counted under the authenticator that refused it.
			return identity{Caller: caller.Caller{Authenticator: m.name()}}, key, err
		}
		ttl := reviewTTL
		if !id.expires.IsZero() {
			ttl = min(ttl, id.expires.Sub(a.Now()))
		}
		if ttl > 0 {
			a.users.Add(key, id, ttl)
		}
		return id, key, a.bind(r, id)
	}
	p := invalidToken("the bearer token is not valid")
	a.refusals.Add(key, p, refusalTTL)
	return identity{}, key, p
}

func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	return token, true
}

// realm is the protection space every challenge names.
const realm = "o2ims"

// unauthorized answers a request without credentials: a challenge without an error code (RFC 6750 §3.1).
func unauthorized() *Problem {
	return NewProblem(http.StatusUnauthorized, "a bearer token is required (Authorization: Bearer <token>)").
		WithHeader("WWW-Authenticate", `Bearer realm="`+realm+`"`)
}

// invalidToken answers a token that was refused, saying why (RFC 6750 §3.1 invalid_token). The reason
// is one of ours, never the token nor anything read from it.
func invalidToken(reason string) *Problem {
	desc := strings.NewReplacer(`"`, "'", `\`, "/").Replace(reason)
	return NewProblem(http.StatusUnauthorized, "%s", reason).
		WithHeader("WWW-Authenticate", `Bearer realm="`+realm+`", error="invalid_token", error_description="`+desc+`"`)
}

// verbOf is the non-resource verb of a method, as the API server names it (lowercase; HEAD reads as GET).
func verbOf(method string) string {
	if method == http.MethodHead {
		return "get"
	}
	return strings.ToLower(methodLabel(method))
}

// alias: paths under from are authorised as the same paths under to.
type alias struct{ from, to string }

// authorizeAs records an alias, keeping the longest prefix first so that a root's major
// ("/X/v2") wins over the root itself ("/X").
func (a *authenticator) authorizeAs(from, to string) {
	a.aliases = append(a.aliases, alias{from, to})
	slices.SortStableFunc(a.aliases, func(x, y alias) int { return len(y.from) - len(x.from) })
}

// canonical is the path SubjectAccessReviews name: under an aliased API root or major version it is
// asked as the canonical one, so one grant covers every spelling and version (the roles name only
// /o2ims-infrastructure*/v1/...). Only the longest matching prefix is replaced, once.
func (a *authenticator) canonical(path string) string {
	for _, al := range a.aliases {
		if rest, ok := strings.CutPrefix(path, al.from); ok && (rest == "" || rest[0] == '/') {
			return al.to + rest
		}
	}
	return path
}

func (a *authenticator) allowed(ctx context.Context, key [32]byte, id identity, acc access) error {
	gk := grantKey{key, acc}
	if _, ok := a.grants.Get(gk); ok {
		return nil
	}
	extra := make(map[string]authzv1.ExtraValue, len(id.extra))
	for k, v := range id.extra {
		extra[k] = authzv1.ExtraValue(v)
	}
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	spec := authzv1.SubjectAccessReviewSpec{User: id.User, Groups: id.Groups, UID: id.uid, Extra: extra,
		NonResourceAttributes: &authzv1.NonResourceAttributes{Path: acc.path, Verb: acc.verb}}
	review, err := a.kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return reviewFailed("SubjectAccessReview", err)
	}
	if !review.Status.Allowed || review.Status.Denied {
		a.log.Debug("operation denied", zap.String("user", id.User), zap.String("verb", acc.verb),
			zap.String("path", acc.path), zap.String("reason", review.Status.Reason))
		return NewProblem(http.StatusForbidden, "user %q may not %s %s: %s", id.User, acc.verb, acc.path, neededRoles(acc))
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

// describe is the caller for a log line.
func describe(c caller.Caller) []zap.Field {
	return []zap.Field{zap.String("authenticator", c.Authenticator), zap.String("user", c.User),
		zap.String("clientId", c.ClientID)}
}
