package smoclient

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfigFromEnv(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	full := map[string]string{
		"SMO_OAUTH_TOKEN_URL": "https://auth.example.com/oauth2/token", "SMO_OAUTH_CLIENT_ID": "ocloud",
		"SMO_OAUTH_CLIENT_SECRET_FILE": "/etc/smo/secret", "SMO_OAUTH_SCOPES": "o2ims:notify, role:smo", "SMO_OAUTH_AUDIENCE": "smo",
		"SMO_TLS_CERT_FILE": "/etc/smo/tls.crt", "SMO_TLS_KEY_FILE": "/etc/smo/tls.key", "SMO_CA_FILE": "/etc/smo/ca.pem",
		"SMO_REGISTRATION_URL": "https://smo.example.com/ocloud/available",
	}
	c, err := ConfigFromEnv(env(full))
	require.NoError(t, err)
	assert.Equal(t, Config{TokenURL: full["SMO_OAUTH_TOKEN_URL"], ClientID: "ocloud", SecretFile: "/etc/smo/secret",
		Scopes: []string{"o2ims:notify", "role:smo"}, Audience: "smo", CertFile: "/etc/smo/tls.crt", KeyFile: "/etc/smo/tls.key",
		CAFiles: []string{"/etc/smo/ca.pem"}, RegistrationURL: full["SMO_REGISTRATION_URL"]}, c)
	c, err = ConfigFromEnv(env(nil))
	require.NoError(t, err, "nothing is required")
	assert.False(t, c.OAuth())

	for name, kv := range map[string]map[string]string{
		"SMO_OAUTH_TOKEN_URL":          {"SMO_OAUTH_TOKEN_URL": "http://auth.example.com/token", "SMO_OAUTH_CLIENT_ID": "a", "SMO_OAUTH_CLIENT_SECRET_FILE": "s"},
		"SMO_OAUTH_CLIENT_SECRET_FILE": {"SMO_OAUTH_TOKEN_URL": "https://auth.example.com/token", "SMO_OAUTH_CLIENT_ID": "a"},
		"need SMO_OAUTH_TOKEN_URL":     {"SMO_OAUTH_CLIENT_ID": "a"},
		"SMO_TLS_KEY_FILE":             {"SMO_TLS_CERT_FILE": "c"},
		"SMO_REGISTRATION_URL":         {"SMO_REGISTRATION_URL": "smo.example.com/available"},
	} {
		_, err := ConfigFromEnv(env(kv))
		require.ErrorContains(t, err, name)
	}
	_, err = ConfigFromEnv(env(map[string]string{"SMO_OAUTH_TOKEN_URL": "http://127.0.0.1:4444/oauth2/token", "SMO_OAUTH_CLIENT_ID": "a", "SMO_OAUTH_CLIENT_SECRET_FILE": "s"}))
	require.NoError(t, err, "plain http on loopback (tests, the local run)")
}

// An access token never travels in clear text beyond this machine, whatever the callback says.
func TestTheTokenIsNotSentOverPlainHTTP(t *testing.T) {
	var fetched int
	b := &bearer{next: http.DefaultTransport, tokens: newTokens(Config{}, nil, func(string) { fetched++ })}
	req, _ := http.NewRequest(http.MethodPost, "http://smo.example.com/cb", http.NoBody)
	_, err := b.RoundTrip(req)
	require.ErrorIs(t, err, errPlainHTTP)
	assert.Zero(t, fetched, "no token was even asked for")
}
