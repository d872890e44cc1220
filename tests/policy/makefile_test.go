package policy

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// `make help` lists every target the Makefile declares phony, each once on one line with what it does,
// and lists nothing that is not a target (a declared target without a recipe, like the old `unit`, is one).
func TestMakeHelpListsEveryTargetOnce(t *testing.T) {
	raw, err := os.ReadFile("Makefile")
	require.NoError(t, err)
	mk := string(raw)
	phony := regexp.MustCompile(`(?m)^\.PHONY:(.*)$`).FindStringSubmatch(mk)
	require.NotNil(t, phony, "no .PHONY line")
	targets := strings.Fields(phony[1])
	for _, tg := range targets {
		// Every phony target is defined, with a "## " line saying what it does.
		assert.Regexp(t, `(?m)^`+regexp.QuoteMeta(tg)+`:[^=\n]*## \S`, mk, "target %s has no `## what it does`", tg)
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	out, err := exec.Command("make", "-s", "--no-print-directory", "help").CombinedOutput()
	require.NoError(t, err, string(out))
	var listed []string
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		f := strings.Fields(line)
		require.GreaterOrEqual(t, len(f), 2, "a help line without its description: %q", line)
		listed = append(listed, f[0])
	}
	assert.ElementsMatch(t, targets, listed)
}
