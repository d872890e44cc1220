package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

// hosts: [{count: 2000000000}] used to run the operator out of memory 3–5 s after it was accepted (one slot
// per host), and again after every restart. Through the NBI it is now a 400 naming the field; written
// straight to the API server (kubectl create, a client's create) the chain fails it with the reason, and
// the operator stays up, alive and ready, and deletes it cleanly.
func TestTwoBillionHostsAreRefusedByTheNBIAndFailedByTheChainWithoutHarm(t *testing.T) {
	ctx := context.Background()
	huge := map[string]any{
		"provisioningRequestId": "e2e-huge", "name": "huge", "description": "two billion hosts",
		"templateName": "nephio-workload-cluster", "templateVersion": "v3.0.0",
		"templateParameters": map[string]any{"clusterName": "edge-huge",
			"hosts": []any{map[string]any{"role": "worker", "count": 2000000000}}},
	}
	code, _, body := call(t, http.MethodPost, operator.NBIURL+nbiBase, huge)
	require.Equal(t, http.StatusBadRequest, code, string(body))
	var problem map[string]any
	require.NoError(t, json.Unmarshal(body, &problem))
	assert.Contains(t, problem["status"], "templateParameters.hosts[0].count must be at most 1000 (hosts per role), got 2000000000")
	_, err := st.API.AdminDynamic().Resource(v1alpha1.GVR).Get(ctx, "e2e-huge", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "nothing was created: %v", err)

	// A PUT of an existing request is refused the same way and leaves it as it was.
	ok := map[string]any{}
	for k, v := range huge {
		ok[k] = v
	}
	ok["provisioningRequestId"] = "e2e-huge-put"
	ok["templateParameters"] = map[string]any{"clusterName": "edge-huge-put"}
	code, _, body = call(t, http.MethodPost, operator.NBIURL+nbiBase, ok)
	require.Equal(t, http.StatusCreated, code, string(body))
	t.Cleanup(func() { _, _, _ = call(t, http.MethodDelete, operator.NBIURL+nbiBase+"/e2e-huge-put", nil) })
	huge["provisioningRequestId"] = "e2e-huge-put"
	code, _, body = call(t, http.MethodPut, operator.NBIURL+nbiBase+"/e2e-huge-put", huge)
	require.Equal(t, http.StatusBadRequest, code, string(body))
	assert.Contains(t, string(body), "templateParameters.hosts[0].count must be at most 1000")

	// kubectl create: the CRD takes any templateParameters, so the chain is what refuses it.
	manifest := filepath.Join(t.TempDir(), "huge.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(`apiVersion: o2ims.provisioning.oran.org/v1alpha1
kind: ProvisioningRequest
metadata:
  name: e2e-huge-kubectl
spec:
  name: huge
  description: two billion hosts
  templateName: nephio-workload-cluster
  templateVersion: v3.0.0
  templateParameters:
    clusterName: edge-huge-kubectl
    hosts:
    - role: worker
      count: 2000000000
`), 0o600))
	out, err := st.KubectlRun(ctx, "create", "-f", manifest)
	require.NoError(t, err, out)
	// A client's own create, with the count as a float far beyond any integer type.
	direct := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "o2ims.provisioning.oran.org/v1alpha1", "kind": "ProvisioningRequest",
		"metadata": map[string]any{"name": "e2e-huge-direct"},
		"spec": map[string]any{"name": "huge", "description": "", "templateName": "nephio-workload-cluster", "templateVersion": "v3.0.0",
			"templateParameters": map[string]any{"clusterName": "edge-huge-direct",
				"hosts": []any{map[string]any{"role": "a", "count": int64(600)}, map[string]any{"role": "b", "count": 1e300}}}},
	}}
	_, err = st.API.AdminDynamic().Resource(v1alpha1.GVR).Create(ctx, direct, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, n := range []string{"e2e-huge-kubectl", "e2e-huge-direct"} {
			_ = st.API.AdminDynamic().Resource(v1alpha1.GVR).Delete(context.Background(), n, metav1.DeleteOptions{})
		}
	})

	for name, reason := range map[string]string{
		"e2e-huge-kubectl": "Provisioning request validation failed; reason: hosts[0].count must be at most 1000 (hosts per role), got 2000000000",
		"e2e-huge-direct":  "Provisioning request validation failed; reason: hosts[1].count must be at most 1000 (hosts per role), got 1e+300",
	} {
		var got info
		eventually(t, 60*time.Second, func() bool {
			_, _, b := call(t, http.MethodGet, operator.NBIURL+nbiBase+"/"+name, nil)
			_ = json.Unmarshal(b, &got)
			return got.Status.Phase == "FAILED"
		}, "%s never failed: %+v", name, &got)
		assert.Equal(t, reason, got.Status.Message, name)
	}
	// Still the same process, alive and ready, after several passes over them.
	time.Sleep(5 * time.Second)
	select {
	case <-operator.Done():
		t.Fatalf("the operator died: %v\n%s", operator.Err(), stack.Tail(operator.Log, 30))
	default:
	}
	code, _, _ = call(t, http.MethodGet, operator.HealthURL+"/healthz", nil)
	assert.Equal(t, http.StatusOK, code)
	code, _, _ = call(t, http.MethodGet, operator.HealthURL+"/readyz", nil)
	assert.Equal(t, http.StatusOK, code)
	log, _ := os.ReadFile(operator.Log)
	assert.NotContains(t, string(log), "out of memory")

	// They hold nothing, so deletion completes.
	out, err = st.KubectlRun(ctx, "delete", "provisioningrequest", "e2e-huge-kubectl", "e2e-huge-direct", "--timeout=60s")
	require.NoError(t, err, out)
}
