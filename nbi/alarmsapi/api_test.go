package alarmsapi

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/o2ims-operator/o2ims-operator/alarms"
	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
)

const ack = `{"alarmAcknowledged": true}`
const clear = `{"perceivedSeverity": 5}`

func TestAPIVersionsAndAnEmptyStore(t *testing.T) {
	e := newEnv(t)
	x := e.get(v1 + "/api_versions")
	require.JSONEq(t, `{"uriPrefix":"/o2ims-infrastructureMonitoring/v1","apiVersions":[{"version":"1.0.0"},{"version":"1.1.0"},{"version":"1.2.0"}]}`, string(x.Body))
	for _, p := range []string{Root + "/api_versions", Root + "/v2/api_versions"} {
		x := e.get(p)
		require.Equal(t, http.StatusOK, x.Code())
		require.JSONEq(t, `{"uriPrefix":"/o2ims-infrastructureMonitoring/v2","apiVersions":[{"version":"2.0.0"}]}`, string(x.Body))
	}
	x = e.get(v1 + "/alarms")
	require.Equal(t, http.StatusOK, x.Code())
	require.JSONEq(t, `[]`, string(x.Body))
	require.Equal(t, http.StatusNotFound, e.get(v1+"/alarms/"+e.cfg.OCloudID.String()).Code())
	require.Equal(t, http.StatusNotFound, e.get(v1+"/alarms/not-a-uuid").Code())
	require.Equal(t, http.StatusNotFound, e.get(v1+"/nothing").Code())
	require.Equal(t, http.StatusBadRequest, e.get(v1+"/alarms?filter=(eq,nope,1)").Code())
	require.Equal(t, http.StatusBadRequest, e.get(v1+"/alarms?fields=name").Code())
	// The configuration before anything was stored: the default retention.
	x = e.get(v1 + "/alarmServiceConfiguration")
	require.Equal(t, http.StatusOK, x.Code())
	require.JSONEq(t, `{"retentionPeriod": 1, "extensions": {}}`, string(x.Body))
}

// A host quarantined in NetBox raises HostQuarantined on its resource (the ids the inventory answers);
// an SMO acknowledges it but cannot clear it (automatic); it clears when the host is staged again.
func TestQuarantineRaisedAcknowledgedAndClearedWhenTheHostIsBack(t *testing.T) {
	e := newEnv(t)
	e.evaluate()
	require.Empty(t, e.alarmsOf(alarms.HostQuarantined))

	require.NoError(t, e.sim.SetStatus(1, "failed"))
	require.NoError(t, e.refresh())
	e.evaluate()
	a := e.only(alarms.HostQuarantined)
	require.Equal(t, e.cfg.ResourceID(1), a["resourceID"])
	snap := e.view.Snapshot()
	require.Len(t, snap.Types, 1)
	require.Equal(t, snap.Types[0].ID, a["resourceTypeID"])
	ext := a["extensions"].(map[string]any)
	require.Equal(t, snap.Pools[0].ID, ext["resourcePoolId"])
	require.Equal(t, snap.Types[0].Attrs["alarmDictionaryId"], ext["alarmDictionaryId"])
	require.Equal(t, "netbox-1", ext["hostIdentity"])
	require.EqualValues(t, alarms.SeverityWarning, a["perceivedSeverity"])
	require.Equal(t, alarms.HostQuarantined.ID(), a["alarmDefinitionID"])
	require.Equal(t, alarms.HostQuarantined.ProbableCauseID(), a["probableCauseID"])
	require.Equal(t, false, a["alarmAcknowledged"])
	require.NotContains(t, a, "alarmClearedTime")
	id := a["alarmEventRecordId"].(string)
	require.Equal(t, 1.0, e.metric("o2ims_alarms_raised_total", map[string]string{"definition": "HostQuarantined"}))
	require.Equal(t, 1.0, e.metric("o2ims_alarms_active", map[string]string{"definition": "HostQuarantined"}))

	// Raising again (the fault persists) changes nothing: the same record.
	e.evaluate()
	require.Equal(t, a, e.only(alarms.HostQuarantined))

	// The list's filters, selectors and paging, as everywhere.
	for filter, n := range map[string]int{
		"(eq,perceivedSeverity,3)": 1, "(neq,perceivedSeverity,5)": 1, "(eq,alarmAcknowledged,false)": 1,
		"(eq,resourceID," + e.cfg.ResourceID(2) + ")": 0,
	} {
		x := e.get(v1 + "/alarms?filter=" + url.QueryEscape(filter))
		require.Equal(t, http.StatusOK, x.Code(), filter)
		require.Len(t, x.Items(t), n, filter)
	}
	sel := e.get(v1 + "/alarms?fields=extensions/alarmName").Items(t)
	require.Equal(t, map[string]any{"alarmName": "HostQuarantined"}, sel[0]["extensions"])
	require.Contains(t, sel[0], "resourceID", "required: it stays")
	require.NotContains(t, e.get(v1 + "/alarms?exclude_fields=alarmChangedTime").Items(t)[0], "alarmChangedTime")

	e.acknowledge(id)
	x := e.patch(v1+"/alarms/"+id, clear)
	require.Equal(t, http.StatusConflict, x.Code(), "an automatic alarm is not cleared by hand")
	require.Contains(t, x.Object(t)["detail"], "AUTOMATIC")

	require.NoError(t, e.sim.SetStatus(1, "staged"))
	require.NoError(t, e.refresh())
	e.evaluate()
	e.requireCleared(id)
	require.Equal(t, 1.0, e.metric("o2ims_alarms_cleared_total", map[string]string{"definition": "HostQuarantined", "how": "automatic"}))
	require.Equal(t, 0.0, e.metric("o2ims_alarms_active", map[string]string{"definition": "HostQuarantined"}))
}

