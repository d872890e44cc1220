package alarms

import (
	"slices"
	"strings"

	"github.com/o2ims-operator/o2ims-operator/internal/ocloud"
	"github.com/o2ims-operator/o2ims-operator/inventory"
)

// The alarm dictionaries the inventory API serves, made from Definitions: one per resource type (the
// definitions raised on a resource: its id is the type's alarmDictionaryId), one for deployment managers
// and one for the O-Cloud's own infrastructure (its resource pools and the O-Cloud itself); an
// Alertmanager alert may name any of them, so AlertFiring is in every one. Pools, the
// O-Cloud and deployment managers are no NetBox device type, so their alarms name as resourceTypeID the
// id of their dictionary's entity type (EntityTypeID), which /resourceTypes does not list; every alarm
// names its dictionary in extensions.alarmDictionaryId.

// DictionaryVersion is the dictionaries' alarmDictionaryVersion: raised with every change of the table.
const DictionaryVersion = "1"

// dictionarySchemaVersion is the version of the reference's AlarmDictionary schema followed.
const dictionarySchemaVersion = "1.0"

// Vendor is the dictionaries' vendor for the operator's own entity types.
const Vendor = "o2ims-operator"

// Entity types of the dictionaries that are not a resource type.
const (
	EntityDeploymentManager = "deploymentManager"
	EntityInfrastructure    = "oCloudInfrastructure"
)

// entityOf is the non-resource-type dictionary of each scope.
var entityOf = map[Scope]string{
	ScopeResourcePool: EntityInfrastructure, ScopeOCloud: EntityInfrastructure,
	ScopeDeploymentManager: EntityDeploymentManager,
}

// EntityTypeID is the resourceTypeID of alarms on a pool, the O-Cloud or a deployment manager.
func EntityTypeID(cfg inventory.Config, entity string) string {
	return ocloud.ID(cfg.OCloudID, "o2ims-operator/entityType/%s", entity)
}

// EntityDictionaryID is the id of the dictionary of such an entity type.
func EntityDictionaryID(cfg inventory.Config, entity string) string {
	return ocloud.ID(cfg.OCloudID, "o2ims-operator/entityType/%s/alarmDictionary", entity)
}

// Dictionaries answers every dictionary, sorted by id: one per resource type in types (the view's),
// then the two of the operator's own entity types.
func Dictionaries(cfg inventory.Config, types []*inventory.Entry) []*inventory.Entry {
	out := make([]*inventory.Entry, 0, len(types)+2)
	for _, t := range types {
		if d := TypeDictionary(t); d != nil {
			out = append(out, d)
		}
	}
	for _, entity := range []string{EntityDeploymentManager, EntityInfrastructure} {
		out = append(out, dictionary(EntityDictionaryID(cfg, entity), entity, Vendor, func(s Scope) bool { return s == ScopeAlert || entityOf[s] == entity }))
	}
	slices.SortFunc(out, func(a, b *inventory.Entry) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// TypeDictionary is the dictionary of resource type t (nil when t names none).
func TypeDictionary(t *inventory.Entry) *inventory.Entry {
	id, _ := t.Attrs["alarmDictionaryId"].(string)
	if id == "" {
		return nil
	}
	vendor, _ := t.Attrs["vendor"].(string)
	model, _ := t.Attrs["model"].(string)
	entity := strings.TrimSpace(vendor + " " + model)
	return dictionary(id, entity, vendor, func(s Scope) bool { return s == ScopeResource || s == ScopeAlert })
}

func dictionary(id, entity, vendor string, in func(Scope) bool) *inventory.Entry {
	var defs []any
	for _, d := range Definitions {
		if in(d.Scope) {
			defs = append(defs, d.attrs())
		}
	}
	return inventory.NewEntry(id, map[string]any{
		"alarmDictionaryId": id, "alarmDictionaryVersion": DictionaryVersion,
		"alarmDictionarySchemaVersion": dictionarySchemaVersion, "entityType": entity, "vendor": vendor,
		"managementInterfaceId": []any{"O2IMS"}, "pkNotificationField": []any{"alarmDefinitionID"},
		"alarmDefinition": defs,
	})
}

// attrs is the reference's AlarmDefinition.
func (d *Definition) attrs() map[string]any {
	return map[string]any{
		"alarmDefinitionId": d.ID(), "alarmName": d.Name, "alarmLastChange": DictionaryVersion,
		"alarmChangeType": "ADDED", "alarmDescription": d.Description, "proposedRepairActions": d.Repair,
		"clearingType": string(d.Clearing), "managementInterfaceId": []any{"O2IMS"},
		"pkNotificationField": []any{"alarmDefinitionID"},
		"alarmAdditionalFields": map[string]any{
			"perceivedSeverity": int64(d.Severity), "probableCauseId": d.ProbableCauseID(),
			"probableCauseName": d.Cause, "probableCauseDescription": d.CauseText,
			"runbookUrl": d.RunbookURL(), "raisedOn": string(d.Scope),
		},
	}
}
