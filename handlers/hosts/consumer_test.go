package hosts

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Every ProvisioningState baremetal-operator v0.13.2 defines (apis/metal3.io/v1alpha1
// baremetalhost_types.go), without a consumer or image: in use exactly while CAPM3's Delete would wait
// (baremetal/metal3machine_manager.go v1.13.2), plus "externally provisioned" (something else manages the
// image: never ours to wipe); taken (counted available for the request) only with an image on the host.
func TestAHostIsInUseExactlyWhileMetal3SaysSo(t *testing.T) {
	for state, want := range map[string][2]bool{ // {inUse, taken}
		"": {false, false}, "unmanaged": {false, false}, "registering": {false, false}, "match profile": {false, false},
		"preparing": {true, false}, "ready": {false, false}, "available": {false, false},
		"provisioning": {true, true}, "provisioned": {true, true}, "externally provisioned": {true, true},
		"deprovisioning": {true, false}, "inspecting": {false, false},
		"powering off before delete": {true, false}, "deleting": {true, false},
	} {
		bmh := &unstructured.Unstructured{Object: map[string]any{
			"spec":   map[string]any{"online": false},
			"status": map[string]any{"provisioning": map[string]any{"state": state}},
		}}
		c := consumerOf(bmh)
		assert.Equal(t, want[0], c.inUse, "in use when %q", state)
		assert.Equal(t, want[1], c.taken(), "taken when %q", state)
	}
	// A consumerRef (CAPM3's setHostConsumerRef) or an image makes any host in use.
	avail := map[string]any{"provisioning": map[string]any{"state": "available"}}
	ref := &unstructured.Unstructured{Object: map[string]any{"status": avail, "spec": map[string]any{
		"consumerRef": map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "Metal3Machine", "name": "m-1", "namespace": "metal3"}}}}
	c := consumerOf(ref)
	assert.True(t, c.inUse)
	assert.True(t, c.taken())
	assert.Equal(t, consumer{inUse: true, kind: "Metal3Machine", namespace: "metal3", name: "m-1",
		apiVersion: "infrastructure.cluster.x-k8s.io/v1beta2", state: "available"}, c)
	img := &unstructured.Unstructured{Object: map[string]any{"status": avail, "spec": map[string]any{"image": map[string]any{"url": "u"}}}}
	assert.True(t, consumerOf(img).inUse)
}
