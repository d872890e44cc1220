package alarms

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	readmePath  = "../../README.md"
	alarmsBegin = "<!-- alarms: nbi/alarms/definitions.go; TestTheAlarmTableIsTheREADMEs checks it, O2IMS_UPDATE_README=1 rewrites it -->\n"
	alarmsEnd   = "<!-- /alarms -->"
)

// The README's alarm table is the definitions' (READMETable).
func TestTheAlarmTableIsTheREADMEs(t *testing.T) {
	raw, err := os.ReadFile(readmePath)
	require.NoError(t, err)
	readme := string(raw)
	a, b := strings.Index(readme, alarmsBegin), strings.Index(readme, alarmsEnd)
	require.True(t, a >= 0 && b > a, "README.md has no alarm markers")
	want := READMETable()
	if os.Getenv("O2IMS_UPDATE_README") == "1" {
		readme = readme[:a+len(alarmsBegin)] + want + readme[b:]
		require.NoError(t, os.WriteFile(readmePath, []byte(readme), 0o644))
		return
	}
	assert.Equal(t, want, readme[a+len(alarmsBegin):b], "README's alarm table differs from nbi/alarms/definitions.go; run O2IMS_UPDATE_README=1 go test -run TestTheAlarmTableIsTheREADMEs ./nbi/alarms")
}

// Every definition is complete, its names unique, and its runbook section is one docs/runbook.md has
// (the section the matching alert rule links).
func TestEveryDefinitionIsCompleteAndItsRunbookSectionExists(t *testing.T) {
	raw, err := os.ReadFile("../../docs/runbook.md")
	require.NoError(t, err)
	anchors := map[string]bool{}
	for _, line := range strings.Split(string(raw), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			anchors[strings.ToLower(strings.TrimSpace(h))] = true
		}
	}
	rules, err := os.ReadFile("../../manifests/monitoring/o2ims-operator.rules.yaml")
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
