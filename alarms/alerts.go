package alarms

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/o2ims-operator/o2ims-operator/internal/quote"
	"github.com/o2ims-operator/o2ims-operator/inventory"
)

// The Alertmanager webhook receiver's model: Alertmanager's webhook JSON (version 4, the reference's
// AlertmanagerNotification) turned into AlertFiring alarms. An alert is mapped to what its labels name —
// a host (netbox_device / device: netbox-<id> or <id>), a resource pool (resource_pool: its id), a request
// (provisioning_request: its name, on its deployment manager or the O-Cloud) — else to the O-Cloud. Its
// alarm's id is UUIDv5 of the alert's fingerprint, so each repeat updates the same record; a resolved alert
// clears it. The raiser never clears these: only Alertmanager knows whether they still fire.

// AlertNotification is Alertmanager's webhook payload (the fields read).
type AlertNotification struct {
	Version           string            `json:"version"`
	GroupKey          string            `json:"groupKey"`
	TruncatedAlerts   int               `json:"truncatedAlerts,omitempty"`
	Status            string            `json:"status"`
	Receiver          string            `json:"receiver"`
	GroupLabels       map[string]string `json:"groupLabels,omitempty"`
	CommonLabels      map[string]string `json:"commonLabels,omitempty"`
	CommonAnnotations map[string]string `json:"commonAnnotations,omitempty"`
	ExternalURL       string            `json:"externalURL,omitempty"`
	Alerts            []Alert           `json:"alerts"`
}

// Alert is one alert of a notification.
type Alert struct {
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt,omitempty"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
	Fingerprint  string            `json:"fingerprint,omitempty"`
}

// maxAlertLabels bounds the labels an alarm keeps of its alert (and each value's length).
const maxAlertLabels = 20

// Validate refuses what is not an Alertmanager version 4 notification.
func (n *AlertNotification) Validate() error {
	if n.Version != "4" {
		return fmt.Errorf("version %q: the receiver reads Alertmanager's webhook version 4", quote.Truncate(n.Version, 20))
	}
	for i, a := range n.Alerts {
		if a.Status != "firing" && a.Status != "resolved" {
			return fmt.Errorf("alerts[%d].status %q: want firing or resolved", i, quote.Truncate(a.Status, 20))
		}
		if a.Labels["alertname"] == "" {
			return fmt.Errorf("alerts[%d] has no alertname label", i)
		}
	}
	return nil
}

// Receiver applies Alertmanager notifications to the stored alarms.
type Receiver struct {
	cfg   inventory.Config
	facts Facts
}

// NewReceiver maps alerts to the objects of cfg's O-Cloud that facts know.
func NewReceiver(cfg inventory.Config, facts Facts) *Receiver {
	return &Receiver{cfg: cfg, facts: facts}
}

// Apply raises, updates or clears the alarm of each alert at now; it reports whether s changed, how many
// alarms it raised and cleared, and how many alerts it dropped (MaxAlarms, MaxAlertAlarms).
func (rc *Receiver) Apply(s *State, n *AlertNotification, now time.Time) (changed bool, raised, cleared, dropped int) {
	var dmOf map[string]string
	for _, al := range n.Alerts {
		id := AlarmID(rc.cfg, AlertFiring, fingerprint(al))
		stored, ok := s.Get(id)
		if al.Status == "resolved" {
			if ok && stored.Active() {
				at := now
				stored.Cleared, stored.Changed, stored.Severity, changed = &at, now, SeverityCleared, true
				cleared++
			}
			continue
		}
		if dmOf == nil {
			dmOf = deploymentManagers(rc.facts)
		}
		f := rc.fault(al, dmOf)
		sev := alertSeverity(al.Labels["severity"])
		switch {
		case !ok || !stored.Active():
			if (!ok && s.Active() >= MaxAlarms) || s.ActiveOf(AlertFiring) >= MaxAlertAlarms {
				dropped++
				continue
			}
			raisedAt := al.StartsAt.UTC()
			if raisedAt.IsZero() || raisedAt.After(now) {
				raisedAt = now
			}
			s.put(&Alarm{ID: id, DefinitionID: AlertFiring.ID(), ProbableCauseID: AlertFiring.ProbableCauseID(), Raised: raisedAt,
				Changed: now, ResourceTypeID: f.ResourceTypeID, ResourceID: f.ResourceID, Severity: sev, Extensions: f.Extensions, Subject: f.Subject})
			changed = true
			raised++
		case stored.ResourceID != f.ResourceID || stored.Severity != sev || !sameExtensions(stored.Extensions, f.Extensions):
			stored.ResourceID, stored.ResourceTypeID, stored.Severity, stored.Extensions, stored.Changed = f.ResourceID, f.ResourceTypeID, sev, f.Extensions, now
			changed = true
		}
	}
	return changed, raised, cleared, dropped
}

