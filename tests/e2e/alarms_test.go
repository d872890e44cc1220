package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/o2ims-operator/o2ims-operator/subscriptions/smo"
	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
	"github.com/o2ims-operator/o2ims-operator/tests/stack"
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
	post := func(status string) { postAlert(t, operator.NBIURL, "e2e0001", "O2IMSOperatorNotReady", status) }
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

// SIGKILL between two raises and their delivery: the restarted binary notifies both, in the order raised,
// then the clearing — the alarm subscription's ConfigMap holds what the SMO was last told.
func TestAlarmsUndeliveredAtSIGKILLAreNotifiedAfterRestartInOrder(t *testing.T) {
	ctx := context.Background()
	smoRecv := smo.New()
	defer smoRecv.Close()
	code, _, body := call(t, http.MethodPost, operator.NBIURL+monBase+"/alarmSubscriptions", map[string]any{"callback": smoRecv.URL()})
	require.Equal(t, http.StatusCreated, code, string(body))
	var sub map[string]any
	require.NoError(t, json.Unmarshal(body, &sub))
	id := sub["alarmSubscriptionId"].(string)
	defer func() { call(t, http.MethodDelete, operator.NBIURL+monBase+"/alarmSubscriptions/"+id, nil) }()
	eventually(t, 10*time.Second, func() bool {
		cm, err := st.API.AdminClientset().CoreV1().ConfigMaps("o2ims").Get(ctx, "o2ims-alarm-subscription-"+id, metav1.GetOptions{})
		return err == nil && len(cm.BinaryData["progress.json.gz"]) > 0
	}, "the subscription's progress was never written")

	post := func(fingerprint, alertname, status string) {
		t.Helper()
		postAlert(t, operator.NBIURL, fingerprint, alertname, status)
	}
	smoRecv.Fail(http.StatusServiceUnavailable)
	post("e2ekill01", "O2IMSKillFirst", "firing")
	time.Sleep(20 * time.Millisecond) // a later alarmChangedTime (milliseconds)
	post("e2ekill02", "O2IMSKillSecond", "firing")
	defer post("e2ekill02", "O2IMSKillSecond", "resolved")
	eventually(t, 20*time.Second, func() bool { return smoRecv.Attempts() > 0 }, "the raise was never tried")

	operator.Kill()
	restarted, err := st.StartOperator(ctx, map[string]string{"PROVISIONING_REQUEST_SELECTOR": "!" + privateLabel})
	require.NoError(t, err)
	operator = restarted
	smoRecv.Fail(0)
	post("e2ekill01", "O2IMSKillFirst", "resolved")

	events := func() []string {
		var out []string
		for _, n := range smoRecv.Notifications() {
			ext, _ := n.Body["extensions"].(map[string]any)
			if name, _ := ext["alertname"].(string); strings.HasPrefix(name, "O2IMSKill") {
				out = append(out, fmt.Sprintf("%v %s", n.Body["notificationEventType"], name))
			}
		}
		return out
	}
	eventually(t, 60*time.Second, func() bool { return len(events()) >= 3 }, "not all delivered after the restart: %v", lazy(func() string { return fmt.Sprint(events()) }))
	time.Sleep(500 * time.Millisecond)
	assert.Equal(t, []string{"0 O2IMSKillFirst", "0 O2IMSKillSecond", "2 O2IMSKillFirst"}, events(),
		"raised before the SIGKILL, delivered after it in the order raised, then the clearing; nothing twice")
}

