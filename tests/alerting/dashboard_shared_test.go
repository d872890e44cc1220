package alerting

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The dashboard's variables as a shared Prometheus sees them: the operator scraped as job o2ims-operator in
// namespace o2ims, another controller as job other-controller in namespace other, both in one cluster.
const (
	ourJob, ourNamespace     = "o2ims-operator", "o2ims"
	otherJob, otherNamespace = "other-controller", "other"
	sharedCluster            = "test"
)

// dashboardFilter is the matchers every selector of the dashboard carries.
var dashboardFilter = []string{`cluster=~"$cluster"`, `namespace=~"$namespace"`, `job=~"$job"`}

// selectorRE is a metric name with its matchers, outside strings (names are the operator's and client-go's).
var selectorRE = regexp.MustCompile(`(?:^|[^A-Za-z0-9_:"$])((?:o2ims|workqueue|rest_client)_[a-z0-9_]+)(\{[^}]*\})?`)

// selectors lists every selector of an expression: name{matchers}.
func selectors(expr string) []string {
	var out []string
	for _, m := range selectorRE.FindAllStringSubmatch(expr, -1) {
		out = append(out, m[1]+m[2])
	}
	return out
}

// Every selector of every panel query carries the cluster, namespace and job variables, so on a shared
// Prometheus a panel reads the chosen operator only, generic client-go names (workqueue_*, rest_client_*)
// included; the variables choose among targets exporting o2ims_operator_ready.
func TestEveryDashboardQueryIsFilteredByTheVariables(t *testing.T) {
	d, _, err := LoadDashboard()
	require.NoError(t, err)
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		q, _ := v.Query.(string)
		vars[v.Name] = q
	}
	assert.Equal(t, "prometheus", vars["datasource"])
	assert.Equal(t, `label_values(o2ims_operator_ready, cluster)`, vars["cluster"])
	assert.Equal(t, `label_values(o2ims_operator_ready{cluster=~"$cluster"}, namespace)`, vars["namespace"])
	assert.Equal(t, `label_values(o2ims_operator_ready{cluster=~"$cluster", namespace=~"$namespace"}, job)`, vars["job"])
	n := 0
	for _, p := range d.AllPanels() {
		for _, tg := range p.Targets {
			sels := selectors(tg.Expr)
			require.Equal(t, len(MetricNames(PromQL(tg.Expr))) > 0, len(sels) > 0, "panel %q: %s", p.Title, tg.Expr)
			for _, s := range sels {
				n++
				for _, f := range dashboardFilter {
					assert.Contains(t, s, f, "panel %q reads %s unfiltered", p.Title, s)
				}
			}
		}
	}
	assert.Greater(t, n, 40)
	// The check sees a selector without them.
	assert.Equal(t, []string{"workqueue_depth", `o2ims_x{job=~"$job"}`}, selectors(`sum(workqueue_depth) + o2ims_x{job=~"$job"}`))
}

// otherController serves what another controller exports under the same generic names as the operator,
// with values no operator of the test reaches (gauges 1e6, counters growing 1e6 a scrape).
func otherController(t *testing.T) string {
	t.Helper()
	var scrapes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n := float64(scrapes.Add(1)) * 1e6
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, `# TYPE workqueue_depth gauge
workqueue_depth{name="provisioningrequests"} 1e6
# TYPE workqueue_retries_total counter
workqueue_retries_total{name="provisioningrequests"} %[1]g
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",method="GET",host="10.0.0.1:443"} %[1]g
# TYPE rest_client_request_duration_seconds histogram
rest_client_request_duration_seconds_bucket{verb="GET",host="10.0.0.1:443",le="+Inf"} %[1]g
rest_client_request_duration_seconds_sum{verb="GET",host="10.0.0.1:443"} %[1]g
rest_client_request_duration_seconds_count{verb="GET",host="10.0.0.1:443"} %[1]g
# TYPE rest_client_rate_limiter_duration_seconds histogram
rest_client_rate_limiter_duration_seconds_bucket{verb="GET",host="10.0.0.1:443",le="+Inf"} %[1]g
rest_client_rate_limiter_duration_seconds_sum{verb="GET",host="10.0.0.1:443"} %[1]g
rest_client_rate_limiter_duration_seconds_count{verb="GET",host="10.0.0.1:443"} %[1]g
`, n)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// sharedPrometheusConfig scrapes the operator and the other controller every second, each target labelled
// with its namespace and cluster as the Prometheus Operator labels a ServiceMonitor's targets.
func sharedPrometheusConfig(operator, other string) string {
	job := func(name, target, ns string) string {
		return fmt.Sprintf(`  - job_name: %s
    static_configs:
      - targets: [%q]
        labels: {namespace: %s, cluster: %s}
`, name, target, ns, sharedCluster)
	}
	return "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n" +
		job(ourJob, operator, ourNamespace) + job(otherJob, other, otherNamespace)
}

