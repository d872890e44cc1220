package policy

// The dependency arrows of docs/architecture.md, checked: the packages are read with `go list -json ./...`
// (what the compiler sees, build tags included) and every rule below names the arrow it forbids. A new
// arrow that breaks one is a design change: change docs/architecture.md and the rule together.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const modulePath = "github.com/o2ims-operator/o2ims-operator"

// goPackage is the part of `go list -json` the rules read. Imports and Deps are those of the package's
// non-test files: tests may reach for harnesses (tests/kubeapi) that the code itself must not.
type goPackage struct {
	ImportPath   string
	Name         string
	Dir          string
	GoFiles      []string
	TestGoFiles  []string
	XTestGoFiles []string
	Imports      []string
	Deps         []string
}

// files is every Go file of the package, its tests' included.
func (p goPackage) files() []string {
	return append(append(append([]string{}, p.GoFiles...), p.TestGoFiles...), p.XTestGoFiles...)
}

// rel is the package's path inside the module ("" for the root), or ok=false for a package not ours.
func rel(importPath string) (string, bool) {
	if importPath == modulePath {
		return "", true
	}
	r, ok := strings.CutPrefix(importPath, modulePath+"/")
	return r, ok
}

// under reports whether the module-relative path r is dir or inside it.
func under(r, dir string) bool { return r == dir || strings.HasPrefix(r, dir+"/") }

// leaves are the pure packages: no package of ours, no client-go even indirectly, so they can be tested
// and fuzzed without a cluster and reused by both sides (the NBI validates with api/spec; the chain
// writes and the NBI reads the resource through api/v1alpha1).
var leaves = []string{"api/external", "api/v1alpha1", "framework/kopf", "api/spec", "nbi/callback", "nbi/query", "netbox/selector"}

// hostsMayUse are the chain's packages the host step (handlers/hosts) may import: the live API access it
// shares with the chain.
var hostsMayUse = []string{"handlers/kube"}

// nbiAPIs are the northbound APIs: handler types that register their routes on the shell (nbi), which
// knows none of them; they meet only in the process's wiring (the inventory's resource ids answered by the
// provisioning API are wired there).
var nbiAPIs = []string{"nbi/provisioning", "nbi/inventoryapi", "nbi/alarmsapi", "nbi/performanceapi"}

// model is the O-Cloud model (the inventory view, its refresh, its free hosts): the chain's host step and
// the APIs both read it, so it knows neither, nor HTTP (nbi/), nor the delivery that listens to it.
const model = "inventory"

// delivery is the subscriptions and their at-least-once notifiers, shared by the APIs: it reads the model
// and the NBI's leaves (nbi/query, nbi/callback, nbi/caller), never the shell, an API or the chain.
const delivery = "subscriptions"

// monitoring are the alarm and performance models (definitions, faults, jobs, their stores, the leader's
// raiser and evaluator) and the service configuration both have: the APIs serve them, so they know no
// API, no HTTP shell, no chain nor framework; of nbi/ they read only its leaves (nbiLeaves).
var monitoring = []string{"alarms", "performance", "serviceconfig"}

// nbiLeaves are the NBI's packages that carry no HTTP: what a caller sends (query), which callbacks may be
// reached (callback), who made a request (caller).
var nbiLeaves = []string{"nbi/query", "nbi/callback", "nbi/caller"}

// configMaps is the cached reads and the writes of the operator's own ConfigMaps (the stores'): API access
// only, it imports nothing of ours.
const configMaps = "cmstore"

// shared is the infrastructure both API clients and the leaves use (token files, redirects, backoff, text
// and JSON helpers): it imports nothing of ours outside shared and no k8s.io module, so it adds no arrow
// (netbox stays free of Kubernetes, a leaf stays pure).
const shared = "internal"

// process is the operator process (flags, environment, the wiring of every part): internal/ by its path, so
// nothing outside the module imports it, but not shared infrastructure. Only the root's main imports it,
// so no arrow runs back up to it.
const process = "internal/app"

// infraPkg reports whether the module-relative path r is shared infrastructure (internal/ but the process).
func infraPkg(r string) bool { return under(r, shared) && !under(r, process) }

