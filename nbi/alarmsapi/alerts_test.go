package alarmsapi

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/nbi/alarms"
	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
)

// notify posts an Alertmanager notification (checked against the reference's AlertmanagerNotification).
func (e *env) notify(alerts ...map[string]any) *nbitest.Exchange {
	e.T.Helper()
	body := nbitest.JSONBody(e.T, map[string]any{
		"version": "4", "groupKey": "{}:{}", "truncatedAlerts": 0, "status": alerts[0]["status"], "receiver": "o2ims",
		"groupLabels": map[string]string{}, "commonLabels": map[string]string{}, "commonAnnotations": map[string]string{},
		"externalURL": "http://alertmanager.example:9093", "alerts": alerts,
	})
	nbitest.CheckAlertmanagerNotification(e.T, body)
	return e.send(http.MethodPost, AlertmanagerPath, body, "application/json")
}

func alert(status, fingerprint string, labels map[string]string) map[string]any {
	ends := "0001-01-01T00:00:00Z"
	if status == "resolved" {
		ends = time.Now().UTC().Format(time.RFC3339)
	}
	return map[string]any{
		"status": status, "labels": labels, "fingerprint": fingerprint,
		"annotations": map[string]string{"summary": "it " + status, "runbook_url": "https://runbooks.example/" + labels["alertname"]},
		"startsAt":    time.Now().Add(-time.Minute).UTC().Format(time.RFC3339), "endsAt": ends,
		"generatorURL": "http://prometheus.example:9090/graph",
	}
}

// Alerts Alertmanager posts become PrometheusAlertFiring alarms on what their labels name (a host, a
// request, else the O-Cloud), one record per alert however often it repeats; a resolved alert clears its
// alarm, and the raiser never does.
func TestAlertmanagerAlertsRaiseOneAlarmEachAndResolvedOnesClear(t *testing.T) {
	e := newEnv(t)
	req := e.request("alerted", "progressing", "waiting for the Cluster resource")
	alerts := []map[string]any{
		alert("firing", "a1", map[string]string{"alertname": "HostDiskFull", "severity": "critical", "netbox_device": "netbox-1"}),
		alert("firing", "a2", map[string]string{"alertname": "SomethingElse", "severity": "warning"}),
		alert("firing", "a3", map[string]string{"alertname": "RequestSlow", "provisioning_request": req}),
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
	require.Equal(t, "https://runbooks.example/HostDiskFull", host["extensions"].(map[string]any)["runbookUrl"])
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

	require.Equal(t, http.StatusNoContent, e.notify(alert("resolved", "a1", map[string]string{"alertname": "HostDiskFull", "netbox_device": "netbox-1"})).Code())
	e.requireCleared(id)
	require.Equal(t, 1.0, e.metric("o2ims_alarms_cleared_total", map[string]string{"definition": alarms.AlertFiring.Name, "how": "automatic"}))

	// What is not a version 4 notification is refused.
	bad := nbitest.JSONBody(t, map[string]any{"version": "3", "groupKey": "", "status": "firing", "receiver": "o2ims", "alerts": []any{}})
	require.Equal(t, http.StatusBadRequest, e.send(http.MethodPost, AlertmanagerPath, bad, "application/json").Code())
	bad = nbitest.JSONBody(t, map[string]any{"version": "4", "groupKey": "", "status": "firing", "receiver": "o2ims",
		"alerts": []any{map[string]any{"status": "firing", "labels": map[string]string{}}}})
	require.Equal(t, http.StatusBadRequest, e.send(http.MethodPost, AlertmanagerPath, bad, "application/json").Code())
}
