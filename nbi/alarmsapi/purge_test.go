package alarmsapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/alarms"
)

// The Purge Alarms task, as the model decides it: named alarms and a window of clearing intersect; an
// active alarm is never purged (naming one is a conflict), nor one held cleared by hand; the task is
// recorded COMPLETED with what it purged, and kept at most MaxTasks.
func TestPurgeRemovesOnlyClearedAlarmsItSelects(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	at := func(h int) *time.Time { t := now.Add(time.Duration(h) * time.Hour); return &t }
	mk := func(id string, cleared *time.Time, acked, held bool) *alarms.Alarm {
		return &alarms.Alarm{ID: id, Raised: now.Add(-48 * time.Hour), Changed: now, Cleared: cleared, Acknowledged: acked, Held: held}
	}
	state := func() *alarms.State {
		return &alarms.State{Alarms: []*alarms.Alarm{
			mk("a-active", nil, true, false), mk("b-old-acked", at(-30), true, false), mk("c-old-unacked", at(-30), false, false),
			mk("d-new-acked", at(-1), true, false), mk("e-held", at(-30), true, true),
		}}
	}
	ids := func(s *alarms.State) (out []string) {
		for _, a := range s.Alarms {
			out = append(out, a.ID)
		}
		return out
	}
	s := state()
	task, err := s.Purge("t1", alarms.PurgeRequest{Conditions: &alarms.PurgeConditions{End: *at(-2)}}, now)
	require.NoError(t, err)
	require.Equal(t, []string{"b-old-acked"}, task.Purged, "cleared and acknowledged before the window's end; held kept")
	require.Equal(t, []string{"a-active", "c-old-unacked", "d-new-acked", "e-held"}, ids(s))
	require.Equal(t, alarms.TaskCompleted, task.State)

	s = state()
	task, err = s.Purge("t2", alarms.PurgeRequest{AlarmRecordIDs: []string{"c-old-unacked", "d-new-acked"}}, now)
	require.NoError(t, err)
	require.Equal(t, []string{"c-old-unacked", "d-new-acked"}, task.Purged, "named cleared alarms go, acknowledged or not")

	s = state()
	task, err = s.Purge("t3", alarms.PurgeRequest{AlarmRecordIDs: []string{"b-old-acked", "d-new-acked"},
		Conditions: &alarms.PurgeConditions{Start: at(-40), End: *at(-10)}}, now)
	require.NoError(t, err)
	require.Equal(t, []string{"b-old-acked"}, task.Purged, "the intersection of the names and the window")

	for _, named := range []string{"a-active", "e-held"} {
		s = state()
		_, err = s.Purge("t4", alarms.PurgeRequest{AlarmRecordIDs: []string{named}}, now)
		var conflict *alarms.ConflictError
		require.ErrorAs(t, err, &conflict, named)
	}
	_, err = state().Purge("t5", alarms.PurgeRequest{AlarmRecordIDs: []string{"nope"}}, now)
	var unknown *alarms.UnknownAlarmError
	require.ErrorAs(t, err, &unknown)
	require.Error(t, alarms.PurgeRequest{}.Validate(), "names nothing")
	require.Error(t, alarms.PurgeRequest{Conditions: &alarms.PurgeConditions{Start: at(0), End: *at(-1)}}.Validate())

	s = state()
	for i := 0; i < alarms.MaxTasks+5; i++ {
		_, err := s.Purge("t", alarms.PurgeRequest{Conditions: &alarms.PurgeConditions{End: now}}, now)
		require.NoError(t, err)
	}
	require.Len(t, s.Tasks, alarms.MaxTasks)
}

// Through the API: 202 with the task's Location under the root asked, the task readable there and in the
// list, the purged alarm gone from the alarm list; 405 for the task's other methods.
func TestPurgeIsATaskReadBackThroughTaskOperations(t *testing.T) {
	e := newEnv(t)
	x := e.send(http.MethodPost, v1+"/alarms/purge", []byte(`{"purgeConditions":{"endWindowTime":"2026-01-01T00:00:00Z"}}`), "application/json")
	require.Equal(t, http.StatusAccepted, x.Code(), "%s", x.Body)
	loc := x.Resp.Header.Get("Location")
	require.Regexp(t, `^/o2ims-infrastructureMonitoring/v1/taskOperations/[0-9a-f-]{36}$`, loc)
	task := e.get(loc)
	require.Equal(t, http.StatusOK, task.Code())
	require.Equal(t, "COMPLETED", task.Object(t)["operationState"])
	require.Equal(t, "PURGE", task.Object(t)["operation"])
	list := e.get(RootSpec + "/v2/taskOperations")
	require.Equal(t, http.StatusOK, list.Code())
	require.Len(t, list.Items(t), 1, "one store: the task is seen under every root")
	require.Equal(t, http.StatusBadRequest, e.send(http.MethodPost, v1+"/alarms/purge", []byte(`{}`), "application/json").Code())
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		x := e.send(m, v1+"/alarms/purge", nil, "")
		require.Equal(t, http.StatusMethodNotAllowed, x.Code(), m)
		require.Equal(t, "POST", x.Resp.Header.Get("Allow"))
	}
}
