package hosts

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Metal3's errorMessage is someone else's text: one line, no BMC address or credentials, no token, bounded.
func TestMetal3ErrorMessageIsSanitised(t *testing.T) {
	bmh := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{
		"operationalStatus": "error", "errorType": "registration error",
		"errorMessage": "Failed to get power state for https://admin:hunter2@10.0.0.9/redfish/v1/Systems/1\n" +
			"Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123456789 " + strings.Repeat("x", 2000),
	}}}
	ready, detail := hostReady(bmh)
	assert.False(t, ready)
	assert.NotContains(t, detail, "hunter2")
	assert.NotContains(t, detail, "10.0.0.9")
	assert.NotContains(t, detail, "abcdefghijklmnopqrstuvwxyz0123456789")
	assert.NotContains(t, detail, "\n")
	assert.LessOrEqual(t, len([]rune(detail)), maxMetal3Message)
	assert.True(t, strings.HasPrefix(detail, "registration error: Failed to get power state"), detail)
}

// Only Metal3's registration error on a host being registered sets a host aside: not a host already
// provisioned (a cluster's machine), not other errors, not an errorType left over once the host is OK.
func TestCredentialsRefusedIsMetal3sRegistrationError(t *testing.T) {
	for _, tc := range []struct {
		op, errType string
		want        bool
	}{
		{"error", "registration error", true},
		{"error", "provisioned registration error", false},
		{"error", "inspection error", false},
		{"error", "power management error", false},
		{"OK", "registration error", false},
		{"discovered", "", false},
		{"", "", false},
	} {
		bmh := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{
			"operationalStatus": tc.op, "errorType": tc.errType, "errorMessage": "x",
			"provisioning": map[string]any{"state": "registering"},
		}}}
		assert.Equal(t, tc.want, inRegistrationError(bmh), "%q/%q", tc.op, tc.errType)
	}
}
