package nbitest

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi/datamodel"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
	"github.com/stretchr/testify/require"
)

var (
	alarmsRefOnce sync.Once
	alarmsRef     *reference
	alarmsRefErr  error
	alertmanager  *base.Schema // the reference's AlertmanagerNotification
)

// LoadAlarmsReference is the O2IMS Infrastructure Monitoring (alarms) OpenAPI 3.0 document, with the
// common document its $refs name beside it (testdata/reference/o2ims-inventory/alarms).
func LoadAlarmsReference(t testing.TB) *reference {
	t.Helper()
	alarmsRefOnce.Do(func() {
		alarmsRef, alarmsRefErr = buildReference("o2ims-inventory/alarms/api/openapi.yaml", func(path string) *datamodel.DocumentConfiguration {
			return &datamodel.DocumentConfiguration{
				BasePath: filepath.Dir(path), SpecFilePath: filepath.Base(path), AllowFileReferences: true,
			}
		}, func(m *v3.Document) (*base.Schema, error) {
			// ProblemDetails lives in the common document: reach it through a response that names it.
			item := m.Paths.PathItems.GetOrZero("/o2ims-infrastructureMonitoring/v1/alarms/{alarmEventRecordId}")
			return item.Get.Responses.Codes.GetOrZero("404").Content.GetOrZero("application/problem+json").Schema.Schema(), nil
		})
		if alarmsRefErr == nil {
			alarmsRef.notice, alarmsRefErr = schema(alarmsRef.model, "AlarmEventNotification")
		}
		if alarmsRefErr == nil {
			alertmanager, alarmsRefErr = schema(alarmsRef.model, "AlertmanagerNotification")
		}
	})
	require.NoError(t, alarmsRefErr, "loading the O2IMS alarms reference")
	return alarmsRef
}

// CheckAlarmsAgainstReference validates one exchange with the alarms API as CheckInventoryAgainstReference
// does with the inventory's: errors are the reference's ProblemDetails, an answer the reference declares
// matches its schema, a request that succeeded is one it describes.
// oran-o2ims serves the monitoring API under v1 only (its alarms document is unchanged at HEAD): a
// request under a v2 root is validated as the same request under v1, for what 2.0.0 did not change.
func CheckAlarmsAgainstReference(t testing.TB, x *Exchange, reqBody []byte) {
	t.Helper()
	checkO2IMSAgainst(t, LoadAlarmsReference(t), x, reqBody, "v1")
}

// CheckAlertmanagerNotification checks a webhook body against the alarms reference's
// AlertmanagerNotification (what Alertmanager posts to the receiver).
func CheckAlertmanagerNotification(t testing.TB, body []byte) {
	t.Helper()
	ref := LoadAlarmsReference(t)
	ref.mu.Lock()
	ok, errs := ref.schemas.ValidateSchemaBytes(alertmanager, body)
	ref.mu.Unlock()
	require.True(t, ok, "not an AlertmanagerNotification: %s\n%s", describe(errs), body)
}

// CheckAlarmNotification checks a notification's body against the alarms reference's
// AlarmEventNotification.
func CheckAlarmNotification(t testing.TB, body []byte) {
	t.Helper()
	ref := LoadAlarmsReference(t)
	ref.mu.Lock()
	ok, errs := ref.schemas.ValidateSchemaBytes(ref.notice, body)
	ref.mu.Unlock()
	require.True(t, ok, "not an AlarmEventNotification: %s\n%s", describe(errs), body)
}