// clockPackage is the operator's one clock (k8s.io/utils/clock): an interface over the time package that
// imports nothing else, so netbox may tell time with it and still know no Kubernetes.
const clockPackage = "k8s.io/utils/clock"

// alone import nothing of ours either: the leaves, and the NetBox simulator, which shares no code with the
// client it answers (both sides agreeing by construction would hide a wire bug).
var alone = append([]string{"tests/sim/netboxsim"}, leaves...)

// importViolations lists every forbidden arrow among pkgs, one line each.
func importViolations(pkgs []goPackage) []string {
	var bad []string
	flag := func(p goPackage, dep, why string) {
		bad = append(bad, fmt.Sprintf("%s imports %s: %s", p.ImportPath, dep, why))
	}
	for _, p := range pkgs {
		me, ok := rel(p.ImportPath)
		if !ok {
			continue
		}
		leaf := slices.Contains(leaves, me)
		single := slices.Contains(alone, me)
		for _, imp := range p.Imports {
			them, ours := rel(imp)
			infra := ours && infraPkg(them)
			switch {
			case ours && under(them, process) && me != "":
				flag(p, imp, "only main imports the process's wiring (internal/app): no arrow runs back up")
			case infraPkg(me) && ours && !infra:
				flag(p, imp, "the shared infrastructure (internal/) imports nothing of ours outside it")
			case single && ours && !(leaf && infra):
				flag(p, imp, "a leaf package imports nothing of ours but internal/ (the simulator nothing at all)")
			case under(me, "framework") && ours && !under(them, "framework") && !infra:
				flag(p, imp, "framework knows no O2IMS, chain, NBI or inventory package")
			case under(me, "netbox") && ours && !under(them, "netbox") && !infra:
				flag(p, imp, "netbox is the inventory client only: it knows no framework, chain or NBI")
			case under(me, "handlers") && ours && under(them, "nbi"):
				flag(p, imp, "the chain never depends on the northbound API")
			case under(me, "handlers") && ours && under(them, delivery):
				flag(p, imp, "the chain notifies no subscriber: it reads the model (inventory/) only")
			case under(me, configMaps) && ours && !infra:
				flag(p, imp, "cmstore is API access only: it knows no store, API or chain")
			case under(me, model) && ours && (under(them, "nbi") || under(them, "handlers") || under(them, "framework") || under(them, delivery)):
				flag(p, imp, "the O-Cloud model knows no API, HTTP, chain, framework or delivery: they read it")
			case under(me, delivery) && ours && (them == "nbi" || slices.Contains(nbiAPIs, them) || under(them, "handlers") || under(them, "framework")):
				flag(p, imp, "the subscriptions know no API nor the NBI's shell (they register no route) nor the chain")
			case slices.Contains(monitoring, me) && ours && (under(them, "nbi") && !slices.Contains(nbiLeaves, them) || under(them, "handlers") || under(them, "framework")):
				flag(p, imp, "the monitoring models know no API, HTTP shell, chain nor framework: the APIs serve them")
			case me == "handlers" && ours && under(them, "netbox"):
				flag(p, imp, "the chain reaches the inventory only through its host step (handlers/hosts)")
			case under(me, "handlers/hosts") && ours && under(them, "handlers") && !under(them, "handlers/hosts") && !slices.Contains(hostsMayUse, them):
				flag(p, imp, "the host step knows the chain only as the interface it implements (the arrow runs handlers → handlers/hosts)")
			case under(me, "handlers/kube") && ours && !under(them, "framework"):
				flag(p, imp, "handlers/kube is API access only: it knows no chain, host step or inventory")
			case under(me, "handlers") && imp == "k8s.io/client-go/util/workqueue":
				flag(p, imp, "handlers never touch the workqueue (the framework owns it)")
			case me == "nbi" && ours && slices.Contains(nbiAPIs, them):
				flag(p, imp, "the NBI's shell knows no API: each registers its routes on it")
			case slices.Contains(nbiAPIs, me) && ours && slices.Contains(nbiAPIs, them) && them != me:
				flag(p, imp, "one API never imports another: the process's wiring (internal/app) wires what they share")
			case under(me, "nbi") && ours && under(them, "framework"):
				flag(p, imp, "the NBI reconciles nothing: it reads a Store and writes through the API server")
			case under(me, "nbi") && ours && under(them, "handlers"):
				flag(p, imp, "the NBI never imports the chain (the parser both use is api/spec)")
			case !under(me, "tests") && ours && under(them, "tests"):
				flag(p, imp, "production code never imports a test harness")
			}
		}
		// Indirect arrows: the first offending dependency is enough to name (the rest come with it).
		if i := slices.IndexFunc(p.Deps, func(d string) bool { return strings.HasPrefix(d, "k8s.io/client-go/") }); leaf && i >= 0 {
			flag(p, p.Deps[i]+" (directly or not)", "a leaf package needs no API client")
		}
		if i := slices.IndexFunc(p.Deps, func(d string) bool { return strings.HasPrefix(d, "k8s.io/") && d != clockPackage }); under(me, "netbox") && i >= 0 {
			flag(p, p.Deps[i]+" (directly or not)", "netbox never talks to Kubernetes")
		}
		if i := slices.IndexFunc(p.Deps, func(d string) bool { return strings.HasPrefix(d, "k8s.io/") }); infraPkg(me) && i >= 0 {
			flag(p, p.Deps[i]+" (directly or not)", "internal/ is shared with netbox and the leaves: no Kubernetes")
		}
	}
	return bad
}

