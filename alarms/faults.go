package alarms

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/internal/ocloud"
	"github.com/o2ims-operator/o2ims-operator/internal/quote"
	"github.com/o2ims-operator/o2ims-operator/inventory"
)

// Facts is what the alarms are computed from, all of it in memory and cheap to read: the operator's
// informer cache of ProvisioningRequests, the inventory view, the deployment managers the inventory
// answers and the NetBox client's availability. NewFacts makes one of the operator's parts; tests give
// fakes.
type Facts interface {
	// Requests are the cached ProvisioningRequests (read only); an error (the cache not synced) leaves
	// the request alarms as they are.
	Requests() ([]*unstructured.Unstructured, error)
	// Inventory is the view's snapshot and whether it has been read from NetBox yet (until then the
	// host and pool alarms are left as they are).
	Inventory() (*inventory.Snapshot, bool)
	// DeploymentManagers are those the inventory answers (an error: the O-Cloud is named instead).
	DeploymentManagers() ([]*inventory.Entry, error)
	// NetBoxProblem says why NetBox cannot be used now ("" while it can).
	NetBoxProblem() string
}

// Fault is one active fault: the alarm it raises and what it names.
type Fault struct {
	Def            *Definition
	Subject        string
	ResourceID     string
	ResourceTypeID string
	Extensions     map[string]any
}

// AlarmID is the alarmEventRecordId of def's fault about subject: UUIDv5 in the O-Cloud's id, so the
// same fault raised again (after a restart, on another replica, once cleared) is the same record.
func AlarmID(oc inventory.Config, def *Definition, subject string) string {
	return ocloud.ID(oc.OCloudID, "o2ims-operator/alarm/%s/%s", def.Name, subject)
}

// assessment is the faults found, and which definitions' facts could be read (the others are left as
// stored: an unsynced cache must not clear every alarm).
type assessment struct {
	faults []Fault
	known  map[*Definition]bool
}

// maxListed bounds the request names an alarm's extensions list.
const maxListed = 10

// assess computes the active faults now.
func assess(oc inventory.Config, timeout time.Duration, facts Facts, now time.Time) assessment {
	as := assessment{known: map[*Definition]bool{NetBoxUnreachable: true}}
	if why := facts.NetBoxProblem(); why != "" {
		as.add(oc, Fault{Def: NetBoxUnreachable, Subject: oc.OCloudID.String(), ResourceID: oc.OCloudID.String(),
			ResourceTypeID: EntityTypeID(oc, EntityInfrastructure), Extensions: map[string]any{ExtReason: quote.Truncate(why, 300)}})
	}
	reqs, err := facts.Requests()
	if err == nil {
		as.known[RequestFailed], as.known[RequestStuck] = true, true
		as.requests(oc, timeout, reqs, facts, now)
	}
	if snap, synced := facts.Inventory(); synced && snap != nil {
		as.known[HostQuarantined] = true
		as.quarantined(oc, snap)
		if err == nil {
			as.known[PoolExhausted] = true
			as.exhausted(oc, snap, reqs)
		}
	}
	if err == nil {
		as.known[BMCFaultBurst] = true
		as.bmcBurst(oc, reqs)
	}
	return as
}

// bmcBurst: while requests wait on BMC-fault quarantines held by the burst guard (their message says
// v1alpha1.QuarantinesHeld), one alarm on the O-Cloud naming them and the first one's reason.
func (as *assessment) bmcBurst(oc inventory.Config, reqs []*unstructured.Unstructured) {
	var held []string
	reason := ""
	for _, u := range reqs {
		st := v1alpha1.StatusOf(u)
		if u.GetDeletionTimestamp() != nil || st.State != v1alpha1.StateProgressing {
			continue
		}
		if i := strings.Index(st.Message, v1alpha1.QuarantinesHeld); i >= 0 {
			held = append(held, u.GetName())
			if reason == "" {
				reason, _, _ = strings.Cut(st.Message[i:], "; ")
			}
		}
	}
	if len(held) == 0 {
		return
	}
	slices.Sort(held)
	listed := make([]any, 0, min(len(held), maxListed))
	for _, n := range held[:min(len(held), maxListed)] {
		listed = append(listed, n)
	}
	id := oc.OCloudID.String()
	as.add(oc, Fault{Def: BMCFaultBurst, Subject: id, ResourceID: id, ResourceTypeID: EntityTypeID(oc, EntityInfrastructure),
		Extensions: map[string]any{ExtWaiting: listed, ExtReason: quote.Truncate(reason, 300)}})
}

func (as *assessment) add(oc inventory.Config, f Fault) {
	if f.Extensions == nil {
		f.Extensions = map[string]any{}
	}
	f.Extensions[ExtAlarmName] = f.Def.Name
	if _, ok := f.Extensions[ExtRaisedOn]; !ok {
		f.Extensions[ExtRaisedOn] = string(f.Def.Scope)
	}
	f.Extensions[ExtRunbook] = f.Def.RunbookURL()
	if _, ok := f.Extensions[ExtDictionaryID]; !ok {
		f.Extensions[ExtDictionaryID] = EntityDictionaryID(oc, entityOf[f.Def.Scope])
	}
	as.faults = append(as.faults, f)
}

