package app

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/tests/readme"
)

// repoRoot is the repository's root, seen from this package's folder (where go test runs).
var repoRoot = filepath.Join("..", "..")

// docs/configuration.md's tables are env.go's, row for row (O2IMS_UPDATE_README=1 writes them).
func TestTheEnvironmentTableIsDocumented(t *testing.T) {
	readme.Section(t, filepath.Join(repoRoot, "docs", "configuration.md"), "environment", markdownEnvironment(), "go test -run TestTheEnvironmentTableIsDocumented ./internal/app")
}

// Every variable the operator's code reads is in the table (and so in --help and docs/configuration.md), and the table
// names nothing the code does not read.
func TestEveryVariableReadIsDocumented(t *testing.T) {
	documented := map[string]bool{}
	for _, g := range environment {
		for _, v := range g.vars {
			for _, n := range v.names {
				documented[n] = true
			}
		}
	}
	// The product's string literals of environment shape (capitals with an underscore: nothing else in
	// the code looks so) are the variables it reads; a documented name must appear as a literal somewhere.
	envShape := regexp.MustCompile(`"([A-Z][A-Z0-9]*_[A-Z0-9_]+)"`)
	notOurs := map[string]bool{
		"KUBERNETES_SERVICE_HOST": true, // set by the kubelet: how the operator knows it runs in a pod
		"IMS_EP":                  true, // a JSON member of the OCloud Available Notification (nbi/smoclient), no variable
	}
	var all strings.Builder
	// The product: every package but the tests' own, the simulators and the build tools.
	notProduct := regexp.MustCompile(`^(tests|hack|tests/sim/netboxsim|subscriptions/smo|testdata)(/|$)`)
	err := filepath.WalkDir(repoRoot, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		p, err := filepath.Rel(repoRoot, path) // as the repository names it
		if err != nil {
			return err
		}
		p = filepath.ToSlash(p)
		if d.IsDir() {
			if p != "." && (strings.HasPrefix(d.Name(), ".") || notProduct.MatchString(p)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || p == "internal/app/env.go" {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		all.Write(src)
		for _, m := range envShape.FindAllSubmatch(src, -1) {
			if name := string(m[1]); !notOurs[name] {
				assert.True(t, documented[name], "%s reads %s, which the environment table does not list", p, name)
			}
		}
		return nil
	})
	require.NoError(t, err)
	seen := func(n string) bool { return strings.Contains(all.String(), `"`+n+`"`) }
	for n := range documented {
		assert.True(t, seen(n), "the environment table lists %s, which no code reads", n)
	}
}

// --help lists the flags and then every variable with its default.
func TestHelpListsTheEnvironment(t *testing.T) {
	var out bytes.Buffer
	_, err := parseFlags([]string{"--help"}, &out)
	require.Error(t, err)
	help := out.String()
	assert.Contains(t, help, "-liveness")
	for _, g := range environment {
		assert.Contains(t, help, plain(g.title))
		for _, v := range g.vars {
			assert.Contains(t, help, strings.Join(v.names, ", "))
			assert.Contains(t, help, plain(v.def))
		}
	}
	assert.NotContains(t, help, "`", "Markdown left in the terminal's text")
}
