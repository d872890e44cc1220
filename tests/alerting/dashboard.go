package alerting

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// The Grafana dashboard, relative to the repository root: the JSON model is the source of truth, the
// ConfigMap (for Grafana's dashboard sidecar) embeds it byte for byte.
const (
	DashboardFile          = "manifests/monitoring/dashboard.json"
	DashboardConfigMapFile = "manifests/monitoring/objects/dashboard-configmap.yaml"
	dashboardConfigMapKey  = "o2ims-operator.json"
)

// Target is one query of a panel.
type Target struct {
	RefID        string `json:"refId"`
	Expr         string `json:"expr"`
	LegendFormat string `json:"legendFormat"`
	Datasource   struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
}

// Panel is a dashboard panel (a row holds panels of its own when collapsed).
type Panel struct {
	ID      int      `json:"id"`
	Type    string   `json:"type"`
	Title   string   `json:"title"`
	Targets []Target `json:"targets"`
	Panels  []Panel  `json:"panels"`
}

// Dashboard is the part of Grafana's JSON model the tests read.
type Dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []Panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

// LoadDashboard reads the shipped dashboard.
func LoadDashboard() (Dashboard, []byte, error) {
	var d Dashboard
	p, err := kubeapi.RepoFile(DashboardFile)
	if err != nil {
		return d, nil, err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return d, nil, err
	}
	return d, b, json.Unmarshal(b, &d)
}

// AllPanels lists every panel, those inside rows included, rows excluded.
func (d Dashboard) AllPanels() []Panel {
	var out []Panel
	var walk func([]Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			if p.Type != "row" {
				out = append(out, p)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// grafanaIntervals are Grafana's built-in range variables, replaced by a duration for Prometheus's
// parser (Grafana does the same before it sends the query).
var grafanaIntervals = strings.NewReplacer("$__rate_interval", "5m", "${__rate_interval}", "5m",
	"$__interval", "1m", "${__interval}", "1m", "$__range", "6h", "${__range}", "6h")

// PromQL is a panel query as Prometheus receives it.
func PromQL(expr string) string { return grafanaIntervals.Replace(expr) }

// RuleFileOf puts every query of d in a rule file, one recording rule each, for promtool check rules.
func RuleFileOf(d Dashboard) RuleFile {
	g := Group{Name: "dashboard"}
	for _, p := range d.AllPanels() {
		for _, t := range p.Targets {
			g.Rules = append(g.Rules, Rule{Record: fmt.Sprintf("dashboard:panel_%d:%s", p.ID, strings.ToLower(t.RefID)), Expr: PromQL(t.Expr)})
		}
	}
	return RuleFile{Groups: []Group{g}}
}

// promqlWords are the words of PromQL that are not metric names where a metric name could stand.
var promqlWords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"bool": true, "offset": true, "and": true, "or": true, "unless": true, "inf": true, "nan": true, "atan2": true,
}

var (
	promqlString    = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	promqlMatchers  = regexp.MustCompile(`\{[^}]*\}`)
	promqlRange     = regexp.MustCompile(`\[[^\]]*\]`)
	promqlOffset    = regexp.MustCompile(`\boffset\s+-?\w+`)
	promqlGrouping  = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promqlNumber    = regexp.MustCompile(`\b\d+(?:\.\d+)?(?:e[+-]?\d+)?\b`)
	promqlIdentUse  = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*\s*\(?`)
	recordingRuleRE = regexp.MustCompile(`^[a-zA-Z_]\w*:`)
)

// MetricNames finds the metric names an expression selects: identifiers that are not functions or
// aggregations (followed by "("), keywords, label names (in matchers or grouping clauses), strings
// or numbers. Prometheus's parser has accepted the expression before this is asked (promtool).
func MetricNames(expr string) []string {
	s := promqlString.ReplaceAllString(expr, `""`)
	s = promqlMatchers.ReplaceAllString(s, " ")
	s = promqlRange.ReplaceAllString(s, " ")
	s = promqlOffset.ReplaceAllString(s, " ")
	s = promqlGrouping.ReplaceAllString(s, " ")
	s = promqlNumber.ReplaceAllString(s, " ")
	seen := map[string]bool{}
	for _, m := range promqlIdentUse.FindAllString(s, -1) {
		if strings.HasSuffix(m, "(") {
			continue // a function or an aggregation
		}
		name := strings.TrimSpace(m)
		if promqlWords[strings.ToLower(name)] {
			continue
		}
		seen[name] = true
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// IsRecordingRule reports a level:metric:operations name, which no binary exports.
func IsRecordingRule(name string) bool { return recordingRuleRE.MatchString(name) }

// dashboardConfigMapHeader is what the ConfigMap adds around the dashboard.
const dashboardConfigMapHeader = `# Generated from dashboard.json (the source of truth) by tests/alerting:
#   O2IMS_UPDATE_RULES=1 go test -run TestDashboardConfigMapIsTheDashboard ./tests/alerting/
# For Grafana's dashboard sidecar (kube-prometheus-stack: grafana.sidecar.dashboards), which loads every
# ConfigMap labelled grafana_dashboard: "1" in the namespaces it searches.
apiVersion: v1
kind: ConfigMap
metadata:
  name: o2ims-operator-dashboard
  namespace: o2ims
  labels:
    app.kubernetes.io/name: o2ims-operator
    grafana_dashboard: "1"
data:
  ` + dashboardConfigMapKey + `: |
`

// RenderDashboardConfigMap embeds the dashboard's JSON in the ConfigMap as a literal block: every line
// indented, so the value is the file byte for byte (it ends with one newline, as "|" keeps).
func RenderDashboardConfigMap(dashboard []byte) ([]byte, error) {
	text := string(dashboard)
	if !strings.HasSuffix(text, "\n") || strings.HasSuffix(text, "\n\n") {
		return nil, fmt.Errorf("%s must end with exactly one newline", DashboardFile)
	}
	if strings.ContainsAny(text, "\t\r") {
		return nil, fmt.Errorf("%s must not contain tabs or carriage returns", DashboardFile)
	}
	var b strings.Builder
	b.WriteString(dashboardConfigMapHeader)
	for _, line := range strings.SplitAfter(strings.TrimSuffix(text, "\n"), "\n") {
		b.WriteString("    ")
		b.WriteString(line)
	}
	b.WriteString("\n")
	return []byte(b.String()), nil
}
