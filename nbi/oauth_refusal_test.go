package nbi_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/tests/hydra"
	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
)

func rsaKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	return k
}

// forged are claims as Hydra's own tokens carry them, for the test's key Hydra publishes: each refusal
// below changes one thing.
func forged(iss string, scope string) map[string]any {
	now := time.Now()
	return map[string]any{"iss": iss, "aud": []string{audience}, "sub": "forger", "client_id": "forger",
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(), "scp": []string{scope}}
}

func with(c map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range c {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
		} else {
			out[kv[i].(string)] = kv[i+1]
		}
	}
	return out
}

// Every refusal class is a 401 with an RFC 6750 challenge and a ProblemDetails body (e.Do checks it
// against the reference), never a 500, and no token reaches the log.
func TestEveryRefusalIsA401WithAChallenge(t *testing.T) {
	h := hydra.Start(t)
	trusted, other := rsaKey(t), rsaKey(t)
	h.ImportKey(t, "test-trusted", trusted)
	e := oauthEnv(t, h, nbi.AuthOAuth+","+nbi.AuthKubernetes, func(c *nbi.Config) { c.OAuth.MinKeyRefresh = time.Hour })
	c := h.CreateClient(t, "smo-refused", []string{"role:o2ims-reader"}, []string{audience, "another-api"})
	good := h.Token(t, c, []string{"role:o2ims-reader"}, []string{audience})
	iss := hydra.Claims(t, good)["iss"].(string)
	pub, err := x509.MarshalPKIXPublicKey(&trusted.PublicKey)
	require.NoError(t, err)
	valid := forged(iss, "role:o2ims-reader")
	sig := strings.Split(good, ".")
	swap := "A"
	if sig[2][10] == 'A' {
		swap = "B"
	}
	flipped := sig[2][:10] + swap + sig[2][11:]

	// The controls: Hydra's token and the test's token made with the key Hydra publishes are accepted.
	require.Equal(t, http.StatusOK, e.Do(http.MethodGet, nbitest.CollectionPath, nil, nbitest.Bearer(good)...).Code())
	require.Equal(t, http.StatusOK, e.Do(http.MethodGet, nbitest.CollectionPath, nil,
		nbitest.Bearer(hydra.Sign(t, trusted, "test-trusted", jose.RS256, valid))...).Code())

	refused := map[string]string{
		"malformed":                "not-a-jwt.at.all",
		"expired":                  hydra.Sign(t, trusted, "test-trusted", jose.RS256, with(valid, "exp", time.Now().Add(-2*time.Minute).Unix())),
		"not yet valid":            hydra.Sign(t, trusted, "test-trusted", jose.RS256, with(valid, "nbf", time.Now().Add(10*time.Minute).Unix())),
		"without expiry":           hydra.Sign(t, trusted, "test-trusted", jose.RS256, with(valid, "exp", nil)),
		"another audience":         h.Token(t, c, []string{"role:o2ims-reader"}, []string{"another-api"}),
		"another issuer":           hydra.Sign(t, trusted, "test-trusted", jose.RS256, with(valid, "iss", "https://issuer.example")),
		"unknown kid":              hydra.Sign(t, other, "not-published", jose.RS256, valid),
		"another key, known kid":   hydra.Sign(t, other, "test-trusted", jose.RS256, valid),
		"HS256 with the key":       hydra.Sign(t, pub, "test-trusted", jose.HS256, valid),
		"bad signature":            sig[0] + "." + sig[1] + "." + flipped,
		"cluster API token":        e.Kapi.AdminToken,
		"junk for the TokenReview": "junk-token",
	}
	for name, token := range refused {
		x := e.Do(http.MethodGet, nbitest.CollectionPath, nil, nbitest.Bearer(token)...)
		require.Equal(t, http.StatusUnauthorized, x.Code(), "%s: %s", name, x.Body)
		challenge := x.Resp.Header.Get("WWW-Authenticate")
		require.True(t, strings.HasPrefix(challenge, `Bearer realm="o2ims", error="invalid_token"`), "%s: %s", name, challenge)
		t.Logf("%-26s %s", name, x.Problem(t).Status)
	}
	x := e.Do(http.MethodGet, nbitest.CollectionPath, nil)
	require.Equal(t, http.StatusUnauthorized, x.Code())
	require.Equal(t, `Bearer realm="o2ims"`, x.Resp.Header.Get("WWW-Authenticate"), "no credentials: no error code (RFC 6750 §3.1)")

	// Unknown kids cannot make the NBI hammer the issuer: past the first refresh, none within the hour.
	fetches := e.Srv.KeyFetches()
	for i := 0; i < 10; i++ {
		token := hydra.Sign(t, other, fmt.Sprintf("junk-kid-%d", i), jose.RS256, valid)
		require.Equal(t, http.StatusUnauthorized, e.Do(http.MethodGet, nbitest.CollectionPath, nil, nbitest.Bearer(token)...).Code())
	}
	require.Equal(t, fetches, e.Srv.KeyFetches(), "unknown kids within the refresh interval fetch nothing")

	// Refusals are kept briefly: the same junk again costs no TokenReview.
	before := e.AuthCalls()
	for i := 0; i < 5; i++ {
		require.Equal(t, http.StatusUnauthorized, e.Do(http.MethodGet, nbitest.CollectionPath, nil, nbitest.Bearer("junk-token")...).Code())
	}
	require.Equal(t, before, e.AuthCalls(), "a refused token is not reviewed again while its refusal is kept")

	secrets := []string{good}
	for _, tok := range refused {
		secrets = append(secrets, tok)
	}
	e.RequireNoSecretsLogged(secrets...)
	require.Positive(t, testutil.ToFloat64(e.Srv.AuthMetric().WithLabelValues("oauth", "unauthenticated")))
}