// A pool with no free host while a request waits for hosts raises PoolExhausted on the pool; it
// clears when no request waits any more.
func TestPoolExhaustedRaisedAcknowledgedAndClearedWhenNoRequestWaits(t *testing.T) {
	e := newEnv(t)
	for id := int32(1); id <= 2; id++ {
		require.NoError(t, e.sim.SetStatus(id, "active"))
		require.NoError(t, e.sim.SetCustom(id, "o2ims_request_uid", "someone-else"))
	}
	require.NoError(t, e.refresh())
	e.evaluate()
	require.Empty(t, e.alarmsOf(alarms.PoolExhausted), "no request waits: nothing is exhausted")

	req := e.request("waits", "progressing", "0 of 1 hosts claimed; waiting for free hosts: 1 more for role worker")
	e.evaluate()
	a := e.only(alarms.PoolExhausted)
	pool := e.view.Snapshot().Pools[0].ID
	require.Equal(t, pool, a["resourceID"])
	require.Equal(t, alarms.EntityTypeID(e.cfg, alarms.EntityInfrastructure), a["resourceTypeID"])
	ext := a["extensions"].(map[string]any)
	require.Equal(t, []any{req}, ext["waitingRequests"])
	require.EqualValues(t, alarms.SeverityMajor, a["perceivedSeverity"])
	id := a["alarmEventRecordId"].(string)

	e.acknowledge(id)
	require.Equal(t, http.StatusConflict, e.patch(v1+"/alarms/"+id, clear).Code())

	e.request("waits", "fulfilled", "provisioned")
	e.evaluate()
	e.requireCleared(id)
}

// NetBox unreachable raises NetBoxUnreachable on the O-Cloud; it clears when NetBox answers again.
func TestNetBoxUnreachableRaisedAcknowledgedAndClearedWhenNetBoxAnswers(t *testing.T) {
	e := newEnv(t)
	e.sim.SetOutage(http.StatusServiceUnavailable)
	require.Error(t, e.refresh())
	require.NotEmpty(t, e.nb.Gate.Degraded())
	e.evaluate()
	a := e.only(alarms.NetBoxUnreachable)
	require.Equal(t, e.cfg.OCloudID.String(), a["resourceID"])
	require.EqualValues(t, alarms.SeverityCritical, a["perceivedSeverity"])
	require.Contains(t, a["extensions"].(map[string]any)["reason"], "NetBox")
	id := a["alarmEventRecordId"].(string)

	e.acknowledge(id)
	require.Equal(t, http.StatusConflict, e.patch(v1+"/alarms/"+id, clear).Code())

	e.sim.SetOutage(0)
	require.NoError(t, e.refresh())
	require.Empty(t, e.nb.Gate.Degraded())
	e.evaluate()
	e.requireCleared(id)
}

