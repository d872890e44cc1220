package alerting

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

// What the dashboard must show (issue 25): requests by state and age, handler retries and errors, NetBox
// calls and errors, quarantines, NBI latency and errors, the inventory's age and notifications. Each
// topic is named by the metrics that carry it; the dashboard reads at least one of each.
var dashboardTopics = map[string][]string{
	"requests by state":       {"o2ims_provisioning_requests"},
	"requests by age":         {"o2ims_provisioning_request_oldest_age_seconds"},
	"handler retries":         {"o2ims_handler_retries_total"},
	"handler errors":          {"o2ims_handler_runs_total", "o2ims_handler_permanent_failures_total"},
	"NetBox calls":            {"o2ims_netbox_request_duration_seconds_count", "o2ims_netbox_request_duration_seconds_bucket"},
	"NetBox errors":           {"o2ims_netbox_api_errors_total"},
	"quarantines":             {"o2ims_netbox_quarantines_total"},
	"NBI latency":             {"o2ims_nbi_request_duration_seconds_bucket"},
	"NBI errors":              {"o2ims_nbi_requests_total"},
	"inventory age":           {"o2ims_inventory_view_last_refresh_timestamp_seconds"},
	"alarms":                  {"o2ims_alarms_active", "o2ims_alarms_raised_total"},
	"inventory notifications": {"o2ims_inventory_notifications_delivered_total", "o2ims_inventory_notifications_failed_total"},
}

func dashboardMetrics(t *testing.T, d Dashboard) map[string][]string {
	t.Helper()
	used := map[string][]string{} // metric → panels reading it
	for _, p := range d.AllPanels() {
		for _, tg := range p.Targets {
			for _, m := range MetricNames(PromQL(tg.Expr)) {
				used[m] = append(used[m], p.Title)
			}
		}
	}
	return used
}

// Every panel query is PromQL Prometheus's own parser accepts (promtool check rules, each query a
// recording rule), once Grafana's interval variables are replaced as Grafana replaces them.
func TestDashboardQueriesPassPromtool(t *testing.T) {
	promtool := Tool(t, "promtool")
	d, _, err := LoadDashboard()
	require.NoError(t, err)
	rules := RuleFileOf(d)
	require.NotEmpty(t, rules.Groups[0].Rules)
	path, err := writeJSONAsYAML(t.TempDir(), "dashboard.rules.yaml", rules)
	require.NoError(t, err)
	out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput()
	require.NoError(t, err, "promtool check rules (the dashboard's queries):\n%s", out)
	assert.Contains(t, string(out), fmt.Sprintf("SUCCESS: %d rules found", len(rules.Groups[0].Rules)))
}

// promtool refuses what is not PromQL, so the check above can fail.
func TestPromtoolRefusesABrokenQuery(t *testing.T) {
	promtool := Tool(t, "promtool")
	rules := RuleFile{Groups: []Group{{Name: "dashboard", Rules: []Rule{{Record: "dashboard:panel_1:a", Expr: PromQL("sum by (x) (rate(o2ims_x_total[$__rate_interval])")}}}}}
	path, err := writeJSONAsYAML(t.TempDir(), "broken.rules.yaml", rules)
	require.NoError(t, err)
	out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput()
	require.Error(t, err, "promtool accepted an unbalanced expression:\n%s", out)
}