// Failover of the alarm notifications between two leader-elected binaries (as manifests/ha runs them; the
// shared operator, which is not leader-elected and would deliver too, stopped meanwhile): an alert raised
// while the callback refuses is being delivered by the leader when it is SIGKILLed; the survivor takes the
// Lease and delivers it from the subscription's persisted progress, then its clearing; nothing twice.
func TestAlarmNotificationsFailOverToTheSurvivingReplica(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, operator.Stop(10*time.Second))
	defer func() {
		restarted, err := st.StartOperator(ctx, map[string]string{"PROVISIONING_REQUEST_SELECTOR": "!" + privateLabel})
		require.NoError(t, err)
		operator = restarted
	}()
	env := map[string]string{"PROVISIONING_REQUEST_SELECTOR": privateLabel + "=alarm-failover"}
	args := []string{"--leader-elect", "--leader-elect-id=e2e-alarm-failover"}
	a, err := st.StartOperatorWith(ctx, env, args)
	require.NoError(t, err)
	defer func() { _ = a.Stop(5 * time.Second) }()
	b, err := st.StartOperatorWith(ctx, env, args)
	require.NoError(t, err)
	defer func() { _ = b.Stop(5 * time.Second) }()
	var leader, survivor *stack.Operator
	eventually(t, 30*time.Second, func() bool {
		ma, errA := a.Scrape()
		mb, errB := b.Scrape()
		if errA != nil || errB != nil {
			return false
		}
		switch la, lb := ma.Sum("leader_election_master_status", nil), mb.Sum("leader_election_master_status", nil); {
		case la == 1 && lb == 0:
			leader, survivor = a, b
		case la == 0 && lb == 1:
			leader, survivor = b, a
		}
		return leader != nil
	}, "never exactly one leader")

	smoRecv := smo.New()
	defer smoRecv.Close()
	// Subscribed through the replica that does not lead: the leader's poll finds it.
	code, _, body := call(t, http.MethodPost, survivor.NBIURL+monBase+"/alarmSubscriptions", map[string]any{"callback": smoRecv.URL()})
	require.Equal(t, http.StatusCreated, code, string(body))
	var sub map[string]any
	require.NoError(t, json.Unmarshal(body, &sub))
	id := sub["alarmSubscriptionId"].(string)
	defer func() { call(t, http.MethodDelete, survivor.NBIURL+monBase+"/alarmSubscriptions/"+id, nil) }()

	post := func(nbiURL, status string) {
		t.Helper()
		postAlert(t, nbiURL, "e2efailover01", "O2IMSFailoverAlert", status)
	}
	smoRecv.Fail(http.StatusServiceUnavailable)
	post(leader.NBIURL, "firing")
	eventually(t, 30*time.Second, func() bool { return smoRecv.Attempts() > 0 }, "the leader never tried the raise")
	leader.Kill()
	smoRecv.Fail(0)
	events := func() []string {
		var out []string
		for _, n := range smoRecv.Notifications() {
			ext, _ := n.Body["extensions"].(map[string]any)
			if ext["alertname"] == "O2IMSFailoverAlert" {
				out = append(out, fmt.Sprint(n.Body["notificationEventType"]))
			}
		}
		return out
	}
	eventually(t, leaseDuration+30*time.Second, func() bool { return len(events()) >= 1 }, "the survivor never delivered the raise")
	post(survivor.NBIURL, "resolved")
	eventually(t, 30*time.Second, func() bool { return len(events()) >= 2 }, "the clearing was never delivered")
	time.Sleep(500 * time.Millisecond)
	assert.Equal(t, []string{"0", "2"}, events(), "NEW by the survivor after the failover, then CLEAR; nothing twice")
}

// postAlert posts to the NBI's Alertmanager webhook what the real Alertmanager posted (the capture of
// status, "firing" or "resolved": nbitest.AlertmanagerCapture), renamed to alertname with fingerprint
// and severity warning, wherever the capture names its alert.
func postAlert(t *testing.T, nbiURL, fingerprint, alertname, status string) {
	t.Helper()
	p := nbitest.AlertmanagerPayload(t, status)
	alert := p["alerts"].([]any)[0].(map[string]any)
	alert["fingerprint"] = fingerprint
	for _, labels := range []any{alert["labels"], p["groupLabels"], p["commonLabels"]} {
		if m, ok := labels.(map[string]any); ok {
			if _, named := m["alertname"]; named {
				m["alertname"] = alertname
			}
			if _, graded := m["severity"]; graded {
				m["severity"] = "warning"
			}
		}
	}
	alert["labels"].(map[string]any)["severity"] = "warning"
	code, _, body := call(t, http.MethodPost, nbiURL+monBase+"/alertmanager", p)
	require.Equal(t, http.StatusNoContent, code, string(body))
}