// A failed request raises ProvisioningRequestFailed on the O-Cloud, then on its deployment manager
// once the inventory answers one; it is manual: the SMO clears it, it stays cleared while the request
// stays failed, and comes back (the same record) if the request fails again after recovering.
func TestRequestFailedRaisedAcknowledgedClearedByHandAndRaisedAgain(t *testing.T) {
	e := newEnv(t)
	req := e.request("fails", "failed", "Provisioning request failed; reason: timed out")
	e.evaluate()
	a := e.only(alarms.RequestFailed)
	require.Equal(t, e.cfg.OCloudID.String(), a["resourceID"], "no deployment manager yet: the O-Cloud")
	require.Equal(t, alarms.EntityTypeID(e.cfg, alarms.EntityDeploymentManager), a["resourceTypeID"])
	ext := a["extensions"].(map[string]any)
	require.Equal(t, req, ext["provisioningRequestId"])
	require.Equal(t, "oCloud", ext["raisedOn"])
	require.Contains(t, ext["reason"], "timed out")
	id := a["alarmEventRecordId"].(string)
	raised := a["alarmRaisedTime"]

	// Its deployment manager appears: the same alarm now names it.
	e.mu.Lock()
	e.dmFor[req] = "cluster-uid-1"
	e.mu.Unlock()
	time.Sleep(5 * time.Millisecond)
	e.evaluate()
	b := e.only(alarms.RequestFailed)
	require.Equal(t, id, b["alarmEventRecordId"])
	require.Equal(t, e.cfg.DeploymentManagerID("cluster-uid-1"), b["resourceID"])
	require.Equal(t, raised, b["alarmRaisedTime"])
	require.Greater(t, b["alarmChangedTime"], a["alarmChangedTime"])

	e.acknowledge(id)
	x := e.patch(v1+"/alarms/"+id, clear)
	require.Equal(t, http.StatusOK, x.Code(), string(x.Body))
	require.JSONEq(t, clear, string(x.Body))
	e.requireCleared(id)
	require.Equal(t, 1.0, e.metric("o2ims_alarms_cleared_total", map[string]string{"definition": alarms.RequestFailed.Name, "how": "manual"}))
	require.Equal(t, http.StatusOK, e.patch(v1+"/alarms/"+id, clear).Code(), "clearing a cleared alarm changes nothing")

	e.evaluate()
	e.requireCleared(id) // still failed: it stays cleared

	e.request("fails", "fulfilled", "provisioned")
	e.evaluate()
	e.requireCleared(id)
	e.request("fails", "failed", "Provisioning request failed; reason: again")
	e.evaluate()
	c := e.only(alarms.RequestFailed)
	require.Equal(t, id, c["alarmEventRecordId"], "the same fault again: the same record, reopened")
	require.NotContains(t, c, "alarmClearedTime")
	require.Equal(t, false, c["alarmAcknowledged"])
	require.Greater(t, c["alarmRaisedTime"], raised)

	// Deleted: nothing left to clear by hand; the operator clears it.
	e.deleteRequest(req)
	e.evaluate()
	e.requireCleared(id)
}

// A request pending or progressing past half of CREATION_TIMEOUT raises ProvisioningRequestStuck; it
// clears when the request is fulfilled.
func TestRequestStuckRaisedAcknowledgedAndClearedWhenFulfilled(t *testing.T) {
	e := newEnv(t)
	e.request("slow", "progressing", "waiting for the Cluster resource")
	e.evaluate()
	require.Empty(t, e.alarmsOf(alarms.RequestStuck), "within the first half of its budget")
	e.advance(testTimeout/2 + time.Minute)
	e.evaluate()
	a := e.only(alarms.RequestStuck)
	require.EqualValues(t, alarms.SeverityWarning, a["perceivedSeverity"])
	id := a["alarmEventRecordId"].(string)
	e.acknowledge(id)
	require.Equal(t, http.StatusConflict, e.patch(v1+"/alarms/"+id, clear).Code())
	e.request("slow", "fulfilled", "provisioned")
	e.evaluate()
	e.requireCleared(id)
}

