package policy

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// architectureDoc is the map of the code a newcomer reads first; its details live in package doc
// comments, so it stays short enough to read in ten minutes.
const (
	architectureDoc      = "docs/architecture.md"
	architectureMaxBytes = 15000
)

func TestArchitectureMapIsShort(t *testing.T) {
	b, err := os.ReadFile(architectureDoc)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(b), architectureMaxBytes,
		"%s is %d bytes: it is a map, at most %d; put the details in the doc comment of the package they describe",
		architectureDoc, len(b), architectureMaxBytes)
}

// A map that names a file or folder that is gone sends the reader nowhere.
func TestArchitecturePathsExist(t *testing.T) {
	b, err := os.ReadFile(architectureDoc)
	require.NoError(t, err)
	paths := repoPaths(string(b))
	require.NotEmpty(t, paths, "no backticked path found in %s: has the test stopped reading it?", architectureDoc)
	for _, p := range paths {
		_, err := os.Stat(p)
		assert.NoError(t, err, "%s names `%s`, which is not in the repository", architectureDoc, p)
	}
}

func TestRepoPathsReadsWhatTheMapNames(t *testing.T) {
	doc := "The `framework/` and `handlers/porch.go`, `main_env.go`, `api/v1alpha1`, `tests/...`, " +
		"`docs/chain.md`; not `k8s.io/utils/clock`, `/readyz`, `Type.Method`, `spec.Parse`, `a b/c`.\n" +
		"```\nmain ──▶ `inside/a/fence.go`\n```\n"
	assert.Equal(t, []string{"framework/", "handlers/porch.go", "main_env.go", "api/v1alpha1", "tests", "docs/chain.md"},
		repoPaths(doc))
}

var (
	fence    = regexp.MustCompile("(?s)```.*?```")
	backtick = regexp.MustCompile("`([^`\n]+)`")
	pathLike = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]*)*$`)
	fileExts = []string{".go", ".md", ".yaml", ".yml", ".json", ".sh", ".mod"}
)

// repoPaths lists the backticked spans of a Markdown text (outside fenced blocks) that name a repository
// path: a file by its extension, a folder by its trailing slash, or a slash-separated path whose first
// element is no host name (k8s.io/…) and which is not a URL path (/readyz). "dir/..." names dir.
func repoPaths(doc string) []string {
	var out []string
	for _, m := range backtick.FindAllStringSubmatch(fence.ReplaceAllString(doc, ""), -1) {
		p, tree := strings.CutSuffix(m[1], "/...")
		if !pathLike.MatchString(p) {
			continue
		}
		first, _, nested := strings.Cut(p, "/")
		isFile := slices.ContainsFunc(fileExts, func(ext string) bool { return strings.HasSuffix(p, ext) })
		if tree || isFile || (nested && !strings.Contains(first, ".")) {
			out = append(out, p)
		}
	}
	return out
}