// writeCalls are the dynamic/typed client methods that patch or overwrite an object's status.
var writeCalls = map[string]bool{"Patch": true, "Apply": true, "ApplyStatus": true, "UpdateStatus": true}

// patchViolations lists, for the chain's packages, every place that sends a patch itself: the request's
// changes go into Cause.Patch and the framework applies them (one status and one object patch a pass);
// other objects are created, updated and deleted through handlers/kube.
func patchViolations(pkgs []goPackage) ([]string, error) {
	var bad []string
	err := inspectGoFiles(pkgs, func(me string) bool { return under(me, "handlers") }, func(fset *token.FileSet, n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if strings.HasSuffix(n.Sel.Name, "PatchType") {
				bad = append(bad, fmt.Sprintf("%s: %s uses a patch type: handlers fill Cause.Patch, the framework sends it",
					fset.Position(n.Pos()), n.Sel.Name))
			}
		case *ast.AssignStmt:
			for _, lhs := range n.Lhs {
				if sel, ok := lhs.(*ast.SelectorExpr); ok && sel.Sel.Name == "Delay" {
					bad = append(bad, fmt.Sprintf("%s: sets an error's Delay: handlers return an outcome (framework.Again, Temporary), the framework steers the queue",
						fset.Position(n.Pos())))
				}
			}
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && writeCalls[sel.Sel.Name] {
				bad = append(bad, fmt.Sprintf("%s: calls %s: handlers fill Cause.Patch, the framework sends it",
					fset.Position(n.Pos()), sel.Sel.Name))
			}
		}
		return true
	})
	return bad, err
}

// inspectGoFiles parses the non-test files of our packages that pick accepts (by module-relative path) and
// walks each with visit (ast.Inspect: false skips a node's children).
func inspectGoFiles(pkgs []goPackage, pick func(me string) bool, visit func(*token.FileSet, ast.Node) bool) error {
	for _, p := range pkgs {
		me, ok := rel(p.ImportPath)
		if !ok || !pick(me) {
			continue
		}
		fset := token.NewFileSet()
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool { return visit(fset, n) })
		}
	}
	return nil
}

// resourceNames are the spellings that belong to api/v1alpha1 (the ProvisioningRequest: group, resource and
// the status keys no other API shares) and api/external (the other projects' groups). provisionedResourceSet
// is not among them: the O2IMS API's own member has the same name.
var resourceNames = map[string]string{
	"o2ims.provisioning.oran.org": "api/v1alpha1", "provisioningrequests": "api/v1alpha1",
	"provisioningStatus": "api/v1alpha1", "provisioningState": "api/v1alpha1",
	"provisioningMessage": "api/v1alpha1", "provisioningUpdateTime": "api/v1alpha1",
	"oCloudNodeClusterId": "api/v1alpha1", "oCloudInfrastructureResourceIds": "api/v1alpha1",
	"config.porch.kpt.dev": "api/external", "cluster.x-k8s.io": "api/external", "metal3.io": "api/external",
}

