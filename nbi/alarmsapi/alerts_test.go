package alarmsapi

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/alarms"
	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
)

// notify posts an Alertmanager notification: the one Debian's real Alertmanager posted
// (nbitest.AlertmanagerCapture) of the first alert's status, carrying alerts in place of its own; checked
// against the reference's AlertmanagerNotification.
func (e *env) notify(alerts ...map[string]any) *nbitest.Exchange {
	e.T.Helper()
	payload := nbitest.AlertmanagerPayload(e.T, alerts[0]["status"].(string))
	payload["alerts"] = alerts
	body := nbitest.JSONBody(e.T, payload)
	nbitest.CheckAlertmanagerNotification(e.T, body)
	return e.send(http.MethodPost, AlertmanagerPath, body, "application/json")
}

// alert is the captured alert of that status (firing, or its resolution) with these labels and
// fingerprint in place of its own.
func alert(t testing.TB, status, fingerprint string, labels map[string]string) map[string]any {
	a := nbitest.CapturedAlert(t, status)
	a["labels"], a["fingerprint"] = labels, fingerprint
	return a
}

// Alerts Alertmanager posts become PrometheusAlertFiring alarms on what their labels name (a host, a
// request, else the O-Cloud), one record per alert however often it repeats; a resolved alert clears its
// alarm, and the raiser never does.
func TestAlertmanagerAlertsRaiseOneAlarmEachAndResolvedOnesClear(t *testing.T) {
	e := newEnv(t)
	req := e.request("alerted", "progressing", "waiting for the Cluster resource")
	alerts := []map[string]any{
		alert(t, "firing", "a1", map[string]string{"alertname": "HostDiskFull", "severity": "critical", "netbox_device": "netbox-1"}),
		alert(t, "firing", "a2", map[string]string{"alertname": "SomethingElse", "severity": "warning"}),
		alert(t, "firing", "a3", map[string]string{"alertname": "RequestSlow", "provisioning_request": req}),
	}
	for range 2 { // Alertmanager repeats: the same records
		require.Equal(t, http.StatusNoContent, e.notify(alerts...).Code())
	}
	got := map[string]map[string]any{}
	for _, a := range e.alarmsOf(alarms.AlertFiring) {
		got[a["extensions"].(map[string]any)["alertname"].(string)] = a
	}
	require.Len(t, got, 3)
	host := got["HostDiskFull"]
	require.Equal(t, e.cfg.ResourceID(1), host["resourceID"])
	require.Equal(t, e.view.Snapshot().Types[0].ID, host["resourceTypeID"])
	require.EqualValues(t, alarms.SeverityCritical, host["perceivedSeverity"])
	annotations := nbitest.CapturedAlert(t, "firing")["annotations"].(map[string]any)
	require.Equal(t, annotations["runbook_url"], host["extensions"].(map[string]any)["runbookUrl"])
	require.Equal(t, annotations["summary"], host["extensions"].(map[string]any)["summary"])
	require.Equal(t, e.cfg.OCloudID.String(), got["SomethingElse"]["resourceID"])
	require.EqualValues(t, alarms.SeverityWarning, got["SomethingElse"]["perceivedSeverity"])
	require.Equal(t, e.cfg.OCloudID.String(), got["RequestSlow"]["resourceID"], "no deployment manager: the O-Cloud")
	require.Equal(t, req, got["RequestSlow"]["extensions"].(map[string]any)["provisioningRequestId"])
	require.Equal(t, 3.0, e.metric("o2ims_alarms_raised_total", map[string]string{"definition": alarms.AlertFiring.Name}))

	id := host["alarmEventRecordId"].(string)
	e.acknowledge(id)
	require.Equal(t, http.StatusConflict, e.patch(v1+"/alarms/"+id, clear).Code(), "resolved by Alertmanager, not by hand")
	e.evaluate()
	require.Len(t, e.get(v1+"/alarms?filter="+url.QueryEscape("(neq,perceivedSeverity,5)")).Items(t), 3, "the raiser leaves alerts alone")

	require.Equal(t, http.StatusNoContent, e.notify(alert(t, "resolved", "a1", map[string]string{"alertname": "HostDiskFull", "netbox_device": "netbox-1"})).Code())
	e.requireCleared(id)
	require.Equal(t, 1.0, e.metric("o2ims_alarms_cleared_total", map[string]string{"definition": alarms.AlertFiring.Name, "how": "automatic"}))

	// What is not a version 4 notification is refused, nor an alert without an alertname.
	v3 := nbitest.AlertmanagerPayload(t, "firing")
	v3["version"] = "3"
	require.Equal(t, http.StatusBadRequest, e.send(http.MethodPost, AlertmanagerPath, nbitest.JSONBody(t, v3), "application/json").Code())
	unnamed := nbitest.AlertmanagerPayload(t, "firing")
	delete(unnamed["alerts"].([]any)[0].(map[string]any)["labels"].(map[string]any), "alertname")
	require.Equal(t, http.StatusBadRequest, e.send(http.MethodPost, AlertmanagerPath, nbitest.JSONBody(t, unnamed), "application/json").Code())
	require.Equal(t, http.StatusNoContent, e.send(http.MethodPost, AlertmanagerPath, nbitest.AlertmanagerCapture(t, "firing"), "application/json").Code(),
		"the capture itself is accepted: the refusals above are the field each one changed")
}
