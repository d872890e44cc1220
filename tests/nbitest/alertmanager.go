package nbitest

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// AlertmanagerCapture is a webhook body Debian's real Alertmanager posted to the receiver, byte for byte:
// "firing" (one O2IMSNetBoxErrors alert) or "resolved" (its resolution) — testdata/reference/alertmanager,
// whose SOURCES.md says how it was captured. Tests post it, never a payload written by hand.
func AlertmanagerCapture(t testing.TB, name string) []byte {
	t.Helper()
	path, err := kubeapi.ReferenceFile("alertmanager/" + name + ".json")
	require.NoError(t, err)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return data
}

// AlertmanagerPayload is a captured body decoded, for a test that varies fields of it (encode it again
// with JSONBody); its "alerts" hold the one captured alert.
func AlertmanagerPayload(t testing.TB, name string) map[string]any {
	t.Helper()
	var p map[string]any
	require.NoError(t, json.Unmarshal(AlertmanagerCapture(t, name), &p))
	return p
}

// CapturedAlert is the one alert of a captured body, decoded (a fresh copy at each call).
func CapturedAlert(t testing.TB, name string) map[string]any {
	t.Helper()
	alerts, ok := AlertmanagerPayload(t, name)["alerts"].([]any)
	require.True(t, ok && len(alerts) == 1, "the capture %s holds one alert", name)
	return alerts[0].(map[string]any)
}
