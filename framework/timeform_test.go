package framework

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/framework/kopf"
)

// A record the operator starts is written in its configured form: naive for a kopf 1.36 image.
func TestRecordsWeStartUseTheNaiveFormWhenAskedTo(t *testing.T) {
	t.Parallel()
	label := "timeform-naive"
	to := newTestOperator(t, label, Options{TimeForm: kopf.TimeNaive}, func(_ *Operator, w *Watch) {
		w.OnCreate("create_fn", func(_ context.Context, c *Cause) error {
			return Temporary(time.Hour, "waiting")
		}, Retries(5))
	})
	to.start(t)
	create(t, widget(label, "tn1", map[string]any{}))
	var raw string
	eventually(t, 20*time.Second, func() bool {
		u, ok := get(t, "tn1")
		raw = u.GetAnnotations()[testPrefix+"/create_fn"]
		return ok && raw != ""
	}, "no progress record written")
	rec, err := kopf.DecodeProgress(raw)
	require.NoError(t, err)
	form, ok := rec.TimeForm()
	require.True(t, ok)
	assert.Equal(t, kopf.TimeNaive, form, raw)
	assert.NotContains(t, raw, "+00:00")
}

var retriedAgain = regexp.MustCompile(`"retries":([3-9]|[1-9][0-9]+),`)

// A record the Python image (kopf 1.40.1) left on an object in flight is rewritten by a waiting handler
// in the form it was read in — aware, whatever the operator's setting — with its sub-handler ids byte for
// byte, and the sub-handler records themselves untouched.
func TestPythonImagesRecordKeepsItsFormAndBytesWhenRewritten(t *testing.T) {
	t.Parallel()
	label := "timeform-keep"
	to := newTestOperator(t, label, Options{TimeForm: kopf.TimeNaive}, func(_ *Operator, w *Watch) {
		fn := func(_ context.Context, c *Cause) error {
			return Temporary(time.Hour, "Cluster resource creation ongoing")
		}
		w.OnCreate("create_fn", fn)
	})
	n := kopf.Namer{Prefix: testPrefix}
	subID := "create_fn/create_fn.<locals>.sub_validations"
	rec := `{"started":"2026-12-01T08:49:17.749626+00:00","delayed":"2026-12-01T08:49:33.964126+00:00","purpose":"create","retries":2,"success":false,"failure":false,"message":"None","subrefs":["create_fn/create_fn.<locals>.check_c_status","create_fn/create_fn.<locals>.sub_creation","` + subID + `"]}`
	sub := `{"started":"2026-12-01T08:49:17.750115+00:00","stopped":"2026-12-01T08:49:17.762410+00:00","purpose":"create","retries":1,"success":true,"failure":false}`
	u := widget(label, "tk1", map[string]any{"x": "y"})
	u.SetAnnotations(map[string]string{
		testPrefix + "/kopf-managed": "yes", n.V2("create_fn"): rec, n.V2(subID): sub, n.V1(subID): sub,
	})
	create(t, u)
	to.start(t)
	var raw string
	eventually(t, 20*time.Second, func() bool {
		got, ok := get(t, "tk1")
		raw = got.GetAnnotations()[n.V2("create_fn")]
		// 3, or more: the watch event of a pass's own write can arrive before the write's answer names
		// its resourceVersion, and then counts as a change that wakes the handler once more (a known
		// extra pass, not this test's subject).
		return ok && retriedAgain.MatchString(raw)
	}, "the record was never rewritten")
	assert.Equal(t, `{"started":"2026-12-01T08:49:17.749626+00:00","delayed":"`, raw[:len(`{"started":"2026-12-01T08:49:17.749626+00:00","delayed":"`)], "started kept as it was")
	assert.Contains(t, raw, `"subrefs":["create_fn/create_fn.<locals>.check_c_status","create_fn/create_fn.<locals>.sub_creation","create_fn/create_fn.<locals>.sub_validations"]}`)
	got, err := kopf.DecodeProgress(raw)
	require.NoError(t, err)
	assert.Regexp(t, `\+00:00$`, *got.Delayed, "the new delay is aware too")
	ann := mustGet(t, "tk1").GetAnnotations()
	assert.Equal(t, sub, ann[n.V2(subID)])
	assert.Equal(t, sub, ann[n.V1(subID)])
}