// requests: a failed request, and one pending or progressing past half its budget, on the deployment
// manager the inventory answers for it, else the O-Cloud.
func (as *assessment) requests(oc inventory.Config, timeout time.Duration, reqs []*unstructured.Unstructured, facts Facts, now time.Time) {
	var dmOf map[string]string // request name → deployment manager id, read once when needed
	for _, u := range reqs {
		st := v1alpha1.StatusOf(u)
		var def *Definition
		switch {
		case u.GetDeletionTimestamp() != nil:
			continue
		case st.State == v1alpha1.StateFailed:
			def = RequestFailed
		case (st.State == "" || st.State == v1alpha1.StateProgressing) && timeout > 0 &&
			now.Sub(v1alpha1.BudgetStart(u)) > timeout/2:
			def = RequestStuck
		default:
			continue
		}
		if dmOf == nil {
			dmOf = deploymentManagers(facts)
		}
		f := Fault{Def: def, Subject: string(u.GetUID()), ResourceID: oc.OCloudID.String(),
			ResourceTypeID: EntityTypeID(oc, EntityDeploymentManager),
			Extensions: map[string]any{ExtRequestID: u.GetName(), ExtRequestUID: string(u.GetUID()),
				ExtReason: quote.Truncate(st.Message, 300)}}
		if f.Extensions[ExtReason] == "" {
			f.Extensions[ExtReason] = fmt.Sprintf("provisioningState %q", st.State)
		}
		// Its definition is in the deployment managers' dictionary, whichever object it is raised on.
		if dm, ok := dmOf[u.GetName()]; ok {
			f.ResourceID = dm
		} else {
			f.Extensions[ExtRaisedOn] = string(ScopeOCloud)
		}
		as.add(oc, f)
	}
}

func deploymentManagers(facts Facts) map[string]string {
	out := map[string]string{}
	dms, err := facts.DeploymentManagers()
	if err != nil {
		return out
	}
	for _, e := range dms {
		ext, _ := e.Attrs["extensions"].(map[string]any)
		if name, _ := ext[inventory.ExtRequestID].(string); name != "" {
			out[name] = e.ID
		}
	}
	return out
}

// quarantined: every pool host NetBox has as failed.
func (as *assessment) quarantined(oc inventory.Config, snap *inventory.Snapshot) {
	dicts := map[string]string{}
	for _, t := range snap.Types {
		dicts[t.ID], _ = t.Attrs["alarmDictionaryId"].(string)
	}
	for _, pool := range sortedKeys(snap.Resources) {
		for _, e := range snap.Resources[pool] {
			ext, _ := e.Attrs["extensions"].(map[string]any)
			if ext[inventory.ExtStatus] != "failed" {
				continue
			}
			typ, _ := e.Attrs["resourceTypeId"].(string)
			x := map[string]any{ExtResourcePoolID: pool, ExtReason: "NetBox status failed (quarantined)"}
			if h, ok := ext[inventory.ExtHostIdentity].(string); ok {
				x[ExtHost] = h
			}
			if d := dicts[typ]; d != "" {
				x[ExtDictionaryID] = d
			}
			as.add(oc, Fault{Def: HostQuarantined, Subject: e.ID, ResourceID: e.ID, ResourceTypeID: typ, Extensions: x})
		}
	}
}

// exhausted: while requests wait for free hosts, every pool without a free host (staged, unclaimed).
// Requests name no pool (their selectors match hosts of any), so a pool with free hosts that match no
// waiting request's selector raises nothing: the requests' own stuck alarms say they wait.
func (as *assessment) exhausted(oc inventory.Config, snap *inventory.Snapshot, reqs []*unstructured.Unstructured) {
	var waiting []string
	for _, u := range reqs {
		st := v1alpha1.StatusOf(u)
		if u.GetDeletionTimestamp() == nil && st.State == v1alpha1.StateProgressing && strings.Contains(st.Message, v1alpha1.WaitingForFreeHosts) {
			waiting = append(waiting, u.GetName())
		}
	}
	if len(waiting) == 0 {
		return
	}
	slices.Sort(waiting)
	listed := make([]any, 0, min(len(waiting), maxListed))
	for _, n := range waiting[:min(len(waiting), maxListed)] {
		listed = append(listed, n)
	}
	for _, p := range snap.Pools {
		if freeHosts(snap.Resources[p.ID]) > 0 {
			continue
		}
		as.add(oc, Fault{Def: PoolExhausted, Subject: p.ID, ResourceID: p.ID, ResourceTypeID: EntityTypeID(oc, EntityInfrastructure),
			Extensions: map[string]any{ExtResourcePoolID: p.ID, ExtWaiting: listed,
				ExtReason: fmt.Sprintf("%d requests wait for free hosts; the pool has none", len(waiting))}})
	}
}

func freeHosts(resources []*inventory.Entry) int {
	n := 0
	for _, e := range resources {
		ext, _ := e.Attrs["extensions"].(map[string]any)
		if _, owned := ext[inventory.ExtRequestUID]; ext[inventory.ExtStatus] == "staged" && !owned {
			n++
		}
	}
	return n
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
