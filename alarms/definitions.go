// Package alarms is the O2IMS Infrastructure Monitoring model: the alarm definitions this operator can
// raise (one table: Definitions, the source of the inventory's alarm dictionaries, of the alarms raised
// and of the docs/api-alarms.md's table), the alarms raised from what the operator already knows (Raiser, from
// memory: the informer cache of ProvisioningRequests, the inventory view, the NetBox client's
// availability), their storage (Store: one ConfigMap in the operator's namespace) and metrics. The API
// that serves them is nbi/alarmsapi.
//
// Where each part lives: the table (definitions.go), the dictionaries the inventory API serves
// (dictionary.go), the stored record (record.go), the faults computed from Facts (faults.go, facts.go),
// the Raiser, a runnable of the leader (raiser.go), the Alertmanager webhook's model (alerts.go: alerts
// mapped by their labels), the store with its retention and MaxAlarms (store.go), the Purge Alarms task
// kept in the same ConfigMap (tasks.go), and what package inventory's PolledNotifier needs to deliver
// alarm notifications (notify.go: the Subscriptions kind, Store.Snapshot, Order, Renderer). A fault is
// computed from memory only, never by a call to NetBox or the API server: the store is the package's one
// API-server object.
package alarms

import (
	"fmt"
	"strings"

	"github.com/google/uuid"
)

// Severity is the reference's PerceivedSeverity (an integer enum).
type Severity int

const (
	SeverityCritical      Severity = 0
	SeverityMajor         Severity = 1
	SeverityMinor         Severity = 2
	SeverityWarning       Severity = 3
	SeverityIndeterminate Severity = 4
	SeverityCleared       Severity = 5
)

var severityNames = []string{"CRITICAL", "MAJOR", "MINOR", "WARNING", "INDETERMINATE", "CLEARED"}

func (s Severity) String() string {
	if s < 0 || int(s) >= len(severityNames) {
		return fmt.Sprintf("Severity(%d)", int(s))
	}
	return severityNames[s]
}

// Clearing is a definition's clearingType.
type Clearing string

const (
	// Automatic: the operator clears the alarm when the fault goes; the SMO cannot clear it.
	Automatic Clearing = "AUTOMATIC"
	// Manual: the SMO clears it (PATCH perceivedSeverity CLEARED) once it has dealt with it; the operator
	// also clears it when the object it names is gone or healthy again, since nothing is left to clear.
	Manual Clearing = "MANUAL"
)

// Scope is the kind of O2IMS object an alarm of a definition is raised on.
type Scope string

const (
	ScopeResource          Scope = "resource"          // an inventory resource (a NetBox host)
	ScopeResourcePool      Scope = "resourcePool"      // an inventory resource pool (a NetBox site)
	ScopeOCloud            Scope = "oCloud"            // the O-Cloud itself
	ScopeDeploymentManager Scope = "deploymentManager" // a deployment manager, or the O-Cloud before one exists
	ScopeAlert             Scope = "alert"             // what an Alertmanager alert's labels name, else the O-Cloud
)

// Definition is one alarm this operator can raise.
type Definition struct {
	Name        string // alarmName, and the metric label
	Scope       Scope
	Description string // alarmDescription: what happened and what it affects
	Repair      string // proposedRepairActions
	Cause       string // the probable cause's name
	CauseText   string // the probable cause's description
	Severity    Severity
	Clearing    Clearing
	Runbook     string // the section of docs/runbook.md (its anchor) the matching Prometheus alert uses; "" for an alert's own
}

// The definitions: one table, the source of every dictionary, every alarm raised and the docs/api-alarms.md's table
// (TestTheAlarmTableIsDocumented). Adding one is adding a row here and a fault in faults.go.
var Definitions = []*Definition{
	HostQuarantined, PoolExhausted, NetBoxUnreachable, RequestFailed, RequestStuck, AlertFiring, BMCFaultBurst,
}