// fault is what an alert names, as a Fault of AlertFiring.
func (rc *Receiver) fault(al Alert, dmOf map[string]string) Fault {
	oc := rc.cfg.OCloudID.String()
	f := Fault{Def: AlertFiring, Subject: fingerprint(al), ResourceID: oc,
		ResourceTypeID: EntityTypeID(rc.cfg, EntityInfrastructure), Extensions: alertExtensions(al)}
	f.Extensions[ExtRaisedOn] = string(ScopeOCloud)
	f.Extensions[ExtDictionaryID] = EntityDictionaryID(rc.cfg, EntityInfrastructure)
	if host := firstLabel(al.Labels, "netbox_device", "device"); host != "" {
		if e, pool, dict := rc.host(host); e != nil {
			f.ResourceID, f.ResourceTypeID = e.ID, e.Attrs["resourceTypeId"].(string)
			f.Extensions[ExtRaisedOn], f.Extensions[ExtResourcePoolID] = string(ScopeResource), pool
			if dict != "" {
				f.Extensions[ExtDictionaryID] = dict
			}
			return f
		}
	}
	if pool := al.Labels["resource_pool"]; pool != "" {
		if snap, ok := rc.facts.Inventory(); ok && slices.ContainsFunc(snap.Pools, func(e *inventory.Entry) bool { return e.ID == pool }) {
			f.ResourceID, f.Extensions[ExtRaisedOn], f.Extensions[ExtResourcePoolID] = pool, string(ScopeResourcePool), pool
			return f
		}
	}
	if req := al.Labels["provisioning_request"]; req != "" {
		f.Extensions[ExtRequestID] = req
		f.ResourceTypeID = EntityTypeID(rc.cfg, EntityDeploymentManager)
		f.Extensions[ExtDictionaryID] = EntityDictionaryID(rc.cfg, EntityDeploymentManager)
		if dm, ok := dmOf[req]; ok {
			f.ResourceID, f.Extensions[ExtRaisedOn] = dm, string(ScopeDeploymentManager)
		}
	}
	return f
}

// host finds the inventory resource of a NetBox device named netbox-<id> or <id>: the entry, its pool and
// its type's dictionary (nil when the inventory has no such resource).
func (rc *Receiver) host(label string) (*inventory.Entry, string, string) {
	n, err := strconv.ParseInt(strings.TrimPrefix(label, "netbox-"), 10, 32)
	snap, ok := rc.facts.Inventory()
	if err != nil || !ok {
		return nil, "", ""
	}
	id := rc.cfg.ResourceID(int32(n))
	for pool, list := range snap.Resources {
		if i := slices.IndexFunc(list, func(e *inventory.Entry) bool { return e.ID == id }); i >= 0 {
			dict := ""
			for _, t := range snap.Types {
				if t.ID == list[i].Attrs["resourceTypeId"] {
					dict, _ = t.Attrs["alarmDictionaryId"].(string)
				}
			}
			return list[i], pool, dict
		}
	}
	return nil, "", ""
}

func alertExtensions(al Alert) map[string]any {
	ext := map[string]any{ExtAlarmName: AlertFiring.Name, "alertname": quote.Truncate(al.Labels["alertname"], 200)}
	for k, name := range map[string]string{"summary": "summary", "description": ExtReason, "runbook_url": ExtRunbook} {
		if v := al.Annotations[k]; v != "" {
			ext[name] = quote.Truncate(v, 500)
		}
	}
	if al.GeneratorURL != "" {
		ext["generatorURL"] = quote.Truncate(al.GeneratorURL, 500)
	}
	keys := make([]string, 0, len(al.Labels))
	for k := range al.Labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	labels := map[string]any{}
	for _, k := range keys[:min(len(keys), maxAlertLabels)] {
		labels[quote.Truncate(k, 100)] = quote.Truncate(al.Labels[k], 200)
	}
	ext["alertLabels"] = labels
	return ext
}

// fingerprint is Alertmanager's, or a hash of the sorted labels when it sends none.
func fingerprint(al Alert) string {
	if al.Fingerprint != "" {
		return "alertmanager/" + quote.Truncate(al.Fingerprint, 64)
	}
	keys := make([]string, 0, len(al.Labels))
	for k := range al.Labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%s\x00%s\x00", k, al.Labels[k])
	}
	return "labels/" + hex.EncodeToString(h.Sum(nil))[:32]
}

func firstLabel(labels map[string]string, names ...string) string {
	for _, n := range names {
		if v := labels[n]; v != "" {
			return v
		}
	}
	return ""
}

// alertSeverity maps the severity label (the shipped rules use critical and warning).
func alertSeverity(label string) Severity {
	switch strings.ToLower(label) {
	case "critical":
		return SeverityCritical
	case "major", "error":
		return SeverityMajor
	case "minor":
		return SeverityMinor
	case "warning":
		return SeverityWarning
	}
	return SeverityIndeterminate
}
