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
		Auth: AuthNone, PageSize: 1000,
	}, cfg)
}

func TestConfigFromEnv(t *testing.T) {
	cfg, err := ConfigFromEnv(getenv(map[string]string{
		"NBI_HOST": "0.0.0.0", "NBI_PORT": "0", "NBI_SHUTDOWN_TIMEOUT": "2.5", "NBI_API_TIMEOUT": "30",
		"NBI_AUTH": "Kubernetes", "NBI_TLS_CERT_FILE": "/tls/tls.crt", "NBI_TLS_KEY_FILE": "/tls/tls.key",
		"NBI_PAGE_SIZE": "50",
	}))
	require.NoError(t, err)
	require.Equal(t, Config{
		Host: "0.0.0.0", Port: 0, ShutdownTimeout: 2500 * time.Millisecond, APITimeout: 30 * time.Second,
		Auth: AuthKubernetes, TLSCertFile: "/tls/tls.crt", TLSKeyFile: "/tls/tls.key", PageSize: 50,
	}, cfg)
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
	} {
		_, err := ConfigFromEnv(getenv(c.vars))
		require.Error(t, err, c.variable)
		require.Contains(t, err.Error(), c.variable)
		require.NotContains(t, err.Error(), "\n", "one line")
	}
}