var (
	HostQuarantined = &Definition{
		Name: "HostQuarantined", Scope: ScopeResource, Severity: SeverityWarning, Clearing: Automatic,
		Description: "The operator set this host to failed in NetBox because its BMC data or credentials are unusable, its BMC address is outside the BMC policy, or Metal3 could not register it for longer than the fault grace period; it is out of the pool until someone repairs it.",
		Repair:      "Read the reason in the device's NetBox changelog (o2ims quarantine (<reason>): …) and fix that: the BMC credentials Secret, o2ims_bmc_address or o2ims_boot_mac, or the BMC itself (reachable from Metal3, accepting the credentials); then set the device staged again in NetBox (docs/runbook.md#o2imshostquarantined restores many at once); the alarm clears when the inventory sees it staged (or out of the pool).",
		Cause:       "hostQuarantined", CauseText: "Unusable BMC data or credentials: the host was quarantined (NetBox status failed).",
		Runbook: "o2imshostquarantined",
	}
	PoolExhausted = &Definition{
		Name: "PoolExhausted", Scope: ScopeResourcePool, Severity: SeverityMajor, Clearing: Automatic,
		Description: "ProvisioningRequests wait for free hosts and this resource pool has none left (no staged, unclaimed host): they keep waiting until CREATION_TIMEOUT fails them.",
		Repair:      "Add hosts to the pool, repair quarantined ones, delete requests no longer needed, or change a waiting request's selector or count; the alarm clears when no request waits or the pool has a free host.",
		Cause:       "poolExhausted", CauseText: "No free host in the resource pool while requests wait for hosts.",
		Runbook: "o2imshostpoolexhausted",
	}
	NetBoxUnreachable = &Definition{
		Name: "NetBoxUnreachable", Scope: ScopeOCloud, Severity: SeverityCritical, Clearing: Automatic,
		Description: "NetBox, the O-Cloud's inventory, cannot be used (unreachable, or its configuration refused): no host can be claimed or released, requests with hosts wait and the inventory is not refreshed.",
		Repair:      "Restore NetBox or the network path to it (or fix the configuration the alarm's extensions name); the alarm clears when NetBox answers again.",
		Cause:       "netboxUnreachable", CauseText: "The inventory backend (NetBox) does not answer or refuses the operator.",
		Runbook: "o2imsnetboxunreachable",
	}
	RequestFailed = &Definition{
		Name: "ProvisioningRequestFailed", Scope: ScopeDeploymentManager, Severity: SeverityMajor, Clearing: Manual,
		Description: "A ProvisioningRequest failed (its provisioningStatus message says why); what it provisions is not available.",
		Repair:      "Read the request's message, fix the cause and update or delete the request; clear the alarm by hand once dealt with (it also clears when the request is deleted or fulfilled).",
		Cause:       "provisioningFailed", CauseText: "A ProvisioningRequest reached provisioningState failed.",
		Runbook: "o2imsprovisioningrequestsfailing",
	}
	RequestStuck = &Definition{
		Name: "ProvisioningRequestStuck", Scope: ScopeDeploymentManager, Severity: SeverityWarning, Clearing: Automatic,
		Description: "A ProvisioningRequest has been pending or progressing for more than half of its CREATION_TIMEOUT budget; it fails when the budget runs out.",
		Repair:      "Read the request's message for what it waits for (hosts, rendering, the Cluster) and unblock it; the alarm clears when the request is fulfilled, fails or is deleted.",
		Cause:       "provisioningStuck", CauseText: "A ProvisioningRequest has spent more than half of its budget without being fulfilled.",
		Runbook: "o2imsprovisioningrequeststuck",
	}
)

