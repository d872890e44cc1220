package alarms

import (
	"encoding/json"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/inventory"
	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
)

// An alarm cleared by hand is held while its fault lasts: the retention period and the cap drop other
// cleared alarms, never it, or the raiser would raise its lasting fault again as a new alarm.
func TestAnAlarmHeldClearedOutlivesTheRetentionPeriod(t *testing.T) {
	now := time.Now()
	old := now.Add(-48 * time.Hour)
	s := &State{Config: ServiceConfig{RetentionPeriod: 1}}
	s.put(&Alarm{ID: "held", Cleared: &old, Held: true})
	s.put(&Alarm{ID: "gone", Cleared: &old})
	require.True(t, s.prune(now))
	require.Len(t, s.Alarms, 1)
	require.Equal(t, "held", s.Alarms[0].ID)

	// Beyond MaxAlarms the oldest cleared go first, but not a held one, however old.
	recent := now.Add(-time.Minute)
	for i := 0; i < MaxAlarms; i++ {
		s.put(&Alarm{ID: fmt.Sprint("c", i), Cleared: &recent})
	}
	require.True(t, s.prune(now))
	require.Len(t, s.Alarms, MaxAlarms)
	_, ok := s.Get("held")
	require.True(t, ok, "the held alarm was evicted")
}

// Alertmanager's alerts have a cap of their own within MaxAlarms: beyond MaxAlertAlarms active ones an
// alert is dropped (and counted), so a webhook caller cannot take the room of the operator's faults.
func TestAlertAlarmsHaveACapOfTheirOwn(t *testing.T) {
	cfg, err := inventory.ConfigFromEnv(func(string) string { return "" }, "http://netbox.example")
	require.NoError(t, err)
	rc := NewReceiver(cfg, &fakeFacts{})
	// What Debian's real Alertmanager posted for one firing alert, its alert repeated with a label and
	// fingerprint of its own each.
	var captured AlertNotification
	require.NoError(t, json.Unmarshal(nbitest.AlertmanagerCapture(t, "firing"), &captured))
	n := captured
	n.Alerts = nil
	for i := 0; i < MaxAlertAlarms+3; i++ {
		a := captured.Alerts[0]
		a.Labels = maps.Clone(a.Labels)
		a.Labels["i"], a.Fingerprint = fmt.Sprint(i), fmt.Sprintf("f%04d", i)
		n.Alerts = append(n.Alerts, a)
	}
	require.NoError(t, n.Validate())
	s := &State{Config: ServiceConfig{RetentionPeriod: DefaultRetentionDays}}
	changed, raised, cleared, dropped := rc.Apply(s, &n, time.Now())
	require.True(t, changed)
	require.Equal(t, MaxAlertAlarms, raised)
	require.Zero(t, cleared)
	require.Equal(t, 3, dropped)
	require.Equal(t, MaxAlertAlarms, s.ActiveOf(AlertFiring))

	// A resolved one makes room for the next.
	n2 := captured
	n2.Alerts = []Alert{n.Alerts[0], n.Alerts[MaxAlertAlarms]}
	n2.Alerts[0].Status = "resolved"
	_, raised, cleared, dropped = rc.Apply(s, &n2, time.Now())
	require.Equal(t, 1, raised)
	require.Equal(t, 1, cleared)
	require.Zero(t, dropped)
}

// The configuration's extensions are bounded: merge patches add to them, and they share the alarms'
// ConfigMap.
func TestServiceConfigExtensionsAreBounded(t *testing.T) {
	c := ServiceConfig{RetentionPeriod: DefaultRetentionDays, Extensions: map[string]any{"site": "north"}}
	require.NoError(t, c.Validate())
	for i := 0; i < 200; i++ {
		c.Extensions[fmt.Sprintf("key-%03d", i)] = fmt.Sprintf("%0100d", i)
	}
	require.ErrorContains(t, c.Validate(), "extensions: at most")
}