// withVariables is a panel query as Grafana sends it with cluster "All" and the given namespace and job.
func withVariables(expr, namespace, job string) string {
	return strings.NewReplacer("$cluster", ".*", "$namespace", namespace, "$job", job).Replace(PromQL(expr))
}

// assertDashboardOnSharedPrometheus runs Debian's real Prometheus scraping the running operator (at
// healthURL) beside another job exporting the same generic metric names, and evaluates the dashboard there:
// the variables offer only the operator; every panel query evaluates; every selector of every query, as
// Grafana sends it for the operator, selects the operator's series only (checked by Prometheus itself:
// count by job and namespace), while the same selectors for the other job do select its series of the
// generic names, so the filter is what keeps them apart.
func assertDashboardOnSharedPrometheus(t *testing.T, dir, healthURL string) {
	t.Helper()
	prom := startPrometheusWith(t, Tool(t, "prometheus"), dir, sharedPrometheusConfig(strings.TrimPrefix(healthURL, "http://"), otherController(t)))
	waitFor(t, 60*time.Second, "both targets scraped a few times", func() (bool, string) {
		v, ok := prom.scalar(t, `sum(count_over_time(up[1m]))`)
		return ok && v >= 10, fmt.Sprint(v)
	})
	var values []string
	prom.api(t, "/api/v1/label/job/values?match[]="+url.QueryEscape(`o2ims_operator_ready{cluster=~".*"}`), &values)
	assert.Equal(t, []string{ourJob}, values, "the job variable's choices")
	prom.api(t, "/api/v1/label/namespace/values?match[]="+url.QueryEscape(`o2ims_operator_ready{cluster=~".*"}`), &values)
	assert.Equal(t, []string{ourNamespace}, values, "the namespace variable's choices")

	d, _, err := LoadDashboard()
	require.NoError(t, err)
	generic, queries := 0, 0
	for _, p := range d.AllPanels() {
		for _, tg := range p.Targets {
			queries++
			var res struct {
				ResultType string `json:"resultType"`
			}
			prom.api(t, "/api/v1/query?query="+url.QueryEscape(withVariables(tg.Expr, ourNamespace, ourJob)), &res)
			assert.Equal(t, "vector", res.ResultType, "panel %q", p.Title)
			for _, sel := range selectors(tg.Expr) {
				for _, who := range [][2]string{{ourNamespace, ourJob}, {otherNamespace, otherJob}} {
					q := fmt.Sprintf("count by (job, namespace) (%s)", withVariables(sel, who[0], who[1]))
					var got struct {
						Result []struct {
							Metric map[string]string `json:"metric"`
						} `json:"result"`
					}
					prom.api(t, "/api/v1/query?query="+url.QueryEscape(q), &got)
					for _, s := range got.Result {
						assert.Equal(t, map[string]string{"job": who[1], "namespace": who[0]}, s.Metric, "panel %q: %s", p.Title, q)
					}
					if who[1] == otherJob && !strings.HasPrefix(sel, "o2ims_") {
						generic++
						assert.NotEmpty(t, got.Result, "panel %q: the other job's %s is not scraped, the test proves nothing", p.Title, sel)
					}
				}
			}
		}
	}
	assert.Greater(t, generic, 3, "selectors of generic names checked against the other job")
	t.Logf("%d panel queries evaluated on a Prometheus shared with %s; %d selectors of generic names kept apart", queries, otherJob, generic)
}
