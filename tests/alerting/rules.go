// Package alerting proves the shipped Prometheus rules (manifests/monitoring): promtool checks and unit
// tests of every alert, the PrometheusRule kept identical to the plain rule file, a runbook section per
// alert, and a real Prometheus server scraping the operator binary and firing the alerts, through the real
// Alertmanager with the shipped route (alertmanager.go) to the binary's alarms.
package alerting

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// Shipped files, relative to the repository root.
const (
	RulesFile          = "manifests/monitoring/o2ims-operator.rules.yaml"
	PrometheusRuleFile = "manifests/monitoring/objects/prometheusrule.yaml"
	RunbookFile        = "docs/runbook.md"
	unitTestFile       = "tests/alerting/testdata/o2ims-operator.rules.test.yaml"
)

// Rule is one recording or alerting rule as Prometheus reads it.
type Rule struct {
	Record      string            `json:"record,omitempty"`
	Alert       string            `json:"alert,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Group is a rule group.
type Group struct {
	Name     string `json:"name"`
	Interval string `json:"interval,omitempty"`
	Rules    []Rule `json:"rules"`
}

// RuleFile is a Prometheus rule file (also a PrometheusRule's spec).
type RuleFile struct {
	Groups []Group `json:"groups"`
}

// Alerts lists the alerting rules.
func (f RuleFile) Alerts() []Rule {
	var out []Rule
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out = append(out, r)
			}
		}
	}
	return out
}

// readYAML decodes a repository file strictly (an unknown field is an error).
func readYAML(rel string, into any) error {
	p, err := kubeapi.RepoFile(rel)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	return yaml.UnmarshalStrict(b, into)
}

// LoadRules reads the shipped plain rule file.
func LoadRules() (RuleFile, error) {
	var f RuleFile
	err := readYAML(RulesFile, &f)
	return f, err
}

// prometheusRuleHeader is what the PrometheusRule adds around the plain file's groups.
const prometheusRuleHeader = `# Generated from ../o2ims-operator.rules.yaml (the source of truth) by tests/alerting:
#   O2IMS_UPDATE_RULES=1 go test -run TestPrometheusRuleIsThePlainRuleFile ./tests/alerting/
# For the Prometheus Operator: its ruleSelector must match these labels (docs/operations.md, "Alerts": with
# kube-prometheus-stack, add its release label).
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: o2ims-operator
  namespace: o2ims
  labels:
    app.kubernetes.io/name: o2ims-operator
    role: alert-rules
spec:
`

// RenderPrometheusRule embeds the plain rule file's groups, formatting and comments kept, in a
// PrometheusRule: its spec is the rule file, indented.
func RenderPrometheusRule(plain []byte) ([]byte, error) {
	text := string(plain)
	i := strings.Index(text, "\ngroups:")
	if i < 0 {
		return nil, fmt.Errorf("%s: no top-level groups key", RulesFile)
	}
	var b strings.Builder
	b.WriteString(prometheusRuleHeader)
	for _, line := range strings.SplitAfter(text[i+1:], "\n") {
		if strings.TrimSpace(line) != "" {
			b.WriteString("  ")
		}
		b.WriteString(line)
	}
	return []byte(b.String()), nil
}

// ForAllZero is a test copy of the rules with every alert's `for` set to 0s, so an end-to-end test sees
// an alert fire as soon as its expression holds. Expressions and thresholds stay as shipped.
func ForAllZero(f RuleFile) RuleFile {
	out := RuleFile{}
	b, _ := json.Marshal(f)
	_ = json.Unmarshal(b, &out)
	for gi := range out.Groups {
		for ri := range out.Groups[gi].Rules {
			if out.Groups[gi].Rules[ri].Alert != "" {
				out.Groups[gi].Rules[ri].For = "0s"
			}
		}
	}
	return out
}

// Tool finds a Prometheus tool (promtool, prometheus from Debian's prometheus package). Where
// O2IMS_REQUIRE_PROMTOOL is set (CI) its absence fails the test; elsewhere the test is skipped.
func Tool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("O2IMS_REQUIRE_PROMTOOL") != "" {
			t.Fatalf("%s is required here (apt-get install prometheus: Debian's package has promtool and prometheus)", name)
		}
		t.Skipf("%s not installed (CI installs Debian's prometheus package and requires it)", name)
	}
	return p
}

// writeJSONAsYAML writes v as YAML to dir/name and returns the path.
func writeJSONAsYAML(dir, name string, v any) (string, error) {
	b, err := yaml.Marshal(v)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, name)
	return p, os.WriteFile(p, b, 0o600)
}
