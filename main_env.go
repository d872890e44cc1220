package main

import (
	"fmt"
	"io"
	"regexp"
	"strings"
)

// The environment is the operator's real configuration (the Python image's variables first). This table
// is what --help prints, and TestTheEnvironmentTableIsTheREADMEs holds README's "Configuration" tables to
// it row for row, so the two cannot drift; a variable the code reads and neither lists fails that test.

type envVar struct {
	names   []string // one row may cover variables that go together
	def     string   // as README writes it (Markdown)
	meaning string   // as README writes it (Markdown)
}

type envGroup struct {
	title string
	vars  []envVar
}

var environment = []envGroup{
	{"The Python image's settings", []envVar{
		{[]string{"UPSTREAM_PKG_REPO"}, "`catalog-infra-capi`", "Porch repository of the cluster templates"},
		{[]string{"CLUSTER_PROVISIONER"}, "`capi`", "the only provisioner; anything else stops the operator at start"},
		{[]string{"CREATION_TIMEOUT"}, "`1800`", "seconds from `creationTimestamp` before a waiting request fails"},
		{[]string{"LOG_LEVEL"}, "`INFO`", "`DEBUG`, `INFO`, `WARNING`, `ERROR`, `CRITICAL` (`--log-level` wins). The released Python image's default was `DEBUG`; here `DEBUG` logs every pass, so the default is `INFO` (events are posted at every level); set `DEBUG` for the Python image's verbosity"},
		{[]string{"NBI_HOST", "NBI_PORT"}, "`127.0.0.1` / `5000`", "northbound API address (loopback: it acts with the operator's SA unless `NBI_AUTH` is set); another address needs TLS (`NBI_TLS_*`), else the operator stops at start"},
		{[]string{"NBI_SHUTDOWN_TIMEOUT"}, "`3`", "seconds to drain the NBI on stop, capped by what is left of `--shutdown-timeout`"},
		{[]string{"NBI_API_TIMEOUT"}, "`10`", "seconds per API-server write made for the NBI"},
		{[]string{"KUBERNETES_CA_FILE", "UNSAFE_SKIP_TLS_VERIFY"}, "—", "honoured (not both): the CA file is read at start and must hold a PEM certificate; `UNSAFE_SKIP_TLS_VERIFY` takes `1/true/yes/on` and `0/false/no/off` in any case (anything else is a start-up error)"},
		{[]string{"TOKEN", "KUBERNETES_BASE_URL", "HTTPS_VERIFY"}, "—", "ignored, each with a warning: the in-cluster ServiceAccount (or `--kubeconfig`) is used, its token re-read when rotated, and the API server's certificate is always verified unless `UNSAFE_SKIP_TLS_VERIFY` says otherwise (the Python image verified it only when `HTTPS_VERIFY` was set, to anything, `false` included)"},
	}},
	{"Northbound API", []envVar{
		{[]string{"NBI_AUTH"}, "off", "`kubernetes`: bearer tokens checked with TokenReview, each operation authorised with a SubjectAccessReview (the caller acts under its own RBAC); the `manifests/nbi-auth` component"},
		{[]string{"NBI_TLS_CERT_FILE", "NBI_TLS_KEY_FILE"}, "—", "serve the NBI over TLS; the files are reloaded when they change (the `manifests/nbi-tls` component)"},
		{[]string{"NBI_INSECURE"}, "`false`", "`true`: allow a non-loopback `NBI_HOST` without TLS (logged as a warning)"},
		{[]string{"NBI_PAGE_SIZE"}, "`1000`", "list page size (`nextpage_opaque_marker` + `Link` for the next page)"},
	}},
	{"Provisioning chain", []envVar{
		{[]string{"DOWNSTREAM_PKG_REPO"}, "`mgmt`", "Porch repository of the rendered cluster package"},
		{[]string{"PACKAGEVARIANT_NAMESPACE", "CLUSTER_NAMESPACE"}, "`default`", "where PackageVariants and Clusters live"},
		{[]string{"CLUSTER_API_VERSION"}, "detected", "`v1beta2` or `v1beta1` (detection prefers v1beta2)"},
		{[]string{"REQUEUE_INTERVAL"}, "`10`", "seconds between safety-net re-checks of a waiting request"},
		{[]string{"RENDER_SETTLE"}, "`30`", "seconds after rewriting a PackageVariant's spec before Porch's `Ready=True` without a generation is believed for the new spec (see [The chain](#the-chain))"},
		{[]string{"PROVISIONING_REQUEST_SELECTOR"}, "all", "handle only requests matching a label selector (sharding)"},
		{[]string{"KOPF_TIME_FORMAT"}, "`aware`", "times in kopf progress records we start: `aware` (`…+00:00`, kopf ≥ 1.37, what the released Python image's kopf 1.40.1 reads) or `naive` (kopf 1.36); a record already on the object keeps its own form (see [Upgrading from the Python image](#upgrading-from-the-python-image))"},
	}},
	{"NetBox and Metal3 (the host step)", []envVar{
		{[]string{"NETBOX_URL"}, "off", "NetBox origin (`https://…`); enables the inventory step"},
		{[]string{"NETBOX_TOKEN_FILE"}, "—", "API token file (`nbt_…` v2 tokens go as `Bearer`, others as `Token`); re-read when rotated"},
		{[]string{"NETBOX_CA_FILE", "NETBOX_TIMEOUT"}, "system roots, `10`", "NetBox TLS trust and per-call timeout (s)"},
		{[]string{"NETBOX_ALLOW_HTTP"}, "`false`", "allow `http://` (tests and the local run only)"},
		{[]string{"NETBOX_FIELD_MANAGED", "NETBOX_FIELD_REQUEST_UID", "NETBOX_FIELD_BMC_ADDRESS", "NETBOX_FIELD_BOOT_MAC"}, "`o2ims_managed`, `o2ims_request_uid`, `o2ims_bmc_address`, `o2ims_boot_mac`", "custom-field names"},
		{[]string{"METAL3_NAMESPACE"}, "`metal3`", "where BareMetalHosts and BMC Secrets are created"},
		{[]string{"BMC_CREDENTIALS_NAMESPACE"}, "`o2ims-bmc-credentials`", "where the labelled BMC credentials Secrets are"},
		{[]string{"BMC_FAULT_GRACE", "BMC_FAULT_ERROR_COUNT"}, "`900` / `3`", "a claimed host Metal3 cannot register (`registration error`) is quarantined only once the error has lasted this many seconds **and** Metal3's `errorCount` reached this; a refused login (Redfish 401/403) at `errorCount` 2, a missing credentials Secret at once (see the runbook's [BMC faults](docs/runbook.md#bmc-faults))"},
		{[]string{"BMC_FAULT_BURST", "BMC_FAULT_BURST_WINDOW"}, "`3` / `3600`", "at most this many BMC-fault quarantines within this many seconds, hosts failing now included; beyond, none and the `BMCFaultBurst` alarm (a shared cause is likelier)"},
		{[]string{"BMC_MAX_REPLACEMENTS"}, "`3`", "BMC-fault quarantines one request may cause; beyond, it waits for the host"},
		{[]string{"BMC_ALLOW_CIDRS", "BMC_ALLOWED_SCHEMES"}, "any but loopback/link-local / all but `+http`", "comma lists: where BMC credentials may be sent (IP literals in these CIDRs) and with which Metal3 address types; a device outside is quarantined (`bmc-address-not-allowed`, within `BMC_FAULT_BURST`), never registered"},
	}},
	{"O2IMS inventory API (with `NETBOX_URL`)", []envVar{
		{[]string{"OCLOUD_ID"}, "UUIDv5 of `NETBOX_URL`", "the O-Cloud's `oCloudId`, the same on every replica and restart; the namespace of every inventory id"},
		{[]string{"OCLOUD_GLOBAL_CLOUD_ID"}, "the nil UUID", "`globalCloudId`, as the SMO assigned it"},
		{[]string{"OCLOUD_NAME", "OCLOUD_DESCRIPTION"}, "`o2ims-operator`, a sentence", "the O-Cloud's `name` and `description`"},
		{[]string{"OCLOUD_SERVICE_URI"}, "the caller's scheme and Host", "`serviceUri`: the apiRoot SMOs reach (`http://` or `https://`)"},
		{[]string{"INVENTORY_REFRESH_INTERVAL", "INVENTORY_RESYNC_INTERVAL"}, "`10`, `600`", "seconds between changes-only listings of NetBox, and between full ones (the only way a deletion in NetBox is seen)"},
		{[]string{"INVENTORY_MAX_SUBSCRIPTIONS"}, "`100`", "subscriptions kept; one more is a 409"},
		{[]string{"ALARMS_MAX_SUBSCRIPTIONS"}, "`100`", "alarm subscriptions (`alarmSubscriptions`) kept; one more is a 409"},
		{[]string{"CALLBACK_DENY_PRIVATE"}, "`false`", "`true`: subscription callbacks may not reach private ranges either (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7) — see [callbacks](#callbacks-that-cannot-reach-inside)"},
		{[]string{"CALLBACK_ALLOW_CIDRS", "CALLBACK_DENY_CIDRS"}, "—", "comma-separated CIDRs that callbacks may / may not reach, overriding the address classes both ways (longest prefix wins, deny wins a tie; never lifts the API server's or the operator's own endpoints)"},
		{[]string{"CALLBACK_CA_FILE"}, "system roots", "PEM bundle trusted, besides the system's roots, for `https` callbacks (the SMO's private CA)"},
	}},
	{"Process", []envVar{
		{[]string{"POD_NAMESPACE"}, "`default`", "the operator's namespace (the leader-election Lease, inventory and alarm subscriptions, the alarms)"},
		{[]string{"POD_IP"}, "—", "the pod's IP (downward API `status.podIP`): callbacks may not reach it, on any port"},
		{[]string{"GOMEMLIMIT"}, "90% of the container's memory limit", "Go's soft memory limit; set it to override what is derived from the cgroup limit"},
	}},
}