// BMCFaultBurst: several hosts failed their BMC together, so the operator stopped quarantining.
var BMCFaultBurst = &Definition{
	Name: "BMCFaultBurst", Scope: ScopeOCloud, Severity: SeverityMajor, Clearing: Automatic,
	Description: "Several hosts failed their BMC together (Metal3 registration errors, or BMC addresses refused by the policy): more than BMC_FAULT_BURST within BMC_FAULT_BURST_WINDOW. A shared cause (the BMC network, Ironic, a shared credentials Secret, the BMC address policy) is likelier than that many broken BMCs, so the operator quarantines no more of them and the requests that need them wait.",
	Repair:      "Find the shared cause: Ironic and the BMC network reachable from Metal3, the shared BMC credentials Secret, BMC_ALLOW_CIDRS / BMC_ALLOWED_SCHEMES. Once it is fixed Metal3 registers the hosts and the requests go on; the alarm clears when no request waits on held quarantines.",
	Cause:       "bmcFaultBurst", CauseText: "More hosts failed their BMC within the burst window than BMC_FAULT_BURST allows to quarantine.",
	Runbook: "o2imshostquarantined",
}

// AlertFiring is every alert Alertmanager posts to the webhook receiver (alerts.go): its severity is
// the alert's severity label, its runbook the alert's runbook_url annotation.
var AlertFiring = &Definition{
	Name: "PrometheusAlertFiring", Scope: ScopeAlert, Severity: SeverityIndeterminate, Clearing: Automatic,
	Description: "A Prometheus alert routed to the O2IMS webhook receiver is firing (its alertname, summary and labels are in the alarm's extensions).",
	Repair:      "Follow the alert's runbook_url (the alarm's extensions.runbookUrl); the alarm clears when Alertmanager reports the alert resolved.",
	Cause:       "prometheusAlert", CauseText: "A Prometheus alert fired (Alertmanager webhook).",
}

// definitionSpace names the UUIDv5 space of the definitions' and probable causes' ids: the same in every
// O-Cloud (they are this product's, like the names), so an SMO can key on them.
var definitionSpace = uuid.MustParse("0f9d5c1e-6a0b-5c4e-8d77-3b1a2f4e9c60")

// ID is the definition's alarmDefinitionId.
func (d *Definition) ID() string {
	return uuid.NewSHA1(definitionSpace, []byte("alarmDefinition/"+d.Name)).String()
}

// ProbableCauseID is its probable cause's id.
func (d *Definition) ProbableCauseID() string {
	return uuid.NewSHA1(definitionSpace, []byte("probableCause/"+d.Cause)).String()
}

// RunbookURL is the runbook section, as the alert rules link it.
func (d *Definition) RunbookURL() string {
	if d.Runbook == "" {
		return ""
	}
	return "https://github.com/o2ims-operator/o2ims-operator/blob/main/docs/runbook.md#" + d.Runbook
}

// ByID answers the definition with alarmDefinitionId id.
func ByID(id string) (*Definition, bool) {
	for _, d := range Definitions {
		if d.ID() == id {
			return d, true
		}
	}
	return nil, false
}

// ByName answers the definition called name.
func ByName(name string) (*Definition, bool) {
	for _, d := range Definitions {
		if d.Name == name {
			return d, true
		}
	}
	return nil, false
}

// READMETable is the docs/api-alarms.md's table of the definitions (between its alarm-table markers).
func READMETable() string {
	var b strings.Builder
	b.WriteString("| alarm | raised on | severity | clearing | probable cause | runbook |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, d := range Definitions {
		runbook := "the alert's `runbook_url`"
		if d.Runbook != "" {
			runbook = fmt.Sprintf("[%s](runbook.md#%s)", d.Runbook, d.Runbook)
		}
		severity := fmt.Sprintf("%s (%d)", d.Severity, int(d.Severity))
		if d.Scope == ScopeAlert {
			severity = "the alert's `severity` label"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n",
			d.Name, scopeWords[d.Scope], severity, strings.ToLower(string(d.Clearing)), d.CauseText, runbook)
	}
	return b.String()
}

var scopeWords = map[Scope]string{
	ScopeResource:          "the resource (host)",
	ScopeResourcePool:      "the resource pool",
	ScopeOCloud:            "the O-Cloud",
	ScopeDeploymentManager: "its deployment manager, or the O-Cloud before one exists",
	ScopeAlert:             "the host, pool or request its labels name, else the O-Cloud",
}
