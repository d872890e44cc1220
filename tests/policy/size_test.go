package policy

// Functions a reader can hold in their head: no production function (a declaration or a function literal)
// longer than maxLines lines from its `func` to its closing brace, and none taking more than maxParams
// parameters (the receiver not counted). Production is every non-test file of our packages outside tests/
// (the harnesses, the bench and the local run are tools, not the product), read as `go list` sees them.

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	maxLines  = 80
	maxParams = 6
)

// sizeAllowed are the offenders being split elsewhere right now (issue 26), as "file function" or a
// folder prefix ending in "/". This list must shrink to empty: an entry that matches no offender any more
// fails the test, so it is removed as soon as its function is split.
var sizeAllowed []string

// sizeOffender is one function over a limit.
type sizeOffender struct {
	file, name    string // module-relative file; Type.Method, function, or "… (a function literal)"
	line          int
	lines, params int
}

func (o sizeOffender) String() string {
	var why []string
	if o.lines > maxLines {
		why = append(why, fmt.Sprintf("%d lines (at most %d)", o.lines, maxLines))
	}
	if o.params > maxParams {
		why = append(why, fmt.Sprintf("%d parameters (at most %d)", o.params, maxParams))
	}
	return fmt.Sprintf("%s:%d: %s has %s", o.file, o.line, o.name, strings.Join(why, " and "))
}

func (o sizeOffender) allowed(allow []string) (string, bool) {
	for _, a := range allow {
		if strings.HasSuffix(a, "/") && strings.HasPrefix(o.file, a) || a == o.file+" "+o.name {
			return a, true
		}
	}
	return "", false
}

// sizeOffenders lists every function over a limit in the files of pkgs that pick accepts; files are named
// relative to root.
func sizeOffenders(pkgs []goPackage, root string, pick func(me string) bool) ([]sizeOffender, error) {
	var out []sizeOffender
	for _, p := range pkgs {
		me, ok := rel(p.ImportPath)
		if !ok || !pick(me) {
			continue
		}
		for _, name := range p.GoFiles {
			path := filepath.Join(p.Dir, name)
			file, err := filepath.Rel(root, path)
			if err != nil {
				return nil, err
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return nil, err
			}
			out = append(out, fileSizeOffenders(fset, f, filepath.ToSlash(file))...)
		}
	}
	return out, nil
}

func fileSizeOffenders(fset *token.FileSet, f *ast.File, file string) []sizeOffender {
	var out []sizeOffender
	check := func(name string, n ast.Node, typ *ast.FuncType) {
		params := 0
		for _, field := range typ.Params.List {
			params += max(len(field.Names), 1)
		}
		from, to := fset.Position(n.Pos()).Line, fset.Position(n.End()).Line
		if o := (sizeOffender{file: file, name: name, line: from, lines: to - from + 1, params: params}); o.lines > maxLines || o.params > maxParams {
			out = append(out, o)
		}
	}
	for _, d := range f.Decls {
		outer := "package-level"
		if fd, ok := d.(*ast.FuncDecl); ok {
			outer = funcName(fd)
			if fd.Body != nil {
				check(outer, fd, fd.Type)
			}
		}
		ast.Inspect(d, func(n ast.Node) bool {
			if lit, ok := n.(*ast.FuncLit); ok {
				check(outer+" (a function literal)", lit, lit.Type)
			}
			return true
		})
	}
	return out
}

// funcName is Type.Method or function.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fd.Name.Name
		}
		return fd.Name.Name
	}
}

func TestFunctionSizes(t *testing.T) {
	root, err := os.Getwd()
	require.NoError(t, err)
	product := func(me string) bool { return !under(me, "tests") }
	offenders, err := sizeOffenders(listPackages(t), root, product)
	require.NoError(t, err)
	used := map[string]bool{}
	var bad []string
	for _, o := range offenders {
		if a, ok := o.allowed(sizeAllowed); ok {
			used[a] = true
			continue
		}
		bad = append(bad, o.String())
	}
	if len(bad) > 0 {
		t.Errorf("functions too long or taking too many parameters: split them\n%s", strings.Join(bad, "\n"))
	}
	for _, a := range sizeAllowed {
		assert.True(t, used[a], "sizeAllowed lists %q, which is over no limit any more: remove it", a)
	}

	t.Run("the check catches both limits", func(t *testing.T) {
		long := "package x\n\nfunc long() {\n" + strings.Repeat("\t_ = 1\n", maxLines-1) + "}\n\n" +
			"func fits() {\n" + strings.Repeat("\t_ = 1\n", maxLines-2) + "}\n\n" +
			"type T struct{}\n\nfunc (t *T) many(a, b, c int, d string, e, f any, g bool) {}\n\n" +
			"func six(a, b, c int, d string, e, f any) {}\n\n" +
			"var v = func(int, int, int, int, int, int, int) {}\n"
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "x.go", long, parser.SkipObjectResolution)
		require.NoError(t, err)
		got := fileSizeOffenders(fset, f, "x/x.go")
		var names []string
		for _, o := range got {
			names = append(names, o.String())
		}
		assert.Equal(t, []string{
			"x/x.go:3: long has 81 lines (at most 80)",
			"x/x.go:168: T.many has 7 parameters (at most 6)",
			"x/x.go:172: package-level (a function literal) has 7 parameters (at most 6)",
		}, names)
		_, ok := got[0].allowed([]string{"x/"})
		assert.True(t, ok, "a folder entry")
		_, ok = got[1].allowed([]string{"x/x.go T.many"})
		assert.True(t, ok, "a function entry")
		_, ok = got[1].allowed([]string{"x/x.go many", "x/y.go T.many", "x"})
		assert.False(t, ok, "an entry names the file and the function")
	})
}
