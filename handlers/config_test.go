package handlers

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Repository and namespace names are checked as Kubernetes checks them (DNS-1123), so a bad one fails at
// start with the variable named and the rule broken, not as a failed write per request.
func TestConfigFromEnvRefusesNamesKubernetesWouldRefuse(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	cfg, err := ConfigFromEnv(env(nil))
	require.NoError(t, err)
	assert.Equal(t, "catalog-infra-capi", cfg.UpstreamRepo)
	assert.Equal(t, "metal3", cfg.Metal3Namespace)

	_, err = ConfigFromEnv(env(map[string]string{"UPSTREAM_PKG_REPO": "blueprints.example", "CLUSTER_NAMESPACE": "edge-1"}))
	assert.NoError(t, err, "a dotted repository name is a valid object name")

	for name, value := range map[string]string{
		"UPSTREAM_PKG_REPO":         "Catalog",
		"DOWNSTREAM_PKG_REPO":       "mgmt/x",
		"PACKAGEVARIANT_NAMESPACE":  "team a",
		"CLUSTER_NAMESPACE":         "edge.1",
		"METAL3_NAMESPACE":          "-metal3",
		"BMC_CREDENTIALS_NAMESPACE": "o2ims_bmc",
	} {
		_, err := ConfigFromEnv(env(map[string]string{name: value}))
		require.Error(t, err, "%s=%q", name, value)
		prefix := name + ` "` + value + `" is not a valid name: `
		assert.Contains(t, err.Error(), prefix)
		assert.Greater(t, len(err.Error()), len(prefix)+10, "the message says which rule: %v", err)
	}
}
