package hosts

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// recordedHosts is status.extensions.hosts as a request written before the phases were typed holds it
// (every member and phase, an entry with nothing optional), in the API server's compact JSON.
const recordedHosts = `[{"id":"netbox-11","index":0,"phase":"claimed","role":"control-plane"},` +
	`{"id":"netbox-12","index":0,"phase":"candidate","role":"worker"},` +
	`{"index":1,"role":"worker"},` +
	`{"id":"netbox-13","index":2,"phase":"metal3-released","refused":"BMC refused the credentials","role":"worker","surplus":true},` +
	`{"id":"netbox-14","index":3,"phase":"released","role":"worker","surplus":true}]`

// handBuiltSlots is how writeSlots built the records before they were written through Slot: the oracle
// the struct's form is compared with.
func handBuiltSlots(slots []Slot) []any {
	list := make([]any, 0, len(slots))
	for _, s := range slots {
		m := map[string]any{"role": s.Role, "index": int64(s.Index)}
		if s.ID != "" {
			m["id"] = s.ID
		}
		if s.Phase != "" {
			m["phase"] = string(s.Phase)
		}
		if s.Surplus {
			m["surplus"] = true
		}
		if s.Refused != "" {
			m["refused"] = s.Refused
		}
		list = append(list, m)
	}
	return list
}

// Existing requests resume: a recorded form reads into typed phases, and writing what was read gives back
// the same value (so an unchanged record is no write) and the same bytes.
func TestSlotRecordsKeepTheirPersistedForm(t *testing.T) {
	obj, _, err := unstructured.UnstructuredJSONScheme.Decode([]byte(`{"apiVersion":"v1","kind":"X","status":{"extensions":{"hosts":`+recordedHosts+`}}}`), nil, nil)
	require.NoError(t, err)
	u := obj.(*unstructured.Unstructured)

	slots, err := ReadSlots(u)
	require.NoError(t, err)
	assert.Equal(t, []Slot{
		{Role: "control-plane", Index: 0, ID: "netbox-11", Phase: PhaseClaimed},
		{Role: "worker", Index: 0, ID: "netbox-12", Phase: PhaseCandidate},
		{Role: "worker", Index: 1},
		{Role: "worker", Index: 2, ID: "netbox-13", Phase: PhaseMetal3Released, Surplus: true, Refused: "BMC refused the credentials"},
		{Role: "worker", Index: 3, ID: "netbox-14", Phase: PhaseReleased, Surplus: true},
	}, slots)

	written := slotsUnstructured(slots)
	stored, _, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "extensions", "hosts")
	assert.Equal(t, stored, written, "what was read is written back as the decoded object holds it")
	assert.Equal(t, handBuiltSlots(slots), written, "the form the hand-built maps wrote")
	assert.Equal(t, written, runtime.DeepCopyJSONValue(written), "plain JSON values only (no Phase in the object)")
	b, err := json.Marshal(written)
	require.NoError(t, err)
	assert.Equal(t, recordedHosts, string(b), "byte for byte")
}