// A new instance (a restart, another replica) on the same storage keeps the alarms and their ids: the
// faults still there raise nothing new, and the acknowledgement stays.
func TestARestartKeepsTheAlarmsAndTheirIds(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.sim.SetStatus(2, "failed"))
	require.NoError(t, e.refresh())
	e.request("broken", "failed", "Provisioning request failed")
	e.evaluate()
	before := e.get(v1 + "/alarms").Items(t)
	require.Len(t, before, 2)
	e.acknowledge(before[0]["alarmEventRecordId"].(string))
	before = e.get(v1 + "/alarms").Items(t)

	e.pageSize = 1
	e.restart()
	e.evaluate()
	// Paged one by one, with the Link of the next page.
	var after []map[string]any
	for path := v1 + "/alarms"; path != ""; {
		x := e.get(path)
		require.Equal(t, http.StatusOK, x.Code())
		after = append(after, x.Items(t)...)
		path = ""
		if link := x.Resp.Header.Get("Link"); link != "" {
			path = link[1:strings.Index(link, ">")]
		}
	}
	require.Equal(t, before, after)
	require.Equal(t, 0.0, e.metric("o2ims_alarms_raised_total", map[string]string{"definition": "HostQuarantined"}), "nothing raised again")
	require.Equal(t, 1.0, e.metric("o2ims_alarms_active", map[string]string{"definition": "HostQuarantined"}))
}

func TestPatchRefusals(t *testing.T) {
	e := newEnv(t)
	e.request("broken", "failed", "Provisioning request failed")
	e.evaluate()
	id := e.only(alarms.RequestFailed)["alarmEventRecordId"].(string)
	for body, code := range map[string]int{
		`{}`:                           http.StatusBadRequest,
		`{"perceivedSeverity": 1}`:     http.StatusBadRequest,
		`{"alarmAcknowledged": "yes"}`: http.StatusBadRequest,
		`{"other": true}`:              http.StatusBadRequest,
		`{"alarmAcknowledged": false}`: http.StatusOK,
		`not json`:                     http.StatusBadRequest,
	} {
		require.Equal(t, code, e.patch(v1+"/alarms/"+id, body).Code(), body)
	}
	e.acknowledge(id)
	require.Equal(t, http.StatusConflict, e.patch(v1+"/alarms/"+id, `{"alarmAcknowledged": false}`).Code())
	require.Equal(t, http.StatusNotFound, e.patch(v1+"/alarms/"+e.cfg.OCloudID.String(), ack).Code())
	require.Equal(t, http.StatusUnsupportedMediaType, e.send(http.MethodPatch, v1+"/alarms/"+id, []byte(ack), "text/plain").Code())
}

func TestServiceConfigurationAndRetention(t *testing.T) {
	e := newEnv(t)
	x := e.send(http.MethodPut, v1+"/alarmServiceConfiguration", []byte(`{"retentionPeriod": 3, "extensions": {"site": "north"}}`), "application/json")
	require.Equal(t, http.StatusOK, x.Code(), string(x.Body))
	require.JSONEq(t, `{"retentionPeriod": 3, "extensions": {"site": "north"}}`, string(x.Body))
	x = e.patch(v1+"/alarmServiceConfiguration", `{"extensions": {"site": null, "owner": "ops"}}`)
	require.Equal(t, http.StatusOK, x.Code(), string(x.Body))
	require.JSONEq(t, `{"retentionPeriod": 3, "extensions": {"owner": "ops"}}`, string(x.Body))
	for _, body := range []string{`{"retentionPeriod": 0}`, `{"retentionPeriod": null}`, `{"retentionPeriod": 366}`, `{"other": 1}`} {
		require.Equal(t, http.StatusBadRequest, e.patch(v1+"/alarmServiceConfiguration", body).Code(), body)
	}
	require.JSONEq(t, `{"retentionPeriod": 3, "extensions": {"owner": "ops"}}`, string(e.get(v1+"/alarmServiceConfiguration").Body))

	// An alarm cleared by hand is held while its fault lasts, whatever its age: dropping it would raise
	// the lasting fault again as a new alarm.
	req := e.request("gone", "failed", "failed")
	e.evaluate()
	id := e.only(alarms.RequestFailed)["alarmEventRecordId"].(string)
	require.Equal(t, http.StatusOK, e.patch(v1+"/alarms/"+id, clear).Code())
	e.advance(4 * 24 * time.Hour)
	e.evaluate()
	require.Len(t, e.alarmsOf(alarms.RequestFailed), 1, "held 4 days, its fault lasting")
	e.requireCleared(id)

	// Once its fault has gone it is held no more, and retention counts from its alarmClearedTime.
	e.deleteRequest(req)
	e.evaluate()
	require.Empty(t, e.alarmsOf(alarms.RequestFailed), "its fault gone, cleared 4 days ago: dropped")

	// A cleared alarm older than the retention period is dropped; a younger one stays.
	req = e.request("young", "failed", "failed")
	e.evaluate()
	require.Len(t, e.alarmsOf(alarms.RequestFailed), 1)
	e.deleteRequest(req)
	e.evaluate()
	e.advance(2 * 24 * time.Hour)
	e.evaluate()
	require.Len(t, e.alarmsOf(alarms.RequestFailed), 1, "cleared 2 days ago, kept 3")
	e.advance(2 * 24 * time.Hour)
	e.evaluate()
	require.Empty(t, e.alarmsOf(alarms.RequestFailed), "cleared 4 days ago: dropped")
}

