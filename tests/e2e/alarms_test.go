package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const monBase = "/o2ims-infrastructureMonitoring/v1"

// A request the chain fails raises ProvisioningRequestFailed through the binary with the shipped roles
// (the alarms' ConfigMap in the operator's namespace); the SMO acknowledges and clears it by hand. An
// alert Alertmanager posts is an alarm until it resolves.
func TestAFailedRequestAndAnAlertRaiseAlarmsThroughTheBinary(t *testing.T) {
	ctx := context.Background()
	manifest := filepath.Join(t.TempDir(), "fails.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(`apiVersion: o2ims.provisioning.oran.org/v1alpha1
kind: ProvisioningRequest
metadata:
  name: e2e-alarm
spec:
  name: fails
  description: more hosts than a role may have
  templateName: nephio-workload-cluster
  templateVersion: v3.0.0
  templateParameters:
    clusterName: edge-alarm
    hosts:
    - role: worker
      count: 2000000000
`), 0o600))
	out, err := st.KubectlRun(ctx, "create", "-f", manifest)
	require.NoError(t, err, out)
	t.Cleanup(func() {
		_, _ = st.KubectlRun(ctx, "delete", "provisioningrequests.o2ims.provisioning.oran.org", "e2e-alarm", "--wait=false")
	})

	list := operator.NBIURL + monBase + "/alarms?filter=" + url.QueryEscape("(eq,extensions/provisioningRequestId,e2e-alarm)")
	var alarms []map[string]any
	eventually(t, 60*time.Second, func() bool {
		code, _, body := call(t, http.MethodGet, list, nil)
		return code == http.StatusOK && json.Unmarshal(body, &alarms) == nil && len(alarms) == 1
	}, "no alarm for the failed request: %v", &alarms)
	a := alarms[0]
	ext := a["extensions"].(map[string]any)
	assert.Equal(t, "ProvisioningRequestFailed", ext["alarmName"])
	assert.Contains(t, ext["reason"], "at most 1000")
	id := a["alarmEventRecordId"].(string)

	patch := func(body string) int {
		req, err := http.NewRequest(http.MethodPatch, operator.NBIURL+monBase+"/alarms/"+id, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/merge-patch+json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, patch(`{"alarmAcknowledged": true}`))
	require.Equal(t, http.StatusOK, patch(`{"perceivedSeverity": 5}`))
	code, _, body := call(t, http.MethodGet, operator.NBIURL+monBase+"/alarms/"+id, nil)
	require.Equal(t, http.StatusOK, code)
	require.NoError(t, json.Unmarshal(body, &a))
	assert.Equal(t, true, a["alarmAcknowledged"])
	assert.Contains(t, a, "alarmClearedTime")

	// The dictionary that defines it.
	code, _, body = call(t, http.MethodGet, operator.NBIURL+invBase+"/alarmDictionaries?filter="+url.QueryEscape("(eq,entityType,deploymentManager)"), nil)
	require.Equal(t, http.StatusOK, code, string(body))
	assert.Contains(t, string(body), a["alarmDefinitionID"].(string))

	// Alertmanager's webhook: a firing alert is an alarm on the O-Cloud, its resolution clears it.
	post := func(status string) {
		code, _, body := call(t, http.MethodPost, operator.NBIURL+monBase+"/alertmanager", map[string]any{
			"version": "4", "groupKey": "{}:{}", "status": status, "receiver": "o2ims",
			"alerts": []any{map[string]any{"status": status, "fingerprint": "e2e0001",
				"labels":   map[string]string{"alertname": "O2IMSOperatorNotReady", "severity": "warning"},
				"startsAt": time.Now().UTC().Format(time.RFC3339)}},
		})
		require.Equal(t, http.StatusNoContent, code, string(body))
	}
	post("firing")
	amList := operator.NBIURL + monBase + "/alarms?filter=" + url.QueryEscape("(eq,extensions/alertname,O2IMSOperatorNotReady)")
	code, _, body = call(t, http.MethodGet, amList, nil)
	require.Equal(t, http.StatusOK, code)
	require.NoError(t, json.Unmarshal(body, &alarms))
	require.Len(t, alarms, 1, string(body))
	assert.EqualValues(t, 3, alarms[0]["perceivedSeverity"])
	post("resolved")
	_, _, body = call(t, http.MethodGet, amList, nil)
	require.NoError(t, json.Unmarshal(body, &alarms))
	assert.Contains(t, alarms[0], "alarmClearedTime")

	log, _ := os.ReadFile(operator.Log)
	assert.NotContains(t, strings.ToLower(string(log)), "forbidden", "the shipped roles lacked a permission")
}
