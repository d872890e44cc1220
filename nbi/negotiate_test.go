package nbi

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNegotiate(t *testing.T) {
	for accept, want := range map[string]string{
		"":                 mediaJSON,
		"application/json": mediaJSON,
		"application/yaml": mediaYAML,
		"*/*":              mediaJSON,
		"application/*":    mediaJSON,
		"application/yaml;q=0.5, application/json;q=0.4": mediaYAML,
		"application/json;q=0.5, application/yaml":       mediaYAML,
		"application/yaml;q=0, */*":                      mediaJSON,
		"text/html, application/yaml;q=0.1":              mediaYAML,
		"text/html, nonsense/;;, application/json":       mediaJSON,
	} {
		got, ok := Negotiate(accept)
		require.True(t, ok, accept)
		require.Equal(t, want, got, accept)
	}
	for _, accept := range []string{"text/html", "application/json;q=0", "application/xml, text/*", "*/*;q=0"} {
		_, ok := Negotiate(accept)
		require.False(t, ok, accept)
	}
}