// markdown's marks, dropped for a terminal: code spans and links (their text kept).
var (
	mdLink = regexp.MustCompile(`\[([^\]]+)\]\([^)]*\)`)
	mdCode = strings.NewReplacer("`", "")
)

func plain(s string) string { return mdCode.Replace(mdLink.ReplaceAllString(s, "$1")) }

// printEnvironment writes the table for --help: each variable with its default, its meaning below.
func printEnvironment(out io.Writer) {
	fmt.Fprintln(out, "\nEnvironment (the real configuration; README \"Configuration\"):")
	for _, g := range environment {
		fmt.Fprintf(out, "\n  %s\n", plain(g.title))
		for _, v := range g.vars {
			fmt.Fprintf(out, "    %s (default: %s)\n        %s\n", strings.Join(v.names, ", "), plain(v.def), plain(v.meaning))
		}
	}
}

// markdownEnvironment is README's "Configuration" tables, one per group.
func markdownEnvironment() string {
	var b strings.Builder
	for i, g := range environment {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "**%s**\n\n| variable | default | meaning |\n|---|---|---|\n", g.title)
		for _, v := range g.vars {
			names := make([]string, len(v.names))
			for j, n := range v.names {
				names[j] = "`" + n + "`"
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", strings.Join(names, ", "), v.def, v.meaning)
		}
	}
	return b.String()
}
