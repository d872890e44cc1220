package alarms

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/tests/readme"
)

// The README's alarm table is the definitions' (READMETable).
func TestTheAlarmTableIsDocumented(t *testing.T) {
	readme.Section(t, "../docs/api-alarms.md", "alarms", READMETable(), "go test -run TestTheAlarmTableIsDocumented ./alarms")
}

// Every definition is complete, its names unique, and its runbook section is one docs/runbook.md has
// (the section the matching alert rule links).
func TestEveryDefinitionIsCompleteAndItsRunbookSectionExists(t *testing.T) {
	raw, err := os.ReadFile("../docs/runbook.md")
	require.NoError(t, err)
	anchors := map[string]bool{}
	for _, line := range strings.Split(string(raw), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			anchors[strings.ToLower(strings.TrimSpace(h))] = true
		}
	}
	rules, err := os.ReadFile("../manifests/monitoring/o2ims-operator.rules.yaml")
	require.NoError(t, err)
	names, ids, causes := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, d := range Definitions {
		require.NotEmpty(t, d.Name)
		require.False(t, names[d.Name] || ids[d.ID()] || causes[d.ProbableCauseID()], "%s: unique", d.Name)
		names[d.Name], ids[d.ID()], causes[d.ProbableCauseID()] = true, true, true
		for _, f := range []string{d.Description, d.Repair, d.Cause, d.CauseText} {
			require.NotEmpty(t, f, d.Name)
		}
		require.Contains(t, []Clearing{Automatic, Manual}, d.Clearing, d.Name)
		require.True(t, d.Severity >= SeverityCritical && d.Severity < SeverityCleared, d.Name)
		require.Contains(t, scopeWords, d.Scope, d.Name)
		if d.Scope == ScopeAlert { // an alert brings its own runbook_url
			require.Empty(t, d.Runbook, d.Name)
		} else {
			require.True(t, anchors[d.Runbook], "%s: docs/runbook.md has no section #%s", d.Name, d.Runbook)
			require.Contains(t, string(rules), "runbook_url: "+d.RunbookURL(), "%s: an alert rule links the same section", d.Name)
		}
		got, ok := ByID(d.ID())
		require.True(t, ok)
		require.Same(t, d, got)
	}
}
