package alarmsapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/alarms"
	"github.com/o2ims-operator/o2ims-operator/subscriptions/smo"
)

// getRaw reads path without the 1.x reference check: no 2.0.0 reference exists (oran-o2ims serves
// the monitoring API under v1 only), so a v2 record is checked against its v1 twin instead.
func (e *env) getRaw(path string) (int, []byte) {
	e.T.Helper()
	resp, err := e.Client.Get(e.Base + path)
	require.NoError(e.T, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(e.T, err)
	return resp.StatusCode, b
}

// Under v2 (both spellings) an alarm is 2.0.0's AlarmEventRecord (O2IMS clause 3.3.6.2.2): the same
// values as its v1 record (checked against oran-o2ims's reference) under 2.0.0's names, objectClass
// naming the class of the alarmed object; v2's filters and selectors take 2.0.0's names only.
func TestV2AnswersAlarmsIn200Shapes(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.sim.SetStatus(1, "failed"))
	require.NoError(t, e.refresh())
	e.evaluate()
	id := e.only(alarms.HostQuarantined)["alarmEventRecordId"].(string)
	e.acknowledge(id)
	old := e.get(v1 + "/alarms/" + id).Object(t)

	back := map[string]string{
		"objectTypeId": "resourceTypeID", "objectId": "resourceID", "alarmDefinitionId": "alarmDefinitionID",
		"probableCauseId": "probableCauseID", "alarmAcknowledgeTime": "alarmAcknowledgedTime",
	}
	for _, root := range []string{Root, RootSpec} {
		code, body := e.getRaw(root + "/v2/alarms/" + id)
		require.Equal(t, http.StatusOK, code, string(body))
		var rec map[string]any
		require.NoError(t, json.Unmarshal(body, &rec))
		require.Equal(t, "oran.o2ims.inventory.Resource", rec["objectClass"])
		require.Equal(t, e.cfg.ResourceID(1), rec["objectId"])
		for _, gone := range []string{"resourceID", "resourceTypeID", "alarmAcknowledgedTime", "alarmDefinitionID", "probableCauseID"} {
			require.NotContains(t, rec, gone)
		}
		twin := map[string]any{}
		for k, v := range rec {
			if k == "objectClass" {
				continue
			}
			if to, ok := back[k]; ok {
				k = to
			}
			twin[k] = v
		}
		require.Equal(t, old, twin, "the v1 record under 2.0.0's names")

		code, body = e.getRaw(root + "/v2/alarms?filter=" + url.QueryEscape("(eq,objectClass,oran.o2ims.inventory.Resource);(eq,objectId,"+e.cfg.ResourceID(1)+")"))
		require.Equal(t, http.StatusOK, code, string(body))
		var list []map[string]any
		require.NoError(t, json.Unmarshal(body, &list))
		require.Len(t, list, 1)
		code, _ = e.getRaw(root + "/v2/alarms?filter=" + url.QueryEscape("(eq,resourceID,"+e.cfg.ResourceID(1)+")"))
		require.Equal(t, http.StatusBadRequest, code, "1.x names are not 2.0.0's")
	}
	require.Equal(t, "oran.o2ims.inventory.OCloud", alarms.ObjectClass("alert"), "anything else is the O-Cloud's")
}

// A subscription made under v2 is notified in 2.0.0's Alarm Change Notification (Table 3.3.5.1.2-1),
// one made under v1 in the reference's, of the same events; the subscription keeps its major across
// the store (the notifier reads it back from the ConfigMap).
func TestV2SubscribersAreNotifiedIn200Shapes(t *testing.T) {
	e := newEnv(t)
	old, cur := smo.New(), smo.New()
	defer old.Close()
	defer cur.Close()
	e.subscribe(old.URL(), "")
	const consumer = "5b8a2d0e-8a64-4b8e-9d4e-2f5f0d0a1c11"
	b, _ := json.Marshal(map[string]any{"callback": cur.URL(), "consumerSubscriptionId": consumer})
	x := e.send(http.MethodPost, RootSpec+"/v2/alarmSubscriptions", b, "application/json")
	require.Equal(t, http.StatusCreated, x.Code(), string(x.Body))
	require.NotContains(t, x.Object(t), "apiMajor", "the major is the operator's, not an AlarmSubscriptionInfo member")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.notifier(ctx)

	e.sim.SetOutage(http.StatusServiceUnavailable)
	require.Error(t, e.refresh())
	e.evaluate()
	id := e.only(alarms.NetBoxUnreachable)["alarmEventRecordId"].(string)
	// The notifier polls the store: an acknowledgement made before it saw the raise would fold into one
	// notification (subscriptions keep no intermediate states), so the raise is seen first.
	require.Equal(t, []string{"0 NetBoxUnreachable"}, waitAlarmEvents(t, old, 1))
	require.Eventually(t, func() bool { return len(cur.Notifications()) >= 1 }, 20*time.Second, 10*time.Millisecond)
	e.acknowledge(id)
	require.Equal(t, []string{"0 NetBoxUnreachable", "3 NetBoxUnreachable"}, waitAlarmEvents(t, old, 2), "v1's, checked against the reference")
	require.Eventually(t, func() bool { return len(cur.Notifications()) >= 2 }, 20*time.Second, 10*time.Millisecond)
	rec := e.get(v1 + "/alarms/" + id).Object(t)
	for i, n := range cur.Notifications()[:2] {
		body := n.Body
		require.EqualValues(t, []int{0, 3}[i], body["notificationEventType"])
		require.Equal(t, e.cfg.GlobalCloudID.String(), body["globalCloudId"])
		require.Equal(t, consumer, body["consumerSubscriptionId"])
		require.Equal(t, "https://o2ims.example.com"+Root+"/v2/alarms/"+id, body["objectRef"])
		require.Equal(t, e.cfg.OCloudID.String(), body["objectId"])
		require.Equal(t, rec["resourceTypeID"], body["objectTypeId"])
		require.Equal(t, "oran.o2ims.inventory.OCloud", body["objectClass"])
		require.Equal(t, rec["alarmDefinitionID"], body["alarmDefinitionId"])
		require.Equal(t, rec["probableCauseID"], body["probableCauseId"])
		for _, gone := range []string{"globalCloudID", "resourceID", "resourceTypeID", "alarmDefinitionID", "probableCauseID"} {
			require.NotContains(t, body, gone)
		}
	}
	require.NotContains(t, cur.Notifications()[0].Body, "alarmAcknowledgeTime", "not acknowledged yet")
	require.Equal(t, rec["alarmAcknowledgedTime"], cur.Notifications()[1].Body["alarmAcknowledgeTime"])
}
