package nbi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/o2ims-operator/o2ims-operator/nbi/caller"
)

// oauthLeeway is the clock skew allowed on exp, nbf and iat.
const oauthLeeway = 30 * time.Second

// DefaultSigningAlgorithms are the JWS algorithms accepted by default: asymmetric only. HMAC is refused
// whatever the configuration (a public key used as an HMAC secret is the classic forgery) and "none" is
// unknown to go-jose.
var DefaultSigningAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// parseAlgorithms: the token's header is read with every algorithm go-jose knows, so a token of the
// issuer signed with another algorithm is recognised and refused by name rather than taken for someone
// else's.
var parseAlgorithms = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384,
	jose.PS512, jose.ES256, jose.ES384, jose.ES512, jose.EdDSA, jose.HS256, jose.HS384, jose.HS512}

// UserPrefix is put before an OAuth caller's username in SubjectAccessReviews, so no token can name a
// Kubernetes user (system:admin, a ServiceAccount) and act as it.
const UserPrefix = "oauth:"

// RoleScopePrefix: a scope "role:o2ims-reader" puts its caller in group "o2ims-reader" (the scopes the
// O2IMS references declare, testdata/reference/o2ims-inventory).
const RoleScopePrefix = "role:"

// oauthAuthenticator validates RFC 9068 JWT access tokens locally against the issuer's keys.
type oauthAuthenticator struct {
	keys          *keySet
	audience      string
	usernameClaim string
	groupsClaim   string
	algorithms    []jose.SignatureAlgorithm
	now           func() time.Time
}

// claims is what is read of a verified token beyond the registered claims.
type claims map[string]any

func (o *oauthAuthenticator) name() string { return AuthOAuth }

// authenticate recognises a JWT whose (unverified) iss is the configured issuer; anything else is left to
// the next authenticator. A recognised token is then verified fully or refused.
func (o *oauthAuthenticator) authenticate(ctx context.Context, token string) (identity, bool, error) {
	tok, err := jwt.ParseSigned(token, parseAlgorithms)
	if err != nil {
		return identity{}, false, nil
	}
	var peek jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&peek); err != nil ||
		strings.TrimSuffix(peek.Issuer, "/") != strings.TrimSuffix(o.keys.expectedIssuer(), "/") {
		return identity{}, false, nil
	}
	id, err := o.verify(ctx, tok)
	if err != nil {
		return identity{}, true, invalidToken(err.Error())
	}
	return id, true, nil
}

func (o *oauthAuthenticator) verify(ctx context.Context, tok *jwt.JSONWebToken) (identity, error) {
	if len(tok.Headers) != 1 {
		return identity{}, errors.New("the token must carry exactly one signature")
	}
	h := tok.Headers[0]
	if !slices.Contains(o.algorithms, jose.SignatureAlgorithm(h.Algorithm)) {
		return identity{}, fmt.Errorf("the token's algorithm %q is not allowed", h.Algorithm)
	}
	key, err := o.keys.key(ctx, h.KeyID)
	if err != nil {
		return identity{}, err
	}
	if key.Algorithm != "" && key.Algorithm != h.Algorithm {
		return identity{}, errors.New("the token's algorithm is not its key's")
	}
	var std jwt.Claims
	var extra claims
	if err := tok.Claims(key.Key, &std, &extra); err != nil {
		return identity{}, errors.New("the token's signature is not valid")
	}
	now := o.now()
	if std.Expiry == nil {
		return identity{}, errors.New("the token has no expiry")
	}
	err = std.ValidateWithLeeway(jwt.Expected{
		Issuer: o.keys.expectedIssuer(), AnyAudience: jwt.Audience{o.audience}, Time: now}, oauthLeeway)
	switch {
	case errors.Is(err, jwt.ErrExpired):
		return identity{}, errors.New("the token has expired")
	case errors.Is(err, jwt.ErrInvalidAudience):
		return identity{}, errors.New("the token is not for this audience")
	case errors.Is(err, jwt.ErrInvalidIssuer):
		return identity{}, errors.New("the token's issuer is not trusted")
	case err != nil:
		return identity{}, errors.New("the token is not valid yet")
	}
	return o.identity(std, extra)
}

// identity maps a verified token to its caller: the username claim (prefixed), the groups claim, and
// each role scope as the group of that role.
func (o *oauthAuthenticator) identity(std jwt.Claims, extra claims) (identity, error) {
	username := extra.str(o.usernameClaim)
	if username == "" {
		return identity{}, fmt.Errorf("the token has no %q claim", o.usernameClaim)
	}
	client := extra.str("client_id")
	if client == "" {
		client = extra.str("azp")
	}
	var groups []string
	for _, g := range append(extra.strs(o.groupsClaim), roleGroups(extra)...) {
		// Kubernetes' own groups (system:masters…) cannot be claimed by a token.
		if g != "" && !strings.HasPrefix(g, "system:") && !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	id := identity{
		Caller:  caller.Caller{Authenticator: AuthOAuth, User: UserPrefix + username, ClientID: client, Groups: groups},
		expires: std.Expiry.Time(),
	}
	if cnf, ok := extra["cnf"].(map[string]any); ok {
		id.x5t, _ = cnf["x5t#S256"].(string)
		id.bound = true
	}
	return id, nil
}

// roleGroups are the groups of the token's role scopes (scope: space-separated; scp: a list, as Hydra).
func roleGroups(c claims) []string {
	scopes := strings.Fields(c.str("scope"))
	scopes = append(scopes, c.strs("scp")...)
	var out []string
	for _, s := range scopes {
		if role, ok := strings.CutPrefix(s, RoleScopePrefix); ok {
			out = append(out, role)
		}
	}
	return out
}

func (c claims) str(name string) string {
	s, _ := c[name].(string)
	return s
}

// strs reads a claim that is a list of strings or one string.
func (c claims) strs(name string) []string {
	switch v := c[name].(type) {
	case string:
		return []string{v}
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