// The dashboard's shape: unique panel ids, every panel with a query and the datasource variable, a
// Prometheus datasource variable, every topic shown.
func TestDashboardCoversTheOperator(t *testing.T) {
	d, _, err := LoadDashboard()
	require.NoError(t, err)
	assert.Equal(t, "o2ims-operator", d.UID)
	require.Len(t, d.Templating.List, 4)
	assert.Equal(t, "datasource", d.Templating.List[0].Name)
	assert.Equal(t, "prometheus", d.Templating.List[0].Query)
	for i, name := range []string{"cluster", "namespace", "job"} {
		assert.Equal(t, name, d.Templating.List[i+1].Name)
		assert.Equal(t, "query", d.Templating.List[i+1].Type)
	}
	ids := map[int]bool{}
	var all []Panel
	var walk func([]Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			all = append(all, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, p := range all {
		assert.False(t, ids[p.ID], "panel id %d is used twice", p.ID)
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		assert.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		for _, tg := range p.Targets {
			assert.Equal(t, "${datasource}", tg.Datasource.UID, "panel %q", p.Title)
			assert.NotEmpty(t, MetricNames(PromQL(tg.Expr)), "panel %q query %s reads no metric", p.Title, tg.RefID)
		}
	}
	used := dashboardMetrics(t, d)
	for topic, metrics := range dashboardTopics {
		found := slices.ContainsFunc(metrics, func(m string) bool { return len(used[m]) > 0 })
		assert.True(t, found, "no panel shows %s (%v)", topic, metrics)
	}
}

func TestMetricNamesOfAnExpression(t *testing.T) {
	for expr, want := range map[string][]string{
		`max by (state) (o2ims_provisioning_requests)`: {"o2ims_provisioning_requests"},
		`histogram_quantile(0.95, sum by (route, le) (rate(o2ims_nbi_request_duration_seconds_bucket{code=~"5..", route!="x y"}[5m])))`: {"o2ims_nbi_request_duration_seconds_bucket"},
		`sum(rate(a_total[5m] offset 1h)) / on (pod) group_left (node) (b + bool c) or vector(1)`:                                       {"a_total", "b", "c"},
		`o2ims:rest_client_rate_limiter_wait:ratio_rate5m > 0.5 and sum without (verb) (x2_sum)`:                                        {"o2ims:rest_client_rate_limiter_wait:ratio_rate5m", "x2_sum"},
		`label_replace(up{job="a"}, "dst", "$1", "src", "(.*)")`:                                                                        {"up"},
	} {
		assert.Equal(t, want, MetricNames(expr), expr)
	}
}

// The ConfigMap for Grafana's sidecar is dashboard.json embedded byte for byte;
// O2IMS_UPDATE_RULES=1 regenerates it after an edit of the JSON.
func TestDashboardConfigMapIsTheDashboard(t *testing.T) {
	_, raw, err := LoadDashboard()
	require.NoError(t, err)
	want, err := RenderDashboardConfigMap(raw)
	require.NoError(t, err)
	path := repoFile(t, DashboardConfigMapFile)
	if os.Getenv("O2IMS_UPDATE_RULES") != "" {
		require.NoError(t, os.WriteFile(path, want, 0o644))
	}
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got),
		"%s is not %s embedded; regenerate it: O2IMS_UPDATE_RULES=1 go test -run %s ./tests/alerting/", DashboardConfigMapFile, DashboardFile, t.Name())

	// As YAML readers see it: a ConfigMap with the sidecar's label whose value is the file, byte for byte.
	var cm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string            `json:"name"`
			Namespace string            `json:"namespace"`
			Labels    map[string]string `json:"labels"`
		} `json:"metadata"`
		Data map[string]string `json:"data"`
	}
	require.NoError(t, yaml.UnmarshalStrict(got, &cm))
	assert.Equal(t, "v1", cm.APIVersion)
	assert.Equal(t, "ConfigMap", cm.Kind)
	assert.Equal(t, "1", cm.Metadata.Labels["grafana_dashboard"])
	assert.Equal(t, "o2ims", cm.Metadata.Namespace, "namespaced in the file: a kpt package is applied as written")
	require.Len(t, cm.Data, 1)
	assert.True(t, bytes.Equal(raw, []byte(cm.Data[dashboardConfigMapKey])), "the ConfigMap's %s differs from %s", dashboardConfigMapKey, DashboardFile)
}

