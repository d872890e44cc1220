package app

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A wrong SMO_* setting stops the operator at start with one line naming it, before anything connects.
func TestBadSMOSettingsAreOneLineAndExitOne(t *testing.T) {
	for want, env := range map[string]map[string]string{
		"SMO_REGISTRATION_URL needs NETBOX_URL":  {"SMO_REGISTRATION_URL": "https://smo.example.com/available"},
		"SMO_OAUTH_TOKEN_URL=":                   {"SMO_OAUTH_TOKEN_URL": "http://auth.example.com/token", "SMO_OAUTH_CLIENT_ID": "a", "SMO_OAUTH_CLIENT_SECRET_FILE": "s"},
		"SMO_TLS_CERT_FILE and SMO_TLS_KEY_FILE": {"SMO_TLS_KEY_FILE": "/etc/smo/tls.key"},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), nil, func(k string) string { return env[k] }, io.Discard, &stderr)
		assert.Equal(t, 1, code, want)
		assert.Contains(t, stderr.String(), want)
		assert.Equal(t, 1, bytes.Count(stderr.Bytes(), []byte("\n")), stderr.String())
	}
}

// The registration announces OCLOUD_SERVICE_URI as IMS_EP: without it there is nothing to announce.
func TestRegistrationNeedsTheServiceURI(t *testing.T) {
	env := map[string]string{"SMO_REGISTRATION_URL": "https://smo.example.com/available"}
	assert.ErrorIs(t, checkSMOConfig(func(k string) string { return env[k] }, true), errNeedsServiceURI)
	env["OCLOUD_SERVICE_URI"] = "https://o2ims.example.com"
	assert.NoError(t, checkSMOConfig(func(k string) string { return env[k] }, true))
}
