package alarms

import (
	"encoding/json"
	"strings"

	"github.com/o2ims-operator/o2ims-operator/nbi/query"
	"github.com/o2ims-operator/o2ims-operator/subscriptions"
)

// The AlarmEventRecord of Monitoring API 2.0.0 (O2IMS clause 3.3.6.2.2; Table 3.3.2-1: 2.0.0 updated
// AlarmEventRecord, AlarmSubscriptionInfo and the Alarm Change Notification), answered under the v2
// roots; v1 keeps openshift-kni/oran-o2ims's 1.x shape (Attrs), which that project still serves at its
// HEAD (no 2.0.0 reference exists to validate against). The same stored record in both: 2.0.0 names the
// alarmed object by objectTypeId, objectId and objectClass (not resourceTypeID and resourceID), spells
// its ids alarmDefinitionId and probableCauseId, and its acknowledgement time alarmAcknowledgeTime.

// Object classes of the objects alarms are raised on (objectClass: "the fully qualified name of the
// class of the object", as the spec's example oran.o2ims.cluster.ClusterResource names one).
var objectClasses = map[Scope]string{
	ScopeResource:          "oran.o2ims.inventory.Resource",
	ScopeResourcePool:      "oran.o2ims.inventory.ResourcePool",
	ScopeOCloud:            "oran.o2ims.inventory.OCloud",
	ScopeDeploymentManager: "oran.o2ims.inventory.DeploymentManager",
}

// ObjectClass is the objectClass of an alarm raised on scope (an alert's names what its labels name;
// anything else is the O-Cloud's).
func ObjectClass(scope string) string {
	if c, ok := objectClasses[Scope(scope)]; ok {
		return c
	}
	return objectClasses[ScopeOCloud]
}

// SchemaV2 is the 2.0.0 AlarmEventRecord, for filters and attribute selectors under v2.
var SchemaV2 = query.Object("AlarmEventRecord", map[string]query.Attr{
	"alarmEventRecordId": query.Simple(), "objectTypeId": query.Simple(), "objectId": query.Simple(),
	"objectClass": query.Simple(), "alarmDefinitionId": query.Simple(), "probableCauseId": query.Simple(),
	"alarmRaisedTime": query.Simple(), "alarmChangedTime": query.Simple().Optional(),
	"alarmAcknowledgeTime": query.Simple().Optional(), "alarmAcknowledged": query.Simple(),
	"alarmClearedTime": query.Simple().Optional(), "perceivedSeverity": query.Simple(), "extensions": query.Freeform(),
})

// AttrsV2 is the 2.0.0 AlarmEventRecord of the alarm.
func (a *Alarm) AttrsV2() map[string]any {
	return V2(a.Attrs())
}

// V2 maps a 1.x AlarmEventRecord (Attrs) to 2.0.0's: the same values under 2.0.0's names, objectClass
// from the scope the alarm was raised on (extensions.raisedOn).
func V2(v1 map[string]any) map[string]any {
	renamed := map[string]string{
		"resourceTypeID": "objectTypeId", "resourceID": "objectId", "alarmDefinitionID": "alarmDefinitionId",
		"probableCauseID": "probableCauseId", "alarmAcknowledgedTime": "alarmAcknowledgeTime",
	}
	out := make(map[string]any, len(v1)+1)
	for k, v := range v1 {
		if to, ok := renamed[k]; ok {
			k = to
		}
		out[k] = v
	}
	ext, _ := v1["extensions"].(map[string]any)
	scope, _ := ext[ExtRaisedOn].(string)
	out["objectClass"] = ObjectClass(scope)
	return out
}

// renderV2 is 2.0.0's Alarm Change Notification (O2IMS Table 3.3.5.1.2-1), for a subscription made
// under v2: globalCloudId, objectRef under v2, the record's 2.0.0 members (alarmAcknowledgeTime once
// acknowledged); the clearing time, which it has no member for, in its extensions as under v1.
func (r Renderer) renderV2(sub subscriptions.Subscription, event EventType, n subscriptions.Notice) []byte {
	a := V2(n.Post.Attrs)
	ext := extensionsOf(a)
	body := map[string]any{
		"globalCloudId": r.GlobalCloudID, "notificationEventType": int64(event),
		"objectRef": strings.TrimSuffix(r.Root, "/v1") + "/v2/alarms/" + n.ID, "extensions": ext,
	}
	for _, k := range []string{"alarmEventRecordId", "objectTypeId", "objectId", "objectClass", "alarmDefinitionId", "probableCauseId",
		"alarmRaisedTime", "alarmChangedTime", "alarmAcknowledgeTime", "alarmAcknowledged", "perceivedSeverity"} {
		if v, ok := a[k]; ok {
			body[k] = v
		}
	}
	if sub.ConsumerSubscriptionID != "" {
		body["consumerSubscriptionId"] = sub.ConsumerSubscriptionID
	}
	b, _ := json.Marshal(body)
	return b
}
