package handlers

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/pythonimage"
	"github.com/o2ims-operator/o2ims-operator/tests/readme"
)

// How the message table (messages.go) is held true:
//   - every chain a test starts (startChain) has a status trail: a watch of its requests on the API server
//     that classifies every provisioningStatus the operator wrote there against the table. A status that
//     matches no entry of its state fails the test that started the chain; one that does marks the entry
//     reached by that test.
//   - TestMain, after a run of the whole package, fails it when an entry was reached by no test but the
//     model's (its random sequences prove nothing about a given entry).
//   - TestMessageWalk drives the chain into the entries no other test reaches.

// docs/chain.md's "Status messages" table is messages.go's, row for row (O2IMS_UPDATE_README=1 writes it).
func TestTheMessageTableIsDocumented(t *testing.T) {
	readme.Section(t, filepath.Join("..", "docs", "chain.md"), "messages", markdownMessages(),
		"go test -run TestTheMessageTableIsDocumented ./handlers/")
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
	names, err := filepath.Glob("*.go")
	require.NoError(t, err)
	declared := map[string]int{} // variable → parts of its entry
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		files = append(files, f)
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

// reached records which tests saw the API server hold each entry (key → test names).
var reached = struct {
	sync.Mutex
	by map[string]map[string]bool
}{by: map[string]map[string]bool{}}

func markReached(key, test string) {
	reached.Lock()
	defer reached.Unlock()
	if reached.by[key] == nil {
		reached.by[key] = map[string]bool{}
	}
	reached.by[key][test] = true
}

// statusTrail watches the requests of one chain's selector and keeps, per request, every status the operator wrote that
// the API server held, in order (consecutive repeats once).
type statusTrail struct {
	selector, test string
	mu             sync.Mutex
	seen           map[string][]v1alpha1.ProvisioningStatus
	unknown        []string
	cancel         context.CancelFunc
	done           chan struct{}
}

var trails = struct {
	sync.Mutex
	by map[string]*statusTrail
}{by: map[string]*statusTrail{}}

// trailFor returns the selector's trail, starting it with the first chain of the test (a restarted chain
// keeps it). At the test's end it fails the test for every status the table does not have.
func trailFor(t *testing.T, srv *kubeapi.Server, selector string) *statusTrail {
	t.Helper()
	trails.Lock()
	defer trails.Unlock()
	if tr := trails.by[selector]; tr != nil {
		return tr
	}
	ctx, cancel := context.WithCancel(context.Background())
	tr := &statusTrail{selector: selector, test: t.Name(), seen: map[string][]v1alpha1.ProvisioningStatus{}, cancel: cancel, done: make(chan struct{})}
	w, err := srv.AdminDynamic().Resource(v1alpha1.GVR).Watch(ctx, metav1.ListOptions{LabelSelector: selector})
	require.NoError(t, err)
	go tr.run(ctx, srv, w)
	trails.by[selector] = tr
	t.Cleanup(func() {
		tr.cancel()
		<-tr.done
		trails.Lock()
		delete(trails.by, selector)
		trails.Unlock()
		tr.mu.Lock()
		defer tr.mu.Unlock()
		for _, u := range tr.unknown {
			t.Errorf("the operator wrote a status that is not in the message table (handlers/messages.go): %s", u)
		}
	})
	return tr
}

func (tr *statusTrail) run(ctx context.Context, srv *kubeapi.Server, w watch.Interface) {
	defer close(tr.done)
	rv := ""
	for {
		for ev := range w.ResultChan() {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				rv = "" // an error (410 Gone): start again from the current state
				continue
			}
			rv = u.GetResourceVersion()
			if ev.Type == watch.Added || ev.Type == watch.Modified {
				tr.observe(u)
			}
		}
		w.Stop()
		for {
			if ctx.Err() != nil {
				return
			}
			var err error
			w, err = srv.AdminDynamic().Resource(v1alpha1.GVR).Watch(ctx, metav1.ListOptions{LabelSelector: tr.selector, ResourceVersion: rv})
			if err == nil {
				break
			}
			rv = ""
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// writtenByTheOperator: the request's provisioningStatus was last written by the operator (its field
// manager, framework's user agent), not by a test installing the Python image's objects.
func writtenByTheOperator(u *unstructured.Unstructured) bool {
	for _, mf := range u.GetManagedFields() {
		if mf.Manager == "o2ims-operator" && mf.Subresource == "status" && mf.FieldsV1 != nil &&
			strings.Contains(mf.FieldsV1.GetRawString(), `"f:provisioningStatus"`) {
			return true
		}
	}
	return false
}

func (tr *statusTrail) observe(u *unstructured.Unstructured) {
	st := v1alpha1.StatusOf(u)
	if st.State == "" || !writtenByTheOperator(u) {
		return
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	name := u.GetName()
	list := tr.seen[name]
	if n := len(list); n > 0 && list[n-1].State == st.State && list[n-1].Message == st.Message {
		return
	}
	tr.seen[name] = append(list, st)
	m := classify(st.State, st.Message)
	if m == nil {
		tr.unknown = append(tr.unknown, fmt.Sprintf("%s: %s %q", name, st.State, st.Message))
		return
	}
	markReached(m.key, tr.test)
}

type trailString struct {
	tr   *statusTrail
	name string
}

func (s trailString) String() string {
	s.tr.mu.Lock()
	defer s.tr.mu.Unlock()
	b, _ := json.Marshal(s.tr.seen[s.name])
	return string(b)
}

// await waits until the API server held a status of the request that is the entry m, and returns it.
func (tr *statusTrail) await(t *testing.T, name string, m *message, timeout time.Duration) v1alpha1.ProvisioningStatus {
	t.Helper()
	var got v1alpha1.ProvisioningStatus
	eventually(t, timeout, func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		for _, st := range tr.seen[name] {
			if classify(st.State, st.Message) == m {
				got = st
				return true
			}
		}
		return false
	}, "request %s: the API server never held %s (%s %q); it held %v", name, m.key, m.state, m.text, trailString{tr, name})
	return got
}

// checkEveryMessageReached ends a run of the whole package: every entry must have been reached by a
// test other than the model's.
func checkEveryMessageReached(code int) int {
	for _, f := range []string{"test.run", "test.skip", "test.fuzz", "test.list"} {
		if fl := flag.Lookup(f); fl != nil && fl.Value.String() != "" {
			return code
		}
	}
	if code != 0 {
		return code
	}
	reached.Lock()
	defer reached.Unlock()
	var missing []string
	verbose := flag.Lookup("test.v") != nil && flag.Lookup("test.v").Value.String() == "true"
	for _, m := range messages {
		var by []string
		for test := range reached.by[m.key] {
			if !strings.HasPrefix(test, "TestModelDay2Sequences") {
				by = append(by, test)
			}
		}
		sort.Strings(by)
		if len(by) == 0 {
			missing = append(missing, m.key)
		} else if verbose {
			fmt.Printf("message %-34s reached by %s\n", m.key, strings.Join(by, ", "))
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: entries of the message table (handlers/messages.go) no test reached: %s\n", strings.Join(missing, ", "))
		return 1
	}
	return 0
}

// TestMessageWalk drives the chain into each entry of the message table that no other test reaches, and
// asserts the API server held it.
func TestMessageWalk(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)

	// A Kubernetes call of the hosts step fails (the answer to the BareMetalHost's create is lost): the
	// request says it retries, and is fulfilled once the next pass finds the BareMetalHost.
	t.Run(msgHostsRetrying.key, func(t *testing.T) {
		t.Parallel()
		inv := newInventory(t, srv, "msg-hostsretry")
		inv.addHost(t, srv, "hr-1", 16, "admin")
		var dropped atomic.Int32
		rec := &kubeapi.Recorder{Fault: func(req *http.Request) bool {
			return req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/baremetalhosts") && dropped.Add(1) == 1
		}}
		c := startChain(t, srv, "msg-hostsretry", inv.namespaces, rec, inv.client)
		createPR(t, srv, provisioningRequest("msg-hostsretry-1", "msg-hostsretry", tmplOK, hostsParams("edge-msg-hostsretry-1",
			map[string]any{"role": "worker", "count": 1, "selector": map[string]any{"cpu_cores": 16}})))
		st := c.trail.await(t, "msg-hostsretry-1", msgHostsRetrying, 30*time.Second)
		assert.Contains(t, st.Message, "connection reset")
		waitState(t, srv, "msg-hostsretry-1", v1alpha1.StateFulfilled, 60*time.Second)
	})

	// The spec no longer asks for hosts the request holds, and the operator runs without NETBOX_URL.
	t.Run(msgHostsHeldWithoutInventory.key, func(t *testing.T) {
		t.Parallel()
		inv := newInventory(t, srv, "msg-heldnoinv")
		inv.addHost(t, srv, "hn-1", 16, "admin")
		cfg := func(c *Config) { inv.namespaces(c); c.Requeue = 300 * time.Millisecond }
		c := startChain(t, srv, "msg-heldnoinv", cfg, nil, inv.client)
		createPR(t, srv, provisioningRequest("msg-heldnoinv-1", "msg-heldnoinv", tmplOK, hostsParams("edge-msg-heldnoinv-1",
			map[string]any{"role": "worker", "count": 1, "selector": map[string]any{"cpu_cores": 16}})))
		waitState(t, srv, "msg-heldnoinv-1", v1alpha1.StateFulfilled, 60*time.Second)
		waitHandled(t, srv, "msg-heldnoinv-1")
		c.stop(t)
		c = startChain(t, srv, "msg-heldnoinv", cfg, nil)
		patchPR(t, srv, "msg-heldnoinv-1", `{"spec":{"templateParameters":{"hosts":null}}}`)
		st := c.trail.await(t, "msg-heldnoinv-1", msgHostsHeldWithoutInventory, 30*time.Second)
		assert.Equal(t, msgHostsHeldWithoutInventory.with("1").text, st.Message)
		// Back with the inventory, the host is released and the request fulfilled without it.
		c.stop(t)
		startChain(t, srv, "msg-heldnoinv", cfg, nil, inv.client)
		eventually(t, 60*time.Second, func() bool {
			u, _ := getPR(t, srv, "msg-heldnoinv-1")
			return v1alpha1.StatusOf(u).State == v1alpha1.StateFulfilled && len(resourceIDs(u)) == 0
		}, "never fulfilled without its host")
	})

	// Adopting the Python image's PackageVariant meets a newer version of it (someone wrote it between
	// the operator's read and its update): looked at again, then adopted.
	t.Run(msgRenderingAdoptionRaced.key, func(t *testing.T) {
		t.Parallel()
		as := pythonimage.As{Name: "msg-adopt-1", Label: "msg-adopt"}
		// Without its Cluster: the simulated Porch makes one for the rendered PackageVariant, and may have
		// done so before the captured one would be installed.
		pythonObjects(t, srv, pythonimage.Labels, as, func(o *pythonimage.Objects) { o.Cluster = nil })
		var raced atomic.Int32
		rec := &kubeapi.Recorder{Reroute: func(req *http.Request) *http.Request {
			if req.Method == http.MethodPut && strings.HasSuffix(req.URL.Path, "/packagevariants/"+as.Name) && raced.Add(1) == 1 {
				touchPackageVariant(t, srv, as.Name)
			}
			return req
		}}
		c := startChain(t, srv, "msg-adopt", selecting(as), rec)
		c.trail.await(t, as.Name, msgRenderingAdoptionRaced, 30*time.Second)
		waitState(t, srv, as.Name, v1alpha1.StateFulfilled, 60*time.Second)
		pv, _ := getPV(t, srv, as.Name)
		assert.NotEmpty(t, pv.GetAnnotations()[AnnotationRequestUID], "never adopted")
	})

	// A spec change's write to the PackageVariant meets a newer version without the new spec: retried.
	t.Run(msgRenderingUpdateRaced.key, func(t *testing.T) {
		t.Parallel()
		var armed atomic.Bool
		rec := &kubeapi.Recorder{Reroute: func(req *http.Request) *http.Request {
			if req.Method == http.MethodPut && strings.HasSuffix(req.URL.Path, "/packagevariants/msg-updrace-1") && armed.CompareAndSwap(true, false) {
				touchPackageVariant(t, srv, "msg-updrace-1")
			}
			return req
		}}
		c := startChain(t, srv, "msg-updrace", nil, rec)
		createPR(t, srv, provisioningRequest("msg-updrace-1", "msg-updrace", tmplOK, map[string]any{"clusterName": "edge-msg-updrace-1"}))
		waitState(t, srv, "msg-updrace-1", v1alpha1.StateFulfilled, 30*time.Second)
		armed.Store(true)
		patchPR(t, srv, "msg-updrace-1", `{"spec":{"templateVersion":"v2.0.0"}}`)
		c.trail.await(t, "msg-updrace-1", msgRenderingUpdateRaced, 30*time.Second)
		eventually(t, 30*time.Second, func() bool {
			pv, _ := getPV(t, srv, "msg-updrace-1")
			ws, _, _ := unstructured.NestedString(pv.Object, "spec", "upstream", "workspaceName")
			u, _ := getPR(t, srv, "msg-updrace-1")
			return ws == "v2.0.0" && v1alpha1.StatusOf(u).State == v1alpha1.StateFulfilled
		}, "the update was never retried")
	})

	// The PackageVariant's create is refused in a way a retry cannot fix (400: sent to another namespace
	// than its own).
	t.Run(msgRenderingFailed.key, func(t *testing.T) {
		t.Parallel()
		rec := &kubeapi.Recorder{Reroute: func(req *http.Request) *http.Request {
			if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/packagevariants") {
				return nowhere(req)
			}
			return req
		}}
		c := startChain(t, srv, "msg-pvfail", nil, rec)
		createPR(t, srv, provisioningRequest("msg-pvfail-1", "msg-pvfail", tmplOK, map[string]any{"clusterName": "edge-msg-pvfail-1"}))
		st := c.trail.await(t, "msg-pvfail-1", msgRenderingFailed, 30*time.Second)
		assert.Contains(t, st.Message, "not retryable")
		waitState(t, srv, "msg-pvfail-1", v1alpha1.StateFailed, 10*time.Second)
	})

	// Porch's Ready carries an observedGeneration behind the PackageVariant's generation.
	t.Run(msgRenderingNotReported.key, func(t *testing.T) {
		t.Parallel()
		c := startChain(t, srv, "msg-notreported", nil, nil)
		createPR(t, srv, provisioningRequest("msg-notreported-1", "msg-notreported", tmplNeverRenders, map[string]any{"clusterName": "edge-msg-notreported-1"}))
		eventually(t, 30*time.Second, func() bool { _, ok := getPV(t, srv, "msg-notreported-1"); return ok }, "no package variant")
		body := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","status":"True","reason":"NoErrors","message":"","observedGeneration":0,"lastTransitionTime":%q}]}}`,
			time.Now().UTC().Format(time.RFC3339))
		_, err := srv.AdminDynamic().Resource(external.PackageVariantGVR).Namespace("default").Patch(context.Background(), "msg-notreported-1",
			types.MergePatchType, []byte(body), metav1.PatchOptions{}, "status")
		require.NoError(t, err)
		st := c.trail.await(t, "msg-notreported-1", msgRenderingNotReported, 30*time.Second)
		assert.Equal(t, msgRenderingNotReported.with("1").text, st.Message)
	})

	// The Cluster does not exist yet, then exists with a report about an older generation, then is
	// available: the operator reads Clusters in a namespace of its own here, where no simulator acts.
	t.Run(msgClusterAbsent.key+"+"+msgClusterNotObserved.key, func(t *testing.T) {
		t.Parallel()
		const ns = "msg-clusters"
		require.NoError(t, srv.EnsureNamespace(context.Background(), ns))
		c := startChain(t, srv, "msg-cluster", func(c *Config) { c.ClusterNamespace = ns }, nil)
		createPR(t, srv, provisioningRequest("msg-cluster-1", "msg-cluster", tmplOK, map[string]any{"clusterName": "edge-msg-cluster-1"}))
		c.trail.await(t, "msg-cluster-1", msgClusterAbsent, 30*time.Second)

		clusters := srv.AdminDynamic().Resource(external.ClusterGVR("v1beta2")).Namespace(ns)
		cl := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": external.ClusterGVR("v1beta2").GroupVersion().String(), "kind": external.ClusterKind,
			"metadata": map[string]any{"name": "edge-msg-cluster-1", "namespace": ns},
			"spec":     map[string]any{"controlPlaneEndpoint": map[string]any{"host": "10.10.0.1", "port": int64(6443)}},
		}}
		_, err := clusters.Create(context.Background(), cl, metav1.CreateOptions{})
		require.NoError(t, err)
		setStatus := func(body string) {
			_, err := clusters.Patch(context.Background(), "edge-msg-cluster-1", types.MergePatchType, []byte(body), metav1.PatchOptions{}, "status")
			require.NoError(t, err)
		}
		now := time.Now().UTC().Format(time.RFC3339)
		_, err = clusters.Patch(context.Background(), "edge-msg-cluster-1", types.MergePatchType,
			[]byte(`{"spec":{"controlPlaneEndpoint":{"port":6444}}}`), metav1.PatchOptions{})
		require.NoError(t, err)
		setStatus(`{"status":{"phase":"Provisioning","observedGeneration":1}}`)
		st := c.trail.await(t, "msg-cluster-1", msgClusterNotObserved, 30*time.Second)
		assert.Equal(t, msgClusterNotObserved.with("Provisioning", "2").text, st.Message)
		setStatus(`{"status":{"phase":"Provisioned","observedGeneration":2,"conditions":[{"type":"Available","status":"True","reason":"Available","message":"","lastTransitionTime":"` + now + `"}]}}`)
		waitState(t, srv, "msg-cluster-1", v1alpha1.StateFulfilled, 30*time.Second)
	})

	// Deleting: deleting the PackageVariant goes unanswered (the release deletes the cached version first,
	// no read before), then reading it does (the deletion accepted, its finalizer is waited for by reads).
	t.Run(msgDeletingRetrying.key+"+"+msgDeletingPackageVariantRetrying.key, func(t *testing.T) {
		t.Parallel()
		var mode atomic.Value
		mode.Store("")
		rec := &kubeapi.Recorder{Fault: func(req *http.Request) bool {
			if !strings.HasSuffix(req.URL.Path, "/packagevariants/msg-delretry-1") {
				return false
			}
			m := mode.Load()
			return m == "get" && req.Method == http.MethodGet || m == "delete" && req.Method == http.MethodDelete
		}}
		c := startChain(t, srv, "msg-delretry", func(c *Config) { c.Requeue = 300 * time.Millisecond }, rec)
		createPR(t, srv, provisioningRequest("msg-delretry-1", "msg-delretry", tmplOK, map[string]any{"clusterName": "edge-msg-delretry-1"}))
		waitState(t, srv, "msg-delretry-1", v1alpha1.StateFulfilled, 30*time.Second)
		waitHandled(t, srv, "msg-delretry-1")
		mode.Store("delete")
		deletePR(t, srv, "msg-delretry-1")
		c.trail.await(t, "msg-delretry-1", msgDeletingPackageVariantRetrying, 30*time.Second)
		mode.Store("get")
		c.trail.await(t, "msg-delretry-1", msgDeletingRetrying, 30*time.Second)
		mode.Store("")
		eventually(t, 30*time.Second, func() bool { _, ok := getPR(t, srv, "msg-delretry-1"); return !ok }, "never released")
	})

	// Deleting: a step of the hosts' release fails (the host records are unreadable), until they are fixed.
	t.Run(msgDeletingHostsRetrying.key, func(t *testing.T) {
		t.Parallel()
		inv := newInventory(t, srv, "msg-relretry")
		c := startChain(t, srv, "msg-relretry", func(c *Config) { inv.namespaces(c); c.Requeue = 300 * time.Millisecond }, nil, inv.client)
		createPR(t, srv, provisioningRequest("msg-relretry-1", "msg-relretry", tmplOK, map[string]any{"clusterName": "edge-msg-relretry-1"}))
		waitState(t, srv, "msg-relretry-1", v1alpha1.StateFulfilled, 30*time.Second)
		waitHandled(t, srv, "msg-relretry-1")
		patchStatus := func(body string) {
			_, err := srv.AdminDynamic().Resource(v1alpha1.GVR).Patch(context.Background(), "msg-relretry-1", types.MergePatchType, []byte(body), metav1.PatchOptions{}, "status")
			require.NoError(t, err)
		}
		patchStatus(`{"status":{"extensions":{"hosts":"unreadable"}}}`)
		deletePR(t, srv, "msg-relretry-1")
		st := c.trail.await(t, "msg-relretry-1", msgDeletingHostsRetrying, 30*time.Second)
		assert.Contains(t, st.Message, "reading host records")
		patchStatus(`{"status":{"extensions":{"hosts":null}}}`)
		eventually(t, 30*time.Second, func() bool { _, ok := getPR(t, srv, "msg-relretry-1"); return !ok }, "never released")
	})
}

// touchPackageVariant changes a PackageVariant (an annotation) as someone else would, so a write based on
// an earlier read of it meets a conflict.
func touchPackageVariant(t *testing.T, srv *kubeapi.Server, name string) {
	_, err := srv.AdminDynamic().Resource(external.PackageVariantGVR).Namespace("default").Patch(context.Background(), name,
		types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"annotations":{"example.com/touched":"%d"}}}`, time.Now().UnixNano())), metav1.PatchOptions{})
	if err != nil {
		t.Errorf("touching package variant %s: %v", name, err)
	}
}

// nowhere sends a request to another namespace than its object's (which does not exist either).
func nowhere(req *http.Request) *http.Request {
	r := req.Clone(req.Context())
	r.URL.Path = strings.Replace(r.URL.Path, "/namespaces/default/", "/namespaces/msg-nowhere/", 1)
	return r
}
