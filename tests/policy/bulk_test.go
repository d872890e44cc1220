package policy

// Files and types a reader can walk: no production file longer than maxFileLines lines, and no type with
// more than maxMethods methods (declared in its package's non-test files, pointer and value receivers
// together, a generic type's too). A file or a type over the limit holds more than one concept: split it
// by concept (netbox.Client became a struct of parts, issue 37). Production is the set TestFunctionSizes
// reads: every non-test file of our packages outside tests/.

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	maxFileLines = 450
	maxMethods   = 30
)

// fileSizeAllowed and typeSizeAllowed are files and types allowed over their limit while a split is under
// way, as the check prints them (a module-relative file; "package path.Type"). They are empty and stay so:
// an entry that matches no offender fails the test, so one added for a split goes as the split lands.
var (
	fileSizeAllowed []string
	typeSizeAllowed []string
)

// bulkOffender is one file or type over its limit.
type bulkOffender struct {
	name  string // a module-relative file, or "package path.Type"
	count int
	limit int
	what  string // "lines" or "methods"
}

func (o bulkOffender) String() string {
	return fmt.Sprintf("%s has %d %s (at most %d)", o.name, o.count, o.what, o.limit)
}

// productionFiles calls fn with every production file of pkgs that pick accepts: its module-relative
// package path, its module-relative name and its path on disk.
func productionFiles(pkgs []goPackage, root string, pick func(me string) bool, fn func(me, file, path string) error) error {
	for _, p := range pkgs {
		me, ok := rel(p.ImportPath)
		if !ok || !pick(me) {
			continue
		}
		if me == "" {
			me = p.Name // the root package: "main"
		}
		for _, name := range p.GoFiles {
			path := filepath.Join(p.Dir, name)
			file, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			if err := fn(me, filepath.ToSlash(file), path); err != nil {
				return err
			}
		}
	}
	return nil
}

// lineCount is the number of lines of src, a last line without its newline included.
func lineCount(src []byte) int {
	n := bytes.Count(src, []byte("\n"))
	if len(src) > 0 && src[len(src)-1] != '\n' {
		n++
	}
	return n
}

// bulkOffenders lists the files over maxFileLines and the types over maxMethods among the production
// files of pkgs, sorted by name.
func bulkOffenders(pkgs []goPackage, root string, pick func(me string) bool) ([]bulkOffender, error) {
	var out []bulkOffender
	methods := map[string]int{} // "package path.Type" → methods
	err := productionFiles(pkgs, root, pick, func(me, file, path string) error {
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if n := lineCount(src); n > maxFileLines {
			out = append(out, bulkOffender{name: file, count: n, limit: maxFileLines, what: "lines"})
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for typ, n := range methodsByType(f) {
			methods[me+"."+typ] += n
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for typ, n := range methods {
		if n > maxMethods {
			out = append(out, bulkOffender{name: typ, count: n, limit: maxMethods, what: "methods"})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// methodsByType counts the methods f declares per receiver type (the type's name, without * or type
// parameters).
func methodsByType(f *ast.File) map[string]int {
	out := map[string]int{}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv == nil || len(fd.Recv.List) == 0 {
			continue
		}
		if typ, method, ok := strings.Cut(funcName(fd), "."); ok && method != "" {
			out[typ]++
		}
	}
	return out
}

func TestFileAndTypeSizes(t *testing.T) {
	root, err := os.Getwd()
	require.NoError(t, err)
	product := func(me string) bool { return !under(me, "tests") }
	offenders, err := bulkOffenders(listPackages(t), root, product)
	require.NoError(t, err)
	used := map[string]bool{}
	var files, types []string
	for _, o := range offenders {
		allow, bad := typeSizeAllowed, &types
		if o.what == "lines" {
			allow, bad = fileSizeAllowed, &files
		}
		if a, ok := allowed(o.name, allow); ok {
			used[a] = true
			continue
		}
		*bad = append(*bad, o.String())
	}
	if len(files) > 0 {
		t.Errorf("production files too long: split them by concept\n%s", strings.Join(files, "\n"))
	}
	if len(types) > 0 {
		t.Errorf("types with too many methods: split them by concept\n%s", strings.Join(types, "\n"))
	}
	for _, a := range fileSizeAllowed {
		assert.True(t, used[a], "fileSizeAllowed lists %q, which is over no limit any more: remove it", a)
	}
	for _, a := range typeSizeAllowed {
		assert.True(t, used[a], "typeSizeAllowed lists %q, which is over no limit any more: remove it", a)
	}

	t.Run("the check catches both limits", func(t *testing.T) {
		dir := t.TempDir()
		write := func(name, src string) {
			require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644))
		}
		// x/long.go: one line too many, its last line without a newline; x/fits.go: exactly the limit.
		write("x/long.go", "package x\n"+strings.Repeat("\n", maxFileLines-1)+"// last")
		write("x/fits.go", "package x\n"+strings.Repeat("\n", maxFileLines-1))
		// Many: maxMethods+1 methods over two files, pointer and value receivers; Gen[K, V]: generic,
		// maxMethods+1; Few: maxMethods (at the limit); methods of test files do not count.
		var many, gen, few strings.Builder
		for i := range maxMethods + 1 {
			recv := "m *Many"
			if i%2 == 0 {
				recv = "m Many"
			}
			fmt.Fprintf(&many, "func (%s) M%d() {}\n", recv, i)
			fmt.Fprintf(&gen, "func (g *Gen[K, V]) M%d() {}\n", i)
			if i < maxMethods {
				fmt.Fprintf(&few, "func (Few) M%d() {}\n", i)
			}
		}
		half := strings.Index(many.String(), "func (m *Many) M15()")
		write("y/a.go", "package y\n\ntype Many struct{}\ntype Few struct{}\n\n"+many.String()[:half]+few.String())
		write("y/b.go", "package y\n\ntype Gen[K comparable, V any] struct{}\n\n"+many.String()[half:]+gen.String())
		write("y/c_test.go", "package y\n\nfunc (Few) Extra() {}\n")
		pkgs := []goPackage{
			{ImportPath: modulePath + "/x", Dir: filepath.Join(dir, "x"), GoFiles: []string{"fits.go", "long.go"}},
			{ImportPath: modulePath + "/y", Dir: filepath.Join(dir, "y"), GoFiles: []string{"a.go", "b.go"}, TestGoFiles: []string{"c_test.go"}},
			{ImportPath: modulePath, Name: "main", Dir: filepath.Join(dir, "y"), GoFiles: []string{"b.go"}}, // the root: its name
		}
		got, err := bulkOffenders(pkgs, dir, func(string) bool { return true })
		require.NoError(t, err)
		var names []string
		for _, o := range got {
			names = append(names, o.String())
		}
		assert.Equal(t, []string{
			"main.Gen has 31 methods (at most 30)",
			"x/long.go has 451 lines (at most 450)",
			"y.Gen has 31 methods (at most 30)",
			"y.Many has 31 methods (at most 30)",
		}, names)
		_, ok := allowed("y.Many", []string{"y.Many"})
		assert.True(t, ok, "a type entry")
		_, ok = allowed("y.Many", []string{"Many", "x.Many", "y.Many.M1", "y/"})
		assert.False(t, ok, "an entry names the package path and the type, exactly")
		_, ok = allowed("x/long.go", []string{"long.go", "x/"})
		assert.False(t, ok, "a file entry names the file, exactly")
	})
}

// allowed reports the entry of allow that names name exactly.
func allowed(name string, allow []string) (string, bool) {
	for _, a := range allow {
		if a == name {
			return a, true
		}
	}
	return "", false
}
