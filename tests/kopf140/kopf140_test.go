package kopf140

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/tests/pythonimage"
)

func object(ann map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "o2ims.provisioning.oran.org/v1alpha1", "kind": "ProvisioningRequest",
		"metadata": map[string]any{"name": "r"},
		"spec":     map[string]any{"templateName": "t", "templateVersion": "v1", "templateParameters": map[string]any{"clusterName": "c"}},
	}}
	u.SetAnnotations(ann)
	return u
}

// captured is a request exactly as the released Python image left it (tests/pythonimage).
func captured(t *testing.T, s pythonimage.Scenario) *unstructured.Unstructured {
	t.Helper()
	o, err := pythonimage.Load(s, pythonimage.As{Name: "r", Label: "fx"})
	require.NoError(t, err)
	return o.Request
}

// The Python image's own state reads cleanly: the oracle accepts what kopf 1.40.1 wrote.
func TestThePythonImagesOwnStateReadsCleanly(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 22, 43, 12, 596669000, time.UTC) // create_fn's "started" in the capture
	for _, s := range []pythonimage.Scenario{pythonimage.Labels, pythonimage.NoLabels} {
		assert.Empty(t, Read(captured(t, s)).Problems, s)
	}
	r := Read(captured(t, pythonimage.NoLabels))
	require.Len(t, r.Records, 4)
	cf := r.Records["create_fn"]
	assert.Equal(t, 2, cf.Retries)
	assert.Equal(t, t0, cf.Started)
	assert.True(t, cf.Sleeping(t0.Add(time.Second)))
	assert.False(t, cf.Sleeping(t0.Add(time.Minute)))
	assert.True(t, r.Records["create_fn/create_fn.<locals>.sub_creation"].Success)
	assert.Contains(t, cf.Raw, `"create_fn/create_fn.<locals>.check_c_status"`)

	f := captured(t, pythonimage.Fulfilled)
	fr := Read(f)
	assert.Empty(t, fr.Problems)
	assert.True(t, fr.SeesNoChange(f))
	f.Object["spec"].(map[string]any)["templateVersion"] = "v2"
	assert.False(t, fr.SeesNoChange(f))
	// Its labels are part of what kopf compares (the diff-base carries them).
	g := captured(t, pythonimage.Fulfilled)
	g.SetLabels(map[string]string{pythonimage.ScenarioLabel: "other"})
	assert.False(t, Read(g).SeesNoChange(g))
}

// What kopf 1.40.1 trips over is reported, one line each.
func TestWhatKopf140CannotReadIsReported(t *testing.T) {
	p := Prefix + "/"
	cases := map[string]struct {
		ann  map[string]string
		want string
	}{
		"naive time":      {map[string]string{p + "create_fn": `{"started":"2026-12-01T08:56:48.639575","retries":1}`}, "raises TypeError"},
		"naive delay":     {map[string]string{p + "create_fn": `{"started":"2026-12-01T08:56:48.639575+00:00","delayed":"2026-12-01T08:57:48.639575"}`}, "delayed"},
		"not ISO":         {map[string]string{p + "create_fn": `{"started":"yesterday"}`}, "not ISO 8601"},
		"not JSON":        {map[string]string{p + "create_fn": `{`}, "json.loads"},
		"string retries":  {map[string]string{p + "create_fn": `{"retries":"2"}`}, "retries"},
		"string success":  {map[string]string{p + "create_fn": `{"success":"false"}`}, "not a boolean"},
		"made-up subref":  {map[string]string{p + "create_fn": `{"subrefs":["create_fn/sub_validations"]}`}, "no handler id"},
		"made-up key":     {map[string]string{p + "create_-9UaJzw": `{}`}, "never reads"},
		"our delete_fn":   {map[string]string{p + "delete_fn": `{}`}, "never reads"},
		"keys disagree":   {map[string]string{p + "create_fn.create_fn._locals_.sub_creation": `{"retries":1}`, p + "create_-1y2VFQ": `{"retries":2}`}, "differ"},
		"diff-base list":  {map[string]string{p + "last-handled-configuration": `[1]`}, "not an object"},
		"marker":          {map[string]string{p + "kopf-managed": "true"}, "kopf-managed"},
		"aware, non-UTC ": {map[string]string{p + "create_fn": `{"started":"2026-12-01T10:56:48.639575+02:00"}`}, ""},
		"Z suffix":        {map[string]string{p + "create_fn": `{"started":"2026-12-01T08:56:48Z"}`}, ""},
	}
	for name, c := range cases {
		r := Read(object(c.ann))
		if c.want == "" {
			assert.Empty(t, r.Problems, name)
			continue
		}
		require.Len(t, r.Problems, 1, "%s: %v", name, r.Problems)
		assert.Contains(t, r.Problems[0], c.want, name)
	}
	// HTML-escaped subrefs are the same JSON to kopf: readable, if not byte-identical.
	r := Read(object(map[string]string{p + "create_fn": `{"subrefs":["create_fn/create_fn.\u003clocals\u003e.sub_creation"]}`}))
	assert.Empty(t, r.Problems)
	assert.True(t, strings.Contains(r.Records["create_fn"].Subrefs[0], "<locals>"))
}

// kopf 1.40.1's cause rules for the Python image's handlers (create_fn on create and resume, nothing
// else): its finalizer is removed as not required, a deletion is let through, a missing diff-base is a
// create, an unchanged one a resume at start and nothing later.
func TestDecideFollowsKopf140sCauseRules(t *testing.T) {
	fresh := object(nil)
	assert.Equal(t, Decision{Reason: ReasonCreate, RunsCreateFn: true}, Decide(fresh, true))
	inFlight := captured(t, pythonimage.Labels)
	assert.Equal(t, Decision{Reason: ReasonCreate, RunsCreateFn: true}, Decide(inFlight, true), "no diff-base yet: still a create")

	handled := captured(t, pythonimage.Fulfilled)
	assert.Equal(t, Decision{Reason: ReasonResume, RunsCreateFn: true}, Decide(handled, true))
	assert.Equal(t, Decision{Reason: ReasonNoop}, Decide(handled, false))

	changed := handled.DeepCopy()
	changed.Object["spec"].(map[string]any)["templateVersion"] = "v2"
	assert.Equal(t, Decision{Reason: ReasonUpdate, RunsCreateFn: true}, Decide(changed, true), "resume rides along at start")
	assert.Equal(t, Decision{Reason: ReasonUpdate}, Decide(changed, false), "no update handler")

	withFin := handled.DeepCopy()
	withFin.SetFinalizers([]string{Finalizer})
	d := Decide(withFin, true)
	assert.True(t, d.RemovesFinalizer)
	assert.Equal(t, Decision{Reason: ReasonResume, RunsCreateFn: true}, d.Final())

	deleting := withFin.DeepCopy()
	now := metav1.Now()
	deleting.SetDeletionTimestamp(&now)
	assert.Equal(t, Decision{Reason: ReasonDelete, Gone: true}, Decide(deleting, true))
	deleting.SetFinalizers([]string{Finalizer, "porch.kpt.dev/other"})
	assert.Equal(t, Decision{Reason: ReasonDelete}, Decide(deleting, true), "another finalizer still holds it")
	deleting.SetFinalizers([]string{"porch.kpt.dev/other"})
	assert.Equal(t, Decision{Reason: ReasonFree}, Decide(deleting, true))
}