// Authentication attempts are rate-limited per client address: 20 distinct junk tokens cost at most the
// burst in TokenReviews, the rest answer 429 and are counted.
func TestAuthenticationAttemptsAreRateLimitedPerAddress(t *testing.T) {
	e := newEnv(t, nbitest.WithKubernetesAuth, func(c *nbi.Config) { c.AuthRate, c.AuthBurst = 0.01, 3 })
	before := e.AuthCalls()
	limited := 0
	for i := 0; i < 20; i++ {
		x := e.Do(http.MethodGet, nbitest.CollectionPath, nil, nbitest.Bearer("junk-"+strings.Repeat("x", i))...)
		if x.Code() == http.StatusTooManyRequests {
			limited++
			require.NotEmpty(t, x.Resp.Header.Get("Retry-After"))
			continue
		}
		require.Equal(t, http.StatusUnauthorized, x.Code())
	}
	require.Equal(t, 17, limited)
	require.LessOrEqual(t, e.AuthCalls()-before, 3, "at most the burst was reviewed")
	require.Equal(t, 17.0, testutil.ToFloat64(e.Srv.AuthMetric().WithLabelValues("none", "rate_limited")))
}

// Hydra rotates its signing key: the NBI takes the new key's tokens without a restart (an unknown kid
// fetches the keys again). Hydra stops: tokens of keys already fetched keep working; an NBI that never
// fetched a key refuses everything (fail closed).
func TestHydraKeyRotationAndOutage(t *testing.T) {
	h := hydra.Start(t)
	e := oauthEnv(t, h, nbi.AuthOAuth)
	scope := []string{"role:o2ims-reader"}
	c := h.CreateClient(t, "smo-rotation", scope, []string{audience})
	first := h.Token(t, c, scope, []string{audience})
	require.Equal(t, http.StatusOK, e.Do(http.MethodGet, nbitest.CollectionPath, nil, nbitest.Bearer(first)...).Code())

	h.RotateKeys(t)
	second := h.Token(t, c, scope, []string{audience})
	require.NotEqual(t, hydra.KeyID(t, first), hydra.KeyID(t, second), "Hydra signs with the new key")
	fetches := e.Srv.KeyFetches()
	require.Equal(t, http.StatusOK, e.Do(http.MethodGet, nbitest.CollectionPath, nil, nbitest.Bearer(second)...).Code())
	require.Equal(t, fetches+1, e.Srv.KeyFetches(), "one fetch for the new kid")

	unused := h.Token(t, c, scope, []string{audience}) // not presented yet: not in the NBI's cache
	h.Stop()
	require.Equal(t, http.StatusOK, e.Do(http.MethodGet, nbitest.CollectionPath, nil, nbitest.Bearer(unused)...).Code(),
		"Hydra down: the keys held still verify")
	unknown := hydra.Sign(t, rsaKey(t), "never-published", jose.RS256, forged(hydra.Claims(t, first)["iss"].(string), scope[0]))
	require.Equal(t, http.StatusUnauthorized, e.Do(http.MethodGet, nbitest.CollectionPath, nil, nbitest.Bearer(unknown)...).Code())

	fresh := oauthEnv(t, h, nbi.AuthOAuth)
	x := fresh.Do(http.MethodGet, nbitest.CollectionPath, nil, nbitest.Bearer(unused)...)
	require.Equal(t, http.StatusUnauthorized, x.Code(), "no key ever fetched: refused, %s", x.Body)
	require.Contains(t, x.Problem(t).Status, "could not be fetched")
}