// nameViolations lists, outside api/ and tests/, every string literal that spells a resource name of
// resourceNames and every GroupVersionResource literal: the writer and the readers of a field agree because
// they name one constant, not because two strings match.
func nameViolations(pkgs []goPackage) ([]string, error) {
	var bad []string
	outside := func(me string) bool { return !under(me, "api") && !under(me, "tests") }
	err := inspectGoFiles(pkgs, outside, func(fset *token.FileSet, n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ImportSpec:
			return false
		case *ast.BasicLit:
			if v, err := strconv.Unquote(n.Value); n.Kind == token.STRING && err == nil && resourceNames[v] != "" {
				bad = append(bad, fmt.Sprintf("%s: %q is spelled here: name the constant in %s", fset.Position(n.Pos()), v, resourceNames[v]))
			}
		case *ast.CompositeLit:
			if sel, ok := n.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "GroupVersionResource" {
				bad = append(bad, fmt.Sprintf("%s: a GroupVersionResource literal: resources are named in api/", fset.Position(n.Pos())))
			}
		}
		return true
	})
	return bad, err
}

func goTool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH: cannot list the packages")
	}
	return p
}

func listPackages(t *testing.T) []goPackage {
	t.Helper()
	cmd := exec.Command(goTool(t), "list", "-json", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list: %s", stderr.String())
	var pkgs []goPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else {
			require.NoError(t, err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func TestImportBoundaries(t *testing.T) {
	pkgs := listPackages(t)
	seen := map[string]bool{}
	for _, p := range pkgs {
		if r, ok := rel(p.ImportPath); ok {
			seen[r] = true
		}
	}
	// The rules name these; if one moved, the rules would silently pass over it.
	for _, want := range slices.Concat([]string{"framework", "handlers", "handlers/hosts", "handlers/kube", "nbi", "netbox", process, model, delivery, configMaps}, nbiAPIs, monitoring, nbiLeaves, alone) {
		require.True(t, seen[want], "package %s is gone: update docs/architecture.md and arch_test.go", want)
	}

	if bad := importViolations(pkgs); len(bad) > 0 {
		t.Errorf("forbidden arrows (docs/architecture.md, \"The arrows\"):\n%s", strings.Join(bad, "\n"))
	}
	patches, err := patchViolations(pkgs)
	require.NoError(t, err)
	if len(patches) > 0 {
		t.Errorf("the chain does the framework's work itself (patches, queue delays):\n%s", strings.Join(patches, "\n"))
	}
	names, err := nameViolations(pkgs)
	require.NoError(t, err)
	if len(names) > 0 {
		t.Errorf("resource names spelled outside api/:\n%s", strings.Join(names, "\n"))
	}

	t.Run("each rule catches its arrow", func(t *testing.T) {
		m := func(r string) string { return modulePath + "/" + r }
		for _, c := range []struct {
			pkg           string
			imports, deps []string
		}{
			{pkg: "framework", imports: []string{m("handlers")}},
			{pkg: "framework", imports: []string{m("nbi")}},
			{pkg: "framework/kopf", imports: []string{m("framework")}},
			{pkg: "netbox", imports: []string{m("framework")}},
			{pkg: "tests/sim/netboxsim", imports: []string{m("netbox")}},
			{pkg: "netbox", deps: []string{"k8s.io/apimachinery/pkg/types"}},
			{pkg: "api/spec", deps: []string{"k8s.io/client-go/rest"}},
			{pkg: "nbi/query", deps: []string{"k8s.io/client-go/kubernetes"}},
			{pkg: "netbox/selector", imports: []string{m("netbox")}},
			{pkg: "handlers", imports: []string{m("nbi")}},
			{pkg: "handlers", imports: []string{"k8s.io/client-go/util/workqueue"}},
			{pkg: "handlers", imports: []string{m("netbox")}},
			{pkg: "handlers/hosts", imports: []string{m("handlers")}},
			{pkg: "handlers/hosts", imports: []string{m("nbi")}},
			{pkg: "handlers/hosts", imports: []string{"k8s.io/client-go/util/workqueue"}},
			{pkg: "handlers/kube", imports: []string{m("handlers")}},
			{pkg: "handlers/kube", imports: []string{m("netbox")}},
			{pkg: "nbi", imports: []string{m("handlers")}},
			{pkg: "nbi", imports: []string{m("nbi/provisioning")}},
			{pkg: "nbi", imports: []string{m("nbi/inventoryapi")}},
			{pkg: "nbi/inventoryapi", imports: []string{m("nbi/provisioning")}},
			{pkg: "nbi/provisioning", imports: []string{m("handlers/hosts")}},
			{pkg: "nbi/inventoryapi", imports: []string{m("framework")}},
			{pkg: "inventory", imports: []string{m("framework")}},
			{pkg: "inventory", imports: []string{m("nbi")}},
			{pkg: "inventory", imports: []string{m("nbi/query")}},
			{pkg: "inventory", imports: []string{m("subscriptions")}},
			{pkg: "inventory", imports: []string{m("handlers/hosts")}},
			{pkg: "subscriptions", imports: []string{m("nbi")}},
			{pkg: "subscriptions", imports: []string{m("nbi/alarmsapi")}},
			{pkg: "subscriptions", imports: []string{m("handlers")}},
			{pkg: "handlers/hosts", imports: []string{m("subscriptions")}},
			{pkg: "cmstore", imports: []string{m("nbi/caller")}},
			{pkg: "alarms", imports: []string{m("nbi")}},
			{pkg: "alarms", imports: []string{m("nbi/alarmsapi")}},
			{pkg: "performance", imports: []string{m("nbi/performanceapi")}},
			{pkg: "performance", imports: []string{m("handlers")}},
			{pkg: "alarms", imports: []string{m("framework")}},
			{pkg: "serviceconfig", imports: []string{m("nbi")}},
			{pkg: "handlers", imports: []string{m("nbi/inventoryapi")}},
			{pkg: "handlers", imports: []string{m("tests/kubeapi")}},
			{pkg: "api/v1alpha1", imports: []string{m("api/spec")}},
			{pkg: "nbi/provisioning", imports: []string{m("handlers/kube")}},
			{pkg: "api/v1alpha1", deps: []string{"k8s.io/client-go/dynamic"}},
			{pkg: "api/external", imports: []string{m("api/v1alpha1")}},
			{pkg: "framework", imports: []string{m("api/v1alpha1")}},
			{pkg: "netbox", imports: []string{m("api/external")}},
			{pkg: "internal/bearer", imports: []string{m("framework")}},
			{pkg: "internal/bearer", deps: []string{"k8s.io/apimachinery/pkg/util/wait"}},
			{pkg: "tests/sim/netboxsim", imports: []string{m("internal/bearer")}},
			{pkg: "handlers", imports: []string{m("internal/app")}},
			{pkg: "framework", imports: []string{m("internal/app")}},
			{pkg: "internal/bearer", imports: []string{m("internal/app")}},
			{pkg: "api/spec", imports: []string{m("internal/app")}},
			{pkg: "tests/stack", imports: []string{m("internal/app")}},
			{pkg: "internal/app/x", imports: []string{m("internal/app")}},
		} {
			got := importViolations([]goPackage{{ImportPath: m(c.pkg), Imports: c.imports, Deps: c.deps}})
			assert.Len(t, got, 1, "%s → %v %v", c.pkg, c.imports, c.deps)
		}
		// What the design allows stays allowed.
		assert.Empty(t, importViolations([]goPackage{
			{ImportPath: m("nbi"), Imports: []string{m("api/v1alpha1"), m("internal/quote"), m("nbi/query")}},
			{ImportPath: m("nbi/provisioning"), Imports: []string{m("api/v1alpha1"), m("api/spec"), m("nbi"), m("nbi/query")}},
			{ImportPath: m("nbi/inventoryapi"), Imports: []string{m("api/external"), m("api/v1alpha1"), m("nbi"), m("nbi/callback"), m("inventory"), m("subscriptions"), m("nbi/query"), m("netbox")}},
			{ImportPath: m("inventory"), Imports: []string{m("netbox"), m("internal/ocloud")}},
			{ImportPath: m("subscriptions"), Imports: []string{m("inventory"), m("nbi/callback"), m("nbi/caller"), m("nbi/query"), m("internal/backoff")}},
			{ImportPath: m("handlers/hosts"), Imports: []string{m("inventory")}},
			{ImportPath: m("alarms"), Imports: []string{m("serviceconfig"), m("cmstore"), m("subscriptions"), m("inventory"), m("api/v1alpha1"), m("nbi/caller"), m("nbi/query")}},
			{ImportPath: m("serviceconfig"), Imports: []string{m("nbi/query")}},
			{ImportPath: m("performance"), Imports: []string{m("serviceconfig"), m("cmstore"), m("subscriptions"), m("inventory"), m("nbi/caller"), m("nbi/query"), m("internal/bearer")}},
			{ImportPath: m("handlers"), Imports: []string{m("api/v1alpha1"), m("api/external"), m("framework"), m("api/spec"), m("handlers/hosts"), m("handlers/kube")}},
			{ImportPath: m("handlers/hosts"), Imports: []string{m("api/v1alpha1"), m("api/external"), m("framework"), m("api/spec"), m("handlers/kube"), m("netbox")}},
			{ImportPath: m("handlers/kube"), Imports: []string{m("framework")}},
			{ImportPath: m("tests/sim/world"), Imports: []string{m("api/external")}},
			{ImportPath: m("framework"), Imports: []string{m("framework/kopf"), m("internal/bearer"), "k8s.io/client-go/util/workqueue"}},
			{ImportPath: m("netbox"), Imports: []string{m("netbox/selector"), m("internal/bearer")}},
			{ImportPath: m("netbox"), Imports: []string{clockPackage}, Deps: []string{clockPackage}},
			{ImportPath: m("nbi/query"), Imports: []string{m("internal/bearer")}},
			{ImportPath: m("tests/stack"), Imports: []string{m("tests/sim/netboxsim"), m("tests/kubeapi")}},
			{ImportPath: modulePath, Imports: []string{m("internal/app")}},
			{ImportPath: m("internal/app"), Imports: []string{m("framework"), m("handlers"), m("handlers/hosts"), m("internal/netcause"), m("nbi"), m("nbi/provisioning"), m("nbi/inventoryapi"), m("netbox")},
				Deps: []string{"k8s.io/client-go/kubernetes"}},
		}))

		dir := t.TempDir()
		src := `package handlers

func f(ctx any) {
	c.Patch.SetStatus("x", "y")                                           // allowed: the pass's patch
	_, _ = ri.Patch(ctx, "pr", types.MergePatchType, nil, opts, "status") // not: a patch of its own
}
`
		require.NoError(t, os.WriteFile(filepath.Join(dir, "f.go"), []byte(src), 0o600))
		for _, pkg := range []string{"handlers", "handlers/hosts"} {
			got, err := patchViolations([]goPackage{{ImportPath: m(pkg), Dir: dir, GoFiles: []string{"f.go"}}})
			require.NoError(t, err)
			assert.Len(t, got, 2, "%s: the Patch call and the patch type: %v", pkg, got)
		}

		src = `package nbi

import "k8s.io/apimachinery/pkg/runtime/schema"

var gvr = schema.GroupVersionResource{Group: v1alpha1.Group} // not: a GVR of its own

func f(status map[string]any) any {
	_ = v1alpha1.FieldProvisioningState                       // allowed: the constant
	_ = status["provisionedResourceSet"]                      // allowed: the NBI's member has that name too
	return status["provisioningStatus"].(map[string]any)["x"] // not: the key spelled again
}
`
		require.NoError(t, os.WriteFile(filepath.Join(dir, "g.go"), []byte(src), 0o600))
		got, err := nameViolations([]goPackage{{ImportPath: m("nbi"), Dir: dir, GoFiles: []string{"g.go"}}})
		require.NoError(t, err)
		assert.Len(t, got, 2, "the GVR literal and the status key: %v", got)
		got, err = nameViolations([]goPackage{{ImportPath: m("api/v1alpha1"), Dir: dir, GoFiles: []string{"g.go"}}})
		require.NoError(t, err)
		assert.Empty(t, got, "api/ is where they are spelled")
	})
}