// exposedNames are the series names a scrape holds: a histogram's _bucket, _sum and _count, a summary's
// quantiles, _sum and _count, every other family by its own name (a counter's with its _total).
func exposedNames(fams stack.Metrics) map[string]bool {
	out := map[string]bool{}
	for name, f := range fams {
		if len(f.GetMetric()) == 0 {
			continue
		}
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			out[name+"_bucket"], out[name+"_sum"], out[name+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			out[name], out[name+"_sum"], out[name+"_count"] = true, true, true
		default:
			out[name] = true
		}
	}
	return out
}

// Every metric the dashboard reads is in the exposition of the operator binary, run with NetBox and
// the inventory on, after the traffic that creates labelled series (an NBI call, a subscription); then a
// real Prometheus scrapes it beside another job with the same generic names, and no panel mixes them.
func TestDashboardReadsOnlyMetricsTheOperatorExports(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver and the operator binary")
	}
	d, _, err := LoadDashboard()
	require.NoError(t, err)
	used := dashboardMetrics(t, d)
	for m := range used {
		require.False(t, IsRecordingRule(m), "the dashboard reads the recording rule %s; it must read only what the binary exports", m)
	}

	ctx := context.Background()
	dir := t.TempDir()
	root, err := kubeapi.RepoRoot()
	require.NoError(t, err)
	binary := filepath.Join(dir, "o2ims-operator")
	build := exec.Command(filepath.Join(root, "hack", "build.sh"), binary, "dashboard")
	build.Dir = root
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building the operator:\n%s", out)
	st, err := stack.Start(ctx, stack.Options{Operator: binary, Dir: filepath.Join(dir, "stack"), Hosts: 1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Stop() })
	op, err := st.StartOperator(ctx, map[string]string{"INVENTORY_REFRESH_INTERVAL": "1"})
	require.NoError(t, err)

	// The traffic that creates the labelled series: two subscriptions, one whose callback refuses the
	// first notification (failed, retried, then delivered) and one whose filter leaves the change out
	// (filtered); a change in NetBox (a new pool device, seen by the 1 s refresh); a request (handler runs).
	var calls atomic.Int32
	callback := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The subscription's callback test (a GET, SOL 013) is answered as a consumer does; only
		// notifications count.
		if r.Method == http.MethodPost && calls.Add(1) == 1 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(callback.Close)
	for _, body := range []string{
		fmt.Sprintf(`{"callback": %q}`, callback.URL),
		fmt.Sprintf(`{"callback": %q, "filter": "(eq,postObjectState/extensions/status,offline)"}`, callback.URL),
	} {
		resp, err := http.Post(op.NBIURL+"/o2ims-infrastructureInventory/v1/subscriptions", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusCreated, resp.StatusCode, body)
	}
	st.NetBox.AddDevice(netboxsim.Device{Name: "server-new", Status: "staged", Site: "edge-lab", Custom: map[string]any{
		"o2ims_managed": true, "o2ims_bmc_address": "redfish-virtualmedia+https://10.20.0.200/redfish/v1/Systems/1",
		"o2ims_boot_mac": "52:54:00:cc:00:01", "cpu_cores": 8, "rack": "r9",
	}})
	submit(t, op.NBIURL, "dashboard", "nephio-workload-cluster", map[string]any{"clusterName": "edge-dashboard"})

	var missing []string
	deadline := time.Now().Add(60 * time.Second)
	for {
		fams, err := op.Scrape()
		require.NoError(t, err)
		exposed := exposedNames(fams)
		missing = missing[:0]
		for m := range used {
			if !exposed[m] {
				missing = append(missing, fmt.Sprintf("%s (panels %s)", m, strings.Join(used[m], ", ")))
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	sort.Strings(missing)
	assert.Empty(t, missing, "the dashboard reads metrics the operator does not export")

	// And on a Prometheus shared with another controller, every panel reads this operator only.
	assertDashboardOnSharedPrometheus(t, dir, op.HealthURL)
}
