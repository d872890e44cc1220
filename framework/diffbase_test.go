package framework

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/framework/kopf"
	"github.com/o2ims-operator/o2ims-operator/tests/pythonimage"
)

// The diff-base we write for a request is byte for byte the one kopf 1.40.1 wrote for it: computed from a
// request the Python image fulfilled, as captured (tests/pythonimage), it equals that request's own
// last-handled-configuration — so the image, rolled back to, reads ours as "nothing changed".
func TestDiffBaseOfARequestIsKopfsBytes(t *testing.T) {
	prefix := "provisioningrequests.o2ims.provisioning.oran.org"
	o, err := pythonimage.Load(pythonimage.Fulfilled, pythonimage.As{Name: "pi-fx-fulfilled", Label: "fx"})
	require.NoError(t, err)
	u := o.Request
	want := u.GetAnnotations()[prefix+"/last-handled-configuration"]
	require.NotEmpty(t, want)
	assert.Equal(t, want, kopf.EncodeDiffBase(essence(u, prefix)))
	// What the API server adds and kopf leaves out changes nothing: our annotations, finalizers, status.
	ann := u.GetAnnotations()
	ann["kubectl.kubernetes.io/last-applied-configuration"] = "{}"
	ann[prefix+"/create_fn"] = `{"retries":1}`
	u.SetAnnotations(ann)
	u.SetFinalizers([]string{prefix})
	assert.Equal(t, want, kopf.EncodeDiffBase(essence(u, prefix)))
}
