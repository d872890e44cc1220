package nbi

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func getenv(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestConfigDefaults(t *testing.T) {
	cfg, err := ConfigFromEnv(getenv(nil))
	require.NoError(t, err)
	require.Equal(t, Config{
		Host: "127.0.0.1", Port: 5000, ShutdownTimeout: 3 * time.Second, APITimeout: 10 * time.Second,
		Auth: AuthNone, PageSize: 1000, TokenAudiences: []string{"o2ims-nbi"}, AuthRate: 10, AuthBurst: 50,
		OAuth: OAuthConfig{UsernameClaim: "sub", GroupsClaim: "groups", Algorithms: DefaultSigningAlgorithms, JWKSRefresh: 5 * time.Minute},
	}, cfg)
}

func TestConfigFromEnv(t *testing.T) {
	cfg, err := ConfigFromEnv(getenv(map[string]string{
		"NBI_HOST": "0.0.0.0", "NBI_PORT": "0", "NBI_SHUTDOWN_TIMEOUT": "2.5", "NBI_API_TIMEOUT": "30",
		"NBI_AUTH": "Kubernetes", "NBI_TLS_CERT_FILE": "/tls/tls.crt", "NBI_TLS_KEY_FILE": "/tls/tls.key",
		"NBI_PAGE_SIZE": "50",
	}))
	require.NoError(t, err)
	want := DefaultConfig()
	want.Host, want.Port, want.ShutdownTimeout, want.APITimeout = "0.0.0.0", 0, 2500*time.Millisecond, 30*time.Second
	want.Auth, want.TLSCertFile, want.TLSKeyFile, want.PageSize = AuthKubernetes, "/tls/tls.crt", "/tls/tls.key", 50
	require.Equal(t, want, cfg)
}

func TestOAuthConfigFromEnv(t *testing.T) {
	cfg, err := ConfigFromEnv(getenv(map[string]string{
		"NBI_AUTH": "oauth, kubernetes", "OAUTH_ISSUER_URL": "https://sso.example/realms/oran", "OAUTH_AUDIENCE": "o2ims",
		"OAUTH_USERNAME_CLAIM": "client_id", "OAUTH_GROUPS_CLAIM": "roles", "OAUTH_SIGNING_ALGS": "RS256,ES256",
		"NBI_TLS_CERT_FILE": "/tls.crt", "NBI_TLS_KEY_FILE": "/tls.key", "NBI_TLS_CLIENT_CA_FILE": "/ca.crt",
		"OAUTH_CERT_BOUND": "true", "NBI_TOKEN_AUDIENCES": "a, b", "NBI_AUTH_RATE": "2.5", "NBI_AUTH_BURST": "7",
	}))
	require.NoError(t, err)
	require.Equal(t, []string{AuthOAuth, AuthKubernetes}, cfg.authModes())
	require.Equal(t, OAuthConfig{IssuerURL: "https://sso.example/realms/oran", Audience: "o2ims", UsernameClaim: "client_id",
		GroupsClaim: "roles", CertBound: true, Algorithms: []string{"RS256", "ES256"}, JWKSRefresh: 5 * time.Minute}, cfg.OAuth)
	require.Equal(t, []string{"a", "b"}, cfg.TokenAudiences)
	require.Equal(t, "/ca.crt", cfg.ClientCAFile)
	require.Equal(t, 2.5, cfg.AuthRate)
	require.Equal(t, 7, cfg.AuthBurst)
}

func TestConfigErrorsNameTheVariable(t *testing.T) {
	for _, c := range []struct {
		variable string
		vars     map[string]string
	}{
		{"NBI_PORT", map[string]string{"NBI_PORT": "http"}},
		{"NBI_PORT", map[string]string{"NBI_PORT": "70000"}},
		{"NBI_SHUTDOWN_TIMEOUT", map[string]string{"NBI_SHUTDOWN_TIMEOUT": "0"}},
		{"NBI_API_TIMEOUT", map[string]string{"NBI_API_TIMEOUT": "-1"}},
		{"NBI_API_TIMEOUT", map[string]string{"NBI_API_TIMEOUT": "NaN"}},
		{"NBI_AUTH", map[string]string{"NBI_AUTH": "basic"}},
		{"NBI_TLS_KEY_FILE", map[string]string{"NBI_TLS_CERT_FILE": "/tls.crt"}},
		{"NBI_PAGE_SIZE", map[string]string{"NBI_PAGE_SIZE": "0"}},
		{"NBI_HOST", map[string]string{"NBI_HOST": "127.0.0.1:5000"}},
		{"NBI_AUTH", map[string]string{"NBI_AUTH": "none,kubernetes"}},
		{"OAUTH_ISSUER_URL", map[string]string{"NBI_AUTH": "oauth", "OAUTH_AUDIENCE": "a"}},
		{"OAUTH_ISSUER_URL", map[string]string{"NBI_AUTH": "oauth", "OAUTH_AUDIENCE": "a", "OAUTH_ISSUER_URL": "http://sso.example"}},
		{"OAUTH_AUDIENCE", map[string]string{"NBI_AUTH": "oauth", "OAUTH_ISSUER_URL": "https://sso.example"}},
		{"OAUTH_SIGNING_ALGS", map[string]string{"NBI_AUTH": "oauth", "OAUTH_ISSUER_URL": "https://sso.example", "OAUTH_AUDIENCE": "a", "OAUTH_SIGNING_ALGS": "RS256,HS256"}},
		{"OAUTH_SIGNING_ALGS", map[string]string{"NBI_AUTH": "oauth", "OAUTH_ISSUER_URL": "https://sso.example", "OAUTH_AUDIENCE": "a", "OAUTH_SIGNING_ALGS": "none"}},
		{"OAUTH_CERT_BOUND", map[string]string{"OAUTH_CERT_BOUND": "yes please"}},
		{"NBI_TLS_CLIENT_CA_FILE", map[string]string{"NBI_TLS_CLIENT_CA_FILE": "/ca.crt"}},
		{"NBI_AUTH_RATE", map[string]string{"NBI_AUTH_RATE": "-1"}},
		{"NBI_AUTH_BURST", map[string]string{"NBI_AUTH_BURST": "0"}},
	} {
		_, err := ConfigFromEnv(getenv(c.vars))
		require.Error(t, err, c.variable)
		require.Contains(t, err.Error(), c.variable)
		require.NotContains(t, err.Error(), "\n", "one line")
	}
}
