package framework

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/framework/kopf"
)

// The diff-base we write for a request as the API server serves it is byte for byte the one kopf writes
// (kopf-observed.md: the spec plus labels, metadata after the spec): the Python image, rolled back to,
// reads it as "nothing changed".
func TestDiffBaseOfARequestIsKopfsBytes(t *testing.T) {
	prefix := "provisioningrequests.o2ims.provisioning.oran.org"
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "o2ims.provisioning.oran.org/v1alpha1", "kind": "ProvisioningRequest",
		"metadata": map[string]any{
			"name": "edge-1", "uid": "u-1", "resourceVersion": "42", "generation": int64(1),
			"labels": map[string]any{"test": "python"},
			"annotations": map[string]any{
				prefix + "/kopf-managed": "yes", prefix + "/create_fn": `{"retries":1}`,
				"kubectl.kubernetes.io/last-applied-configuration": "{}",
			},
			"finalizers": []any{prefix},
		},
		"spec": map[string]any{
			"description": "test request", "name": "edge python-1", "templateName": "edge-cluster",
			"templateParameters": map[string]any{"clusterName": "edge-python-1"}, "templateVersion": "v1.0.0",
		},
		"status": map[string]any{"provisioningStatus": map[string]any{"provisioningState": "progressing"}},
	}}
	want := `{"spec":{"description":"test request","name":"edge python-1","templateName":"edge-cluster",` +
		`"templateParameters":{"clusterName":"edge-python-1"},"templateVersion":"v1.0.0"},"metadata":{"labels":{"test":"python"}}}` + "\n"
	assert.Equal(t, want, kopf.EncodeDiffBase(essence(u, prefix)))
}
