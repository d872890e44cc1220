package inventoryapi

import "github.com/o2ims-operator/o2ims-operator/nbi/query"

// The schemas of the reference's types, for filters and attribute selectors. Every attribute the
// reference requires is required here; the free-form objects (extensions, capabilities, capacity) are
// what selectors may pick from. They are the API's (the inventory package builds the
// objects, this package filters and selects them).
var (
	ResourceSchema = query.Object("Resource", map[string]query.Attr{
		"resourceId": query.Simple(), "resourcePoolId": query.Simple(), "resourceTypeId": query.Simple(),
		"globalAssetId": query.Simple(), "description": query.Simple(), "elements": query.Array(),
		"tags": query.Array(), "groups": query.Array(), "extensions": query.Freeform(),
	})
	ResourceTypeSchema = query.Object("ResourceType", map[string]query.Attr{
		"resourceTypeId": query.Simple(), "name": query.Simple(), "description": query.Simple(),
		"vendor": query.Simple(), "model": query.Simple(), "version": query.Simple(),
		"resourceKind": query.Simple(), "resourceClass": query.Simple(), "extensions": query.Freeform(),
		"alarmDictionaryId": query.Simple().Optional(),
	})
	ResourcePoolSchema = query.Object("ResourcePool", map[string]query.Attr{
		"resourcePoolId": query.Simple(), "name": query.Simple(), "oCloudSiteId": query.Simple(),
		"description": query.Simple(), "extensions": query.Freeform().Optional(),
	})
	DeploymentManagerSchema = query.Object("DeploymentManager", map[string]query.Attr{
		"deploymentManagerId": query.Simple(), "name": query.Simple(), "description": query.Simple(),
		"oCloudId": query.Simple(), "serviceUri": query.Simple(), "supportedLocations": query.Array(),
		"capabilities": query.Freeform(), "capacity": query.Freeform(), "extensions": query.Freeform().Optional(),
	})
	OCloudSiteSchema = query.Object("OCloudSiteInfo", map[string]query.Attr{
		"oCloudSiteId": query.Simple(), "globalLocationId": query.Simple(), "name": query.Simple(),
		"description": query.Simple(), "resourcePools": query.Array(), "extensions": query.Freeform(),
	})
	OCloudInfoSchema = query.Object("OCloudInfo", map[string]query.Attr{
		"oCloudId": query.Simple(), "globalCloudId": query.Simple(), "name": query.Simple(),
		"description": query.Simple(), "serviceUri": query.Simple(), "extensions": query.Freeform(),
	})
	// LocationSchema is of a list that is always empty (no attribute to filter on is wrong there, since
	// nothing is answered); AlarmDictionarySchema of the dictionaries package alarms makes.
	LocationSchema = query.Object("LocationInfo", map[string]query.Attr{
		"globalLocationId": query.Simple(), "name": query.Simple(), "description": query.Simple(),
		"oCloudSiteIds": query.Array(), "address": query.Simple().Optional(), "extensions": query.Freeform(),
	})
	AlarmDictionarySchema = query.Object("AlarmDictionary", map[string]query.Attr{
		"alarmDictionaryId": query.Simple(), "alarmDictionaryVersion": query.Simple(),
		"alarmDictionarySchemaVersion": query.Simple(), "entityType": query.Simple(), "vendor": query.Simple(),
		"managementInterfaceId": query.Array(), "pkNotificationField": query.Array(), "alarmDefinition": query.Array(),
	})
)

// PerformanceDictionarySchema is the PerformanceDictionary, for filters and attribute selectors.
var PerformanceDictionarySchema = query.Object("PerformanceDictionary", map[string]query.Attr{
	"performanceDictionaryId": query.Simple(), "performanceDictionaryVersion": query.Simple(),
	"performanceDictionarySchemaVersion": query.Simple(), "vendorSoftwareProduct": query.Simple(),
	"supportedInterfaces": query.Simple(), "supportedMeasurements": query.Array(),
})
