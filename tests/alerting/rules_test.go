package alerting

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

func repoFile(t *testing.T, rel string) string {
	t.Helper()
	p, err := kubeapi.RepoFile(rel)
	require.NoError(t, err)
	return p
}

// The alerts the issue asks for, by what they watch; the rule file may have more, never fewer.
var requiredAlerts = []string{
	"O2IMSHostQuarantined", "O2IMSProvisioningRequestsFailing", "O2IMSProvisioningRequestStuck",
	"O2IMSHandlerErrorsSustained", "O2IMSNetBoxErrors", "O2IMSNetBoxUnreachable", "O2IMSHostPoolExhausted",
	"O2IMSNorthboundErrors", "O2IMSOperatorNotReady", "O2IMSOperatorAbsent", "O2IMSOperatorNoLeader",
	"O2IMSEventsDropped", "O2IMSKubeAPIRateLimited",
}

// promtool check rules accepts the plain file and the PrometheusRule's spec.
func TestRulesPassPromtoolCheck(t *testing.T) {
	promtool := Tool(t, "promtool")
	out, err := exec.Command(promtool, "check", "rules", repoFile(t, RulesFile)).CombinedOutput()
	require.NoError(t, err, "promtool check rules %s:\n%s", RulesFile, out)

	var pr struct {
		APIVersion string         `json:"apiVersion"`
		Kind       string         `json:"kind"`
		Metadata   map[string]any `json:"metadata"`
		Spec       RuleFile       `json:"spec"`
	}
	require.NoError(t, readYAML(PrometheusRuleFile, &pr))
	spec, err := writeJSONAsYAML(t.TempDir(), "spec.rules.yaml", pr.Spec)
	require.NoError(t, err)
	out, err = exec.Command(promtool, "check", "rules", spec).CombinedOutput()
	require.NoError(t, err, "promtool check rules (the PrometheusRule's spec):\n%s", out)
}

// The PrometheusRule is the plain rule file embedded, byte for byte (comments and formatting kept), so the
// two cannot drift; O2IMS_UPDATE_RULES=1 regenerates it after an edit of the plain file.
func TestPrometheusRuleIsThePlainRuleFile(t *testing.T) {
	plain, err := os.ReadFile(repoFile(t, RulesFile))
	require.NoError(t, err)
	want, err := RenderPrometheusRule(plain)
	require.NoError(t, err)
	path := repoFile(t, PrometheusRuleFile)
	if os.Getenv("O2IMS_UPDATE_RULES") != "" {
		require.NoError(t, os.WriteFile(path, want, 0o644))
	}
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got),
		"%s is not %s embedded; regenerate it: O2IMS_UPDATE_RULES=1 go test -run %s ./tests/alerting/", PrometheusRuleFile, RulesFile, t.Name())

	// And as a resource: the same groups, a PrometheusRule the monitoring overlay applies.
	var pr struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string            `json:"name"`
			Namespace string            `json:"namespace"`
			Labels    map[string]string `json:"labels"`
		} `json:"metadata"`
		Spec RuleFile `json:"spec"`
	}
	require.NoError(t, readYAML(PrometheusRuleFile, &pr))
	rules, err := LoadRules()
	require.NoError(t, err)
	assert.Equal(t, "monitoring.coreos.com/v1", pr.APIVersion)
	assert.Equal(t, "PrometheusRule", pr.Kind)
	assert.Equal(t, "o2ims", pr.Metadata.Namespace)
	assert.Equal(t, rules, pr.Spec)
	kust, err := os.ReadFile(filepath.Join(filepath.Dir(repoFile(t, PrometheusRuleFile)), "kustomization.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(kust), "- "+filepath.Base(PrometheusRuleFile), "the monitoring component applies the PrometheusRule")
}

// Every alert has a severity, a summary and description, and a runbook_url pointing at its own section
// of docs/runbook.md; the runbook has a section for each alert and no section for an alert that is gone.
func TestEveryAlertHasSeverityAndARunbookSection(t *testing.T) {
	rules, err := LoadRules()
	require.NoError(t, err)
	runbook, err := os.ReadFile(repoFile(t, RunbookFile))
	require.NoError(t, err)
	sections := map[string]string{}
	var current string
	for _, line := range strings.Split(string(runbook), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			current = strings.TrimSpace(h)
			sections[current] = ""
			continue
		}
		if current != "" {
			sections[current] += line + "\n"
		}
	}
	names := map[string]bool{}
	for _, a := range rules.Alerts() {
		names[a.Alert] = true
		assert.Contains(t, []string{"critical", "warning"}, a.Labels["severity"], "%s: severity", a.Alert)
		assert.NotEmpty(t, a.Annotations["summary"], "%s: summary", a.Alert)
		assert.NotEmpty(t, a.Annotations["description"], "%s: description", a.Alert)
		want := "https://github.com/o2ims-operator/o2ims-operator/blob/main/docs/runbook.md#" + strings.ToLower(a.Alert)
		assert.Equal(t, want, a.Annotations["runbook_url"], "%s: runbook_url", a.Alert)
		body, ok := sections[a.Alert]
		if assert.True(t, ok, "docs/runbook.md has no section \"## %s\"", a.Alert) {
			for _, part := range []string{"**Meaning.**", "**Confirm.**", "**Fix.**", "**Clears.**"} {
				assert.Contains(t, body, part, "runbook section %s lacks %s", a.Alert, part)
			}
		}
	}
	for _, a := range requiredAlerts {
		assert.True(t, names[a], "alert %s is missing", a)
	}
	for s := range sections {
		if strings.HasPrefix(s, "O2IMS") {
			assert.True(t, names[s], "docs/runbook.md has a section for %s, which is not an alert", s)
		}
	}
}

