package app

import (
	"fmt"
	"io"
	"regexp"
	"strings"
)

// The environment is the operator's real configuration (the Python image's variables first). This table
// is what --help prints, and TestTheEnvironmentTableIsDocumented holds docs/configuration.md's tables to
// it row for row, so the two cannot drift; a variable the code reads and neither lists fails that test.

type envVar struct {
	names   []string // one row may cover variables that go together
	def     string   // as docs/configuration.md writes it (Markdown)
	meaning string   // as docs/configuration.md writes it (Markdown)
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
		{[]string{"NBI_HOST", "NBI_PORT"}, "`127.0.0.1` / `5000`", "northbound API address (loopback: it acts with the operator's SA unless `NBI_AUTH` is set); another address needs TLS (`NBI_TLS_*`), else the NBI is not served (the chain runs; `/readyz` says why)"},
		{[]string{"NBI_SHUTDOWN_TIMEOUT"}, "`3`", "seconds to drain the NBI on stop, capped by what is left of `--shutdown-timeout`"},
		{[]string{"NBI_API_TIMEOUT"}, "`10`", "seconds per API-server write made for the NBI"},
		{[]string{"KUBERNETES_CA_FILE", "UNSAFE_SKIP_TLS_VERIFY"}, "—", "honoured (not both): the CA file is read at start and must hold a PEM certificate; `UNSAFE_SKIP_TLS_VERIFY` takes `1/true/yes/on` and `0/false/no/off` in any case (anything else is a start-up error)"},
		{[]string{"TOKEN", "KUBERNETES_BASE_URL", "HTTPS_VERIFY"}, "—", "ignored, each with a warning: the in-cluster ServiceAccount (or `--kubeconfig`) is used, its token re-read when rotated, and the API server's certificate is always verified unless `UNSAFE_SKIP_TLS_VERIFY` says otherwise (the Python image verified it only when `HTTPS_VERIFY` was set, to anything, `false` included)"},
	}},
	{"Northbound API", []envVar{
		{[]string{"NBI_AUTH"}, "off", "comma list of `kubernetes` (TokenReview) and `oauth` (JWT access tokens checked locally), the first that recognises a token decides; every operation is then authorised with one SubjectAccessReview model (the request's verb on its path, granted by the O2IMS roles in `manifests/nbi-auth`)"},
		{[]string{"NBI_TOKEN_AUDIENCES"}, "`o2ims-nbi`", "audiences a Kubernetes token must be minted for (`kubectl create token SA --audience o2ims-nbi`): a plain API token is refused"},
		{[]string{"NBI_AUTH_RATE", "NBI_AUTH_BURST"}, "`10` / `50`", "authentication attempts per second per client address (tokens not cached; `0`: no limit) and burst; past them 429"},
		{[]string{"OAUTH_ISSUER_URL", "OAUTH_AUDIENCE"}, "—", "the authorization server (OpenID Connect or RFC 8414 discovery; `https`, `http` only on loopback) and the audience its tokens must carry"},
		{[]string{"OAUTH_USERNAME_CLAIM", "OAUTH_GROUPS_CLAIM"}, "`sub` / `groups`", "claims naming the caller (`oauth:` + username) and its groups; a scope `role:o2ims-<role>` also puts it in group `o2ims-<role>`; `system:` groups are dropped"},
		{[]string{"OAUTH_SIGNING_ALGS"}, "RS, PS, ES, EdDSA", "JWS algorithms accepted (asymmetric only: HMAC and `none` are refused)"},
		{[]string{"OAUTH_JWKS_REFRESH", "OAUTH_CA_FILE"}, "`300`, system roots", "seconds between refreshes of the issuer's keys (also refreshed, at most every 10 s, on an unknown `kid`); CAs for the issuer's TLS"},
		{[]string{"OAUTH_CERT_BOUND"}, "`false`", "`true`: every OAuth token must be bound to the client certificate (RFC 8705 `cnf.x5t#S256`; a bound token is checked either way); needs `NBI_TLS_CLIENT_CA_FILE`"},
		{[]string{"NBI_TLS_CERT_FILE", "NBI_TLS_KEY_FILE"}, "—", "serve the NBI over TLS; the files are reloaded when they change (the `manifests/nbi-tls` component)"},
		{[]string{"NBI_TLS_CLIENT_CA_FILE"}, "—", "mutual TLS: every client must present a certificate these CAs verify (refused in the handshake); reloaded when it changes"},
		{[]string{"NBI_INSECURE"}, "`false`", "`true`: allow a non-loopback `NBI_HOST` without TLS (logged as a warning)"},
		{[]string{"NBI_PAGE_SIZE"}, "`1000`", "list page size (`nextpage_opaque_marker` + `Link` for the next page)"},
	}},
	{"Provisioning chain", []envVar{
		{[]string{"DOWNSTREAM_PKG_REPO"}, "`mgmt`", "Porch repository of the rendered cluster package"},
		{[]string{"PACKAGEVARIANT_NAMESPACE", "CLUSTER_NAMESPACE"}, "`default`", "where PackageVariants and Clusters live"},
		{[]string{"CLUSTER_API_VERSION"}, "detected", "`v1beta2` or `v1beta1` (detection prefers v1beta2)"},
		{[]string{"REQUEUE_INTERVAL"}, "`10`", "seconds between safety-net re-checks of a waiting request"},
		{[]string{"RENDER_SETTLE"}, "—", "accepted and ignored (it was a time after which Porch's `Ready` was believed for a rewritten spec; now only Porch's published revision of the new spec counts, see [The chain](chain.md#the-chain))"},
		{[]string{"PROVISIONING_REQUEST_SELECTOR"}, "all", "handle only requests matching a label selector (sharding)"},
		{[]string{"KOPF_TIME_FORMAT"}, "`aware`", "times in kopf progress records we start: `aware` (`…+00:00`, kopf ≥ 1.37, what the released Python image's kopf 1.40.1 reads) or `naive` (kopf 1.36); a record already on the object keeps its own form (see [Upgrading from the Python image](upgrading.md#upgrading-from-the-python-image))"},
	}},
	{"NetBox and Metal3 (the host step)", []envVar{
		{[]string{"NETBOX_URL"}, "off", "NetBox origin (`https://…`); enables the inventory step"},
		{[]string{"NETBOX_TOKEN_FILE"}, "—", "API token file (`nbt_…` v2 tokens go as `Bearer`, others as `Token`); re-read when rotated"},
		{[]string{"NETBOX_CA_FILE", "NETBOX_TIMEOUT"}, "system roots, `10`", "NetBox TLS trust and per-call timeout (s)"},
		{[]string{"NETBOX_ALLOW_HTTP"}, "`false`", "allow `http://` (tests and the local run only)"},
		{[]string{"NETBOX_FIELD_MANAGED", "NETBOX_FIELD_REQUEST_UID", "NETBOX_FIELD_BMC_ADDRESS", "NETBOX_FIELD_BOOT_MAC"}, "`o2ims_managed`, `o2ims_request_uid`, `o2ims_bmc_address`, `o2ims_boot_mac`", "custom-field names"},
		{[]string{"METAL3_NAMESPACE"}, "`metal3`", "where BareMetalHosts and BMC Secrets are created"},
		{[]string{"BMC_CREDENTIALS_NAMESPACE"}, "`o2ims-bmc-credentials`", "where the labelled BMC credentials Secrets are"},
		{[]string{"BMC_FAULT_GRACE", "BMC_FAULT_ERROR_COUNT"}, "`900` / `3`", "a claimed host Metal3 cannot register (`registration error`) is quarantined only once the error has lasted this many seconds **and** Metal3's `errorCount` reached this; a refused login (Redfish 401/403) at `errorCount` 2, a missing credentials Secret at once (see the runbook's [BMC faults](runbook.md#bmc-faults))"},
		{[]string{"BMC_FAULT_BURST", "BMC_FAULT_BURST_WINDOW"}, "`3` / `3600`", "at most this many BMC-fault quarantines within this many seconds, hosts failing now included; beyond, none and the `BMCFaultBurst` alarm (a shared cause is likelier). Counted from NetBox (pool devices `failed` within the window, whatever the reason), so a restart does not reset it; missing or empty credentials Secrets count too"},
		{[]string{"BMC_MAX_REPLACEMENTS"}, "`3`", "BMC-fault quarantines one request may cause; beyond, it waits for the host"},
		{[]string{"BMC_ALLOW_CIDRS", "BMC_ALLOWED_SCHEMES"}, "any but loopback/link-local / all but `+http`", "comma lists: where BMC credentials may be sent (IP literals in these CIDRs) and with which Metal3 address types; a device outside is quarantined (`bmc-address-not-allowed`, within `BMC_FAULT_BURST`), never registered"},
	}},
	{"O2IMS inventory API (with `NETBOX_URL`)", []envVar{
		{[]string{"OCLOUD_ID"}, "UUIDv5 of `NETBOX_URL` at first start", "the O-Cloud's `oCloudId`, the namespace of every inventory id: fixed at first start in the ConfigMap `o2ims-operator-ocloud-id` and never derived again; an `OCLOUD_ID` that differs from it stops the operator at start, saying how to migrate"},
		{[]string{"OCLOUD_GLOBAL_CLOUD_ID"}, "the nil UUID", "`globalCloudId`, as the SMO assigned it"},
		{[]string{"OCLOUD_NAME", "OCLOUD_DESCRIPTION"}, "`o2ims-operator`, a sentence", "the O-Cloud's `name` and `description`"},
		{[]string{"OCLOUD_SERVICE_URI"}, "the caller's scheme and Host", "`serviceUri`: the apiRoot SMOs reach (`http://` or `https://`)"},
		{[]string{"INVENTORY_REFRESH_INTERVAL", "INVENTORY_RESYNC_INTERVAL"}, "`10`, `600`", "seconds between changes-only listings of NetBox, and between full ones (the only way a deletion in NetBox is seen)"},
		{[]string{"INVENTORY_MAX_SUBSCRIPTIONS"}, "`100`", "subscriptions kept; one more is a 409"},
		{[]string{"ALARMS_MAX_SUBSCRIPTIONS"}, "`100`", "alarm subscriptions (`alarmSubscriptions`) kept; one more is a 409"},
		{[]string{"CALLBACK_DENY_PRIVATE"}, "`false`", "`true`: subscription callbacks may not reach private ranges either (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7) — see [callbacks](api-inventory.md#callbacks-that-cannot-reach-inside)"},
		{[]string{"CALLBACK_ALLOW_CIDRS", "CALLBACK_DENY_CIDRS"}, "—", "comma-separated CIDRs that callbacks may / may not reach, overriding the address classes both ways (longest prefix wins, deny wins a tie; never lifts the API server's or the operator's own endpoints)"},
		{[]string{"CALLBACK_CA_FILE"}, "system roots", "PEM bundle trusted, besides the system's roots, for `https` callbacks (the SMO's private CA)"},
		{[]string{"CALLBACK_TEST"}, "`true`", "a subscription is accepted only once its callback answers a `GET` with 204 (ETSI NFV-SOL 013), else 400 saying what it answered; `false` for an SMO that cannot answer a `GET`"},
		{[]string{"CALLBACK_TEST_TIMEOUT"}, "`5s`", "how long that test waits for the 204 (up to `1m`)"},
	}},
	{"The SMO: outgoing calls (with `NETBOX_URL`)", []envVar{
		{[]string{"SMO_URL"}, "—", "the SMO's URL (a comma list for several hosts): subscription callbacks must be on its hosts unless every address they reach is in `CALLBACK_ALLOW_CIDRS` (refused at creation and at each delivery, reason `not_smo_host`), as oran-o2ims has it"},
		{[]string{"SMO_OAUTH_TOKEN_URL", "SMO_OAUTH_CLIENT_ID", "SMO_OAUTH_CLIENT_SECRET_FILE"}, "off", "every notification, callback test and registration carries an OAuth 2.0 client-credentials access token from this token endpoint (`https`, `http` only on loopback; HTTP Basic client authentication; the secret file re-read at each token request): cached until 10 s before it expires, fetched again once on a 401; an endpoint outage is a failed delivery, retried (`o2ims_smo_token_requests_total`)"},
		{[]string{"SMO_OAUTH_SCOPES", "SMO_OAUTH_AUDIENCE"}, "—", "scopes asked for (space or comma list) and the token request's `audience` parameter"},
		{[]string{"SMO_TLS_CERT_FILE", "SMO_TLS_KEY_FILE"}, "—", "client certificate presented to the SMO, its callbacks and its token endpoint; reloaded when the files change"},
		{[]string{"SMO_CA_FILE"}, "system roots", "PEM CAs trusted (besides the system's roots and `CALLBACK_CA_FILE`) for the SMO and its token endpoint; reloaded when it changes"},
		{[]string{"SMO_REGISTRATION_URL"}, "off", "the SMO's `oCloudAvailableEventNotification` callback: the leader POSTs the OCloud Available Notification (`globalCloudId`, `oCloudId`, `IMS_EP` = `OCLOUD_SERVICE_URI`, which it needs) once the cache is synced and the NBI listens, until a 2xx (backoff up to 5 min), and again when they change (`o2ims_smo_registered`; a `degraded:` line in `/readyz` while refused, never a 503)"},
	}},
	{"O2IMS performance API (with `NETBOX_URL` and `PROMETHEUS_URL`)", []envVar{
		{[]string{"PROMETHEUS_URL"}, "off", "the Prometheus measurement jobs are collected from (`http(s)://…`, the node exporter's metrics of the inventory's hosts, `instance` label = the NetBox device name); enables `/O2ims_infrastructurePerformance/v2`"},
		{[]string{"PROMETHEUS_CA_FILE", "PROMETHEUS_TOKEN_FILE"}, "system roots, —", "Prometheus TLS trust, and a bearer token file re-read when rotated (sent only over `https` or to loopback)"},
		{[]string{"PROMETHEUS_TIMEOUT"}, "`10`", "seconds per query"},
		{[]string{"PERFORMANCE_MAX_JOBS", "PERFORMANCE_MIN_INTERVAL", "PERFORMANCE_MAX_RESULTS"}, "`20`, `30`, `500`", "measurement jobs kept (one more is a 409), the least `collectionInterval` (s), values kept per job (beyond, the job is `DEGRADED`)"},
		{[]string{"PERFORMANCE_MAX_SUBSCRIPTIONS"}, "`20`", "`performanceSubscriptions` kept (each collection of a job is a report to its subscribers); one more is a 409"},
	}},
	{"Process", []envVar{
		{[]string{"POD_NAMESPACE"}, "`default`", "the operator's namespace (the leader-election Lease, inventory and alarm subscriptions, the alarms)"},
		{[]string{"POD_IP"}, "—", "the pod's IP (downward API `status.podIP`): callbacks may not reach it, on any port"},
		{[]string{"METRICS_AUTH"}, "off", "`kubernetes`: `/metrics` on the health port answers only a bearer token the API server authenticates (TokenReview) for a user allowed `get` on the non-resource URL `/metrics` (SubjectAccessReview), else 401/403; `/healthz` and `/readyz` stay open (the `manifests/metrics-auth` component)"},
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
	fmt.Fprintln(out, "\nEnvironment (the real configuration; docs/configuration.md):")
	for _, g := range environment {
		fmt.Fprintf(out, "\n  %s\n", plain(g.title))
		for _, v := range g.vars {
			fmt.Fprintf(out, "    %s (default: %s)\n        %s\n", strings.Join(v.names, ", "), plain(v.def), plain(v.meaning))
		}
	}
}

// markdownEnvironment is docs/configuration.md's tables, one per group.
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
