package policy

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every package says what it is: one of its files (a test file for a package of tests only) carries a
// package doc comment, so `go doc` and a newcomer reading the folder meet the package's purpose first.
func TestEveryPackageHasADocComment(t *testing.T) {
	fset := token.NewFileSet()
	for _, p := range listPackages(t) {
		documented := false
		for _, f := range p.files() {
			file, err := parser.ParseFile(fset, filepath.Join(p.Dir, f), nil, parser.PackageClauseOnly|parser.ParseComments)
			require.NoError(t, err)
			if file.Doc != nil && strings.TrimSpace(file.Doc.Text()) != "" {
				documented = true
				break
			}
		}
		assert.True(t, documented, "package %s has no package doc comment (// Package … above a package clause)", p.ImportPath)
	}
}