// The promtool unit tests cover every alert both ways (at least one evaluation where it fires and one
// where it does not), and pass.
func TestEveryAlertIsUnitTestedFiringAndNotFiring(t *testing.T) {
	promtool := Tool(t, "promtool")
	var suite struct {
		RuleFiles          []string `json:"rule_files"`
		EvaluationInterval string   `json:"evaluation_interval"`
		Tests              []struct {
			Name        string `json:"name"`
			Interval    string `json:"interval"`
			InputSeries []struct {
				Series string `json:"series"`
				Values string `json:"values"`
			} `json:"input_series"`
			AlertRuleTest []struct {
				EvalTime  string `json:"eval_time"`
				Alertname string `json:"alertname"`
				ExpAlerts []struct {
					ExpLabels      map[string]string `json:"exp_labels"`
					ExpAnnotations map[string]string `json:"exp_annotations"`
				} `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	require.NoError(t, readYAML(unitTestFile, &suite))
	require.Equal(t, []string{"../../../" + RulesFile}, suite.RuleFiles, "the unit tests test the shipped file")
	firing, quiet := map[string]int{}, map[string]int{}
	for _, tc := range suite.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				firing[a.Alertname]++
			} else {
				quiet[a.Alertname]++
			}
		}
	}
	rules, err := LoadRules()
	require.NoError(t, err)
	for _, a := range rules.Alerts() {
		assert.Positive(t, firing[a.Alert], "%s has no unit test where it fires", a.Alert)
		assert.Positive(t, quiet[a.Alert], "%s has no unit test where it stays quiet", a.Alert)
	}
	cmd := exec.Command(promtool, "test", "rules", filepath.Base(unitTestFile))
	cmd.Dir = filepath.Dir(repoFile(t, unitTestFile))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool test rules:\n%s", out)
	assert.Contains(t, string(out), "SUCCESS")
}

// metricName finds the metric names an expression reads; recording-rule names (level:metric:operations)
// are not metric names of the operator.
var metricName = regexp.MustCompile(`(?:^|[^:\w])((?:o2ims|rest_client)_\w+)(?:$|[^:\w])`)

func usedMetrics(f RuleFile) map[string]bool {
	out := map[string]bool{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			// Pad so that adjacent names do not share the boundary character.
			expr := strings.NewReplacer("(", " ( ", ")", " ) ", "{", " { ", "[", " [ ").Replace(r.Expr)
			for _, m := range metricName.FindAllStringSubmatch(expr, -1) {
				out[m[1]] = true
			}
		}
	}
	return out
}

// The monitoring component stacked on the base renders with the real kubectl (kustomize): the base, the
// ServiceMonitor and the PrometheusRule, whose groups are the plain file's.
func TestMonitoringComponentRendersThePrometheusRule(t *testing.T) {
	assets, err := kubeapi.Assets()
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, kubeapi.WriteKustomization(dir, true, "monitoring"))
	out, err := exec.Command(filepath.Join(assets, "kubectl"), "kustomize", dir).CombinedOutput()
	require.NoError(t, err, "kubectl kustomize with the monitoring component:\n%s", out)
	var rule *RuleFile
	kinds := map[string]bool{}
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var obj struct {
			Kind string   `json:"kind"`
			Spec RuleFile `json:"spec"`
		}
		require.NoError(t, yaml.Unmarshal([]byte(doc), &obj))
		kinds[obj.Kind] = true
		if obj.Kind == "PrometheusRule" {
			rule = &obj.Spec
		}
	}
	assert.True(t, kinds["ServiceMonitor"] && kinds["Deployment"], "kinds rendered: %v", kinds)
	require.NotNil(t, rule, "no PrometheusRule rendered")
	rules, err := LoadRules()
	require.NoError(t, err)
	assert.Equal(t, rules, *rule)
}
