package policy

// The repository stands alone: a bare clone builds, tests and runs with nothing beside it. These tests read
// the checkout as git sees it (what a clone gets), not the working directory's leftovers.

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tracked lists the files a clone of this checkout gets.
func tracked(t *testing.T) []string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: cannot tell which files a clone gets")
	}
	out, err := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Skipf("not a git checkout (%v): nothing to compare a clone against", err)
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f == "" {
			continue
		}
		if _, err := os.Stat(f); err == nil { // deleted in the working tree but not yet staged
			files = append(files, f)
		}
	}
	require.NotEmpty(t, files)
	return files
}

// code is what runs at build, test or run time (prose and reference data may name the outside world).
func code(path string) bool {
	base := filepath.Base(path)
	switch {
	case strings.HasPrefix(path, "testdata/"):
		return false
	case strings.HasSuffix(path, ".go"), strings.HasSuffix(path, ".sh"), strings.HasSuffix(path, ".yaml"),
		strings.HasSuffix(path, ".yml"), strings.HasSuffix(path, ".mod"):
		return true
	case base == "Makefile", base == "Dockerfile", path == ".ci/run":
		return true
	}
	return false
}

// outside matches a path that leaves the checkout for the folder our own machines keep beside it. The
// pattern is assembled so that this file does not match itself.
var outside = regexp.MustCompile(`\.\./` + `shared\b|"\.\.",\s*"` + `shared"|` + `O2IMS_SHARED` + `_DIR`)

func TestNothingReadsOutsideTheCheckout(t *testing.T) {
	for _, f := range tracked(t) {
		if !code(f) {
			continue
		}
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
		for n := 1; sc.Scan(); n++ {
			if outside.MatchString(sc.Text()) {
				t.Errorf("%s:%d reads beside the checkout, which a clone does not have: %s (copy what it needs into testdata/reference with its source)",
					f, n, strings.TrimSpace(sc.Text()))
			}
		}
	}
}

func TestNoBinaryIsTracked(t *testing.T) {
	for _, f := range tracked(t) {
		fh, err := os.Open(f)
		require.NoError(t, err)
		head := make([]byte, 8000) // git's own test for "binary": a NUL in the first 8000 bytes
		n, _ := fh.Read(head)
		fh.Close()
		assert.False(t, bytes.IndexByte(head[:n], 0) >= 0, "%s is binary; build outputs stay out of git", f)
	}
}

// Every main package's `go build` output (named after the last element of its import path, written where
// go build runs) is ignored, so no binary can be committed by accident again.
func TestMainPackageOutputsAreIgnored(t *testing.T) {
	tracked(t) // skips outside a git checkout
	out, err := exec.Command("go", "list", "-f", `{{if eq .Name "main"}}{{.Dir}} {{.ImportPath}}{{end}}`, "./...").Output()
	require.NoError(t, err)
	root, err := os.Getwd()
	require.NoError(t, err)
	var candidates []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		dir, importPath, ok := strings.Cut(line, " ")
		require.True(t, ok, line)
		rel, err := filepath.Rel(root, dir)
		require.NoError(t, err)
		name := importPath[strings.LastIndex(importPath, "/")+1:]
		candidates = append(candidates, filepath.Join(rel, name), name) // built in its folder, or from the root
	}
	require.NotEmpty(t, candidates)
	for _, c := range candidates {
		err := exec.Command("git", "check-ignore", "-q", "--no-index", c).Run()
		assert.NoError(t, err, "%s (a go build output) is not in .gitignore", c)
	}
}

// The reference documents are the upstream bytes their SOURCES.md names: the sha256 of each is recomputed.
func TestReferenceFilesMatchSources(t *testing.T) {
	dir := filepath.Join("testdata", "reference")
	index, err := os.ReadFile(filepath.Join(dir, "SOURCES.md"))
	require.NoError(t, err)
	row := regexp.MustCompile(`(?m)^\| ([^|]+?) \|.*\| ([0-9a-f]{64}) \|$`)
	listed := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(index), -1) {
		listed[m[1]] = m[2]
	}
	require.NotEmpty(t, listed, "SOURCES.md has no file | … | sha256 rows")
	var onDisk []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".md") {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		onDisk = append(onDisk, filepath.ToSlash(rel))
		return nil
	}))
	assert.ElementsMatch(t, keys(listed), onDisk, "every reference file is listed in SOURCES.md, and only those")
	for name, want := range listed {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if !assert.NoError(t, err) {
			continue
		}
		sum := sha256.Sum256(data)
		assert.Equal(t, want, hex.EncodeToString(sum[:]), "%s differs from the upstream bytes SOURCES.md names", name)
	}
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
