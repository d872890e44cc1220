package handlers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
)

const (
	messagesBegin = "<!-- messages: handlers/messages.go; TestTheMessageTableIsTheREADMEs checks it, O2IMS_UPDATE_README=1 rewrites it -->\n"
	messagesEnd   = "<!-- /messages -->\n"
)

// README's "Status messages" table is messages.go's, row for row (O2IMS_UPDATE_README=1 writes it).
func TestTheMessageTableIsTheREADMEs(t *testing.T) {
	path := filepath.Join("..", "README.md")
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	readme := string(raw)
	a, b := strings.Index(readme, messagesBegin), strings.Index(readme, messagesEnd)
	require.True(t, a >= 0 && b > a, "README.md has no messages markers")
	want := markdownMessages()
	if os.Getenv("O2IMS_UPDATE_README") == "1" {
		readme = readme[:a+len(messagesBegin)] + want + readme[b:]
		require.NoError(t, os.WriteFile(path, []byte(readme), 0o644))
		return
	}
	assert.Equal(t, want, readme[a+len(messagesBegin):b], "README's status messages differ from handlers/messages.go; run O2IMS_UPDATE_README=1 go test -run TestTheMessageTableIsTheREADMEs ./handlers/")
}

// The table's own rules: one entry per key and per text, the CRD's states, failed says failed and why and
// nothing else says failed, every message of the hosts step begins alike, parts are named.
func TestTheMessageTableSaysWhatEachStateMeans(t *testing.T) {
	keys, texts := map[string]bool{}, map[string]bool{}
	named := regexp.MustCompile(`^[a-zA-Z]+$`)
	for _, m := range messages {
		assert.False(t, keys[m.key], "key %s twice", m.key)
		assert.False(t, texts[m.state+m.text], "text %q twice", m.text)
		keys[m.key], texts[m.state+m.text] = true, true
		assert.Contains(t, v1alpha1.States, m.state, m.key)
		assert.NotEmpty(t, m.when, m.key)
		for _, p := range m.parts() {
			assert.Regexp(t, named, p, "%s: part %q", m.key, p)
		}
		switch {
		case m.state == v1alpha1.StateFailed:
			assert.Contains(t, m.text, " failed; reason: ", "%s: a failed message says what failed and why", m.key)
		case m == msgRedrivenAfterFailure:
			// It says what the request was before this change.
			assert.Contains(t, m.text, "after it failed; provisioning again", m.key)
		default:
			assert.NotContains(t, strings.ToLower(m.text), "failed", "%s: only a failed message says failed", m.key)
		}
		if strings.HasPrefix(m.key, "hosts-") && m.state == v1alpha1.StateProgressing {
			assert.True(t, strings.HasPrefix(m.text, hostsWords), m.key)
		}
		// Each entry is the one its own text is classified as.
		assert.Same(t, m, classify(m.state, m.with(m.parts()...).text), m.key)
	}
	assert.Equal(t, `Provisioning request failed; reason: timed out after 30m0s waiting for the Cluster instance rendering (last: Cluster instance rendering ongoing)`,
		msgTimedOut.with((30*time.Minute).String(), waitedFor["rendering"], msgRendering.with().text).text)
	assert.Equal(t, "Deleting; waiting for package variant {packageVariant} to be removed", msgDeletingPackageVariant.with().text, "a missing part stays visible")
}

// Every entry declared in messages.go is in the table, and every call fills as many parts as its entry
// names: read from the source, so a call no test reaches is checked too.
func TestEveryMessageIsInTheTableAndEveryCallFillsItsParts(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	require.NoError(t, err)
	declared := map[string]int{} // variable → parts of its entry
	var files []*ast.File
	for _, p := range pkgs {
		for _, f := range p.Files {
			files = append(files, f)
		}
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, v := range vs.Values {
				u, ok := v.(*ast.UnaryExpr)
				if !ok {
					continue
				}
				cl, ok := u.X.(*ast.CompositeLit)
				if id, isIdent := cl.Type.(*ast.Ident); !ok || !isIdent || id.Name != "message" {
					continue
				}
				lit, ok := cl.Elts[2].(*ast.BasicLit)
				require.True(t, ok, "%s: the text is one string literal", vs.Names[i].Name)
				text, err := strconv.Unquote(lit.Value)
				require.NoError(t, err)
				declared[vs.Names[i].Name] = len((&message{text: text}).parts())
			}
			return true
		})
	}
	require.Len(t, declared, len(messages), "entries declared in messages.go but not in the table (or the other way round)")
	calls := 0
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "with" {
				return true
			}
			id, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			parts, known := declared[id.Name]
			if !known {
				return true
			}
			calls++
			assert.Equal(t, parts, len(call.Args), "%s: %s.with fills %d parts, its text names %d", fset.Position(call.Pos()), id.Name, len(call.Args), parts)
			return true
		})
	}
	assert.GreaterOrEqual(t, calls, len(messages), "every entry is written somewhere")
}

// pattern matches an entry's messages: its text with any value for each part.
func (m *message) pattern() *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`^`)
	rest := m.text
	for _, p := range m.parts() {
		i := strings.Index(rest, "{"+p+"}")
		b.WriteString(regexp.QuoteMeta(rest[:i]) + `(?s:.*)`)
		rest = rest[i+len(p)+2:]
	}
	b.WriteString(regexp.QuoteMeta(rest) + `$`)
	return regexp.MustCompile(b.String())
}

// classify finds the entry a written status is: of its state, matching, and of those the one with the
// most fixed text (the hosts' "{progress}" matches what their more specific entries say too).
func classify(state, text string) *message {
	var best *message
	fixed := -1
	for _, m := range messages {
		if m.state != state || !m.pattern().MatchString(text) {
			continue
		}
		n := len(m.text)
		for _, p := range m.parts() {
			n -= len(p) + 2
		}
		if n > fixed {
			best, fixed = m, n
		}
	}
	return best
}
