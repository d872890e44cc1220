// Package readme keeps a generated section of a documentation page equal to the code it is generated
// from: the environment, the status messages and the alarms are each one table in code, and
// docs/configuration.md, docs/chain.md and docs/api-alarms.md show them between two marker lines,
// "<!-- name: … -->" and "<!-- /name -->".
package readme

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Section checks that the page at path holds generated between the markers of section name; with
// O2IMS_UPDATE_README=1 it writes generated there instead. rerun is the command that does that, said
// when they differ.
func Section(t testing.TB, path, name, generated, rerun string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	readme := string(raw)
	begin := strings.Index(readme, "<!-- "+name+":")
	end := strings.Index(readme, "<!-- /"+name+" -->")
	require.True(t, begin >= 0 && end > begin, "%s has no %s markers", path, name)
	from := begin + strings.IndexByte(readme[begin:], '\n') + 1
	require.True(t, from > begin && from <= end, "%s: the %s begin marker is not a line of its own", path, name)
	if os.Getenv("O2IMS_UPDATE_README") == "1" {
		require.NoError(t, os.WriteFile(path, []byte(readme[:from]+generated+readme[end:]), 0o644))
		return
	}
	assert.Equal(t, generated, readme[from:end], "%s's %s section differs from the code; run O2IMS_UPDATE_README=1 %s", path, name, rerun)
}