// acknowledge PATCHes alarmAcknowledged and checks the record says so.
func (e *env) acknowledge(id string) {
	e.T.Helper()
	x := e.patch(v1+"/alarms/"+id, ack)
	require.Equal(e.T, http.StatusOK, x.Code(), string(x.Body))
	require.JSONEq(e.T, ack, string(x.Body))
	a := e.get(v1 + "/alarms/" + id).Object(e.T)
	require.Equal(e.T, true, a["alarmAcknowledged"])
	require.Contains(e.T, a, "alarmAcknowledgedTime")
	require.Equal(e.T, http.StatusOK, e.patch(v1+"/alarms/"+id, ack).Code(), "acknowledging again changes nothing")
}

// requireCleared checks the alarm is cleared: alarmClearedTime and perceivedSeverity CLEARED.
func (e *env) requireCleared(id string) {
	e.T.Helper()
	x := e.get(v1 + "/alarms/" + id)
	require.Equal(e.T, http.StatusOK, x.Code())
	a := x.Object(e.T)
	require.Contains(e.T, a, "alarmClearedTime", "cleared")
	require.EqualValues(e.T, alarms.SeverityCleared, a["perceivedSeverity"])
}

// A method a path does not take is a 405 naming those it does, PATCH included.
func TestMethodNotAllowedNamesPatch(t *testing.T) {
	e := newEnv(t)
	x := e.send(http.MethodDelete, v1+"/alarmServiceConfiguration", nil, "")
	require.Equal(t, http.StatusMethodNotAllowed, x.Code())
	require.Equal(t, "GET, HEAD, PUT, PATCH", x.Resp.Header.Get("Allow"))
}

// Two replicas write the one ConfigMap: each write is made on the resourceVersion it read, so one that
// lost the race reads again and applies its change on top, and neither change is lost.
func TestTwoReplicasWritingAtOnceLoseNothing(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	other := alarms.NewStore(e.kube, e.namespace)
	t.Cleanup(other.Close)
	_, err := e.store.Update(ctx, func(s *alarms.State) (bool, error) { s.Config.Extensions["a"] = "first"; return true, nil })
	require.NoError(t, err)
	attempts := 0
	_, err = e.store.Update(ctx, func(s *alarms.State) (bool, error) {
		attempts++
		if attempts == 1 { // the other replica writes between this read and this write
			_, err := other.Update(ctx, func(o *alarms.State) (bool, error) { o.Config.RetentionPeriod = 9; return true, nil })
			require.NoError(t, err)
		}
		s.Config.Extensions["b"] = "second"
		return true, nil
	})
	require.NoError(t, err)
	require.Equal(t, 2, attempts, "the conflict was read again")
	x := e.get(v1 + "/alarmServiceConfiguration")
	require.JSONEq(t, `{"retentionPeriod": 9, "extensions": {"a": "first", "b": "second"}}`, string(x.Body))
}

// Without an inventory there are no alarms: no route, but the root's errors keep the reference's shape.
func TestUnservedAnswersTheRootsErrorsInTheReferencesShape(t *testing.T) {
	e := &env{Env: nbitest.Prepare(t)}
	e.Serve(nil, zap.NewNop(), []nbi.API{Unserved()})
	x := e.get(v1 + "/alarms")
	require.Equal(t, http.StatusNotFound, x.Code())
	require.Equal(t, nbi.MediaProblemJSON, x.Resp.Header.Get("Content-Type"))
}
