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
