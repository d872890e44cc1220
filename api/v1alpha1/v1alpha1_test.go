package v1alpha1

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// crd is the shipped CustomResourceDefinition, read as a generic tree.
func crd(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "manifests", "crd", Group+"_"+Resource+".yaml"))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, yaml.Unmarshal(raw, &m))
	return m
}

func at(t *testing.T, v any, path ...string) any {
	t.Helper()
	for _, p := range path {
		m, ok := v.(map[string]any)
		require.True(t, ok, "%s is not an object", strings.Join(path, "."))
		v, ok = m[p]
		require.True(t, ok, "the CRD has no %s", strings.Join(path, "."))
	}
	return v
}

// The names here are the CRD's: a renamed field, a new version or another enum must change this package.
func TestNamesAreTheCRDs(t *testing.T) {
	c := crd(t)
	assert.Equal(t, Resource+"."+Group, at(t, c, "metadata", "name"))
	assert.Equal(t, Group, at(t, c, "spec", "group"))
	assert.Equal(t, Kind, at(t, c, "spec", "names", "kind"))
	assert.Equal(t, Resource, at(t, c, "spec", "names", "plural"))
	assert.Equal(t, "Cluster", at(t, c, "spec", "scope"))
	versions := at(t, c, "spec", "versions").([]any)
	require.Len(t, versions, 1, "one served version: GVR names it")
	assert.Equal(t, Version, at(t, versions[0], "name"))
	assert.Equal(t, Group+"/"+Version, APIVersion)

	props := at(t, versions[0], "schema", "openAPIV3Schema", "properties")
	for _, f := range []string{FieldName, FieldDescription, FieldTemplateName, FieldTemplateVersion, FieldTemplateParameters} {
		at(t, props, FieldSpec, "properties", f)
	}
	st := at(t, props, FieldStatus, "properties")
	for _, f := range []string{FieldProvisioningState, FieldProvisioningMessage, FieldProvisioningUpdateTime} {
		at(t, st, FieldProvisioningStatus, "properties", f)
	}
	for _, f := range []string{FieldNodeClusterID, FieldInfrastructureResources} {
		at(t, st, FieldProvisionedResourceSet, "properties", f)
	}
	at(t, st, FieldExtensions)
	var enum []string
	for _, v := range at(t, st, FieldProvisioningStatus, "properties", FieldProvisioningState, "enum").([]any) {
		enum = append(enum, v.(string))
	}
	assert.Equal(t, enum, States)
}

func TestStatusRoundTrip(t *testing.T) {
	want := ProvisioningStatus{State: StateFulfilled, Message: "Cluster resource created", UpdateTime: "2026-12-01T10:00:00Z"}
	set := ProvisionedResourceSet{NodeClusterID: "uid-1", InfrastructureResourceIDs: []string{"h1", "h2"}}
	u := &unstructured.Unstructured{Object: map[string]any{FieldStatus: map[string]any{
		FieldProvisioningStatus: want.Unstructured(), FieldProvisionedResourceSet: set.Unstructured(),
	}}}
	// What the chain writes is what a JSON round trip (the API server) keeps.
	u = &unstructured.Unstructured{Object: jsonRoundTrip(t, u.Object)}
	assert.Equal(t, want, StatusOf(u))
	assert.Equal(t, set, ResourceSetOf(u))
}

func TestReadersTolerateWhatTheServerMightHold(t *testing.T) {
	empty := &unstructured.Unstructured{Object: map[string]any{}}
	assert.Equal(t, ProvisioningStatus{}, StatusOf(empty))
	rs := ResourceSetOf(empty)
	assert.NotNil(t, rs.InfrastructureResourceIDs, "never nil: the O2IMS answer needs []")
	assert.Empty(t, rs.InfrastructureResourceIDs)
	assert.Equal(t, Spec{}, SpecOf(empty))
	assert.Equal(t, "", ClusterName(empty))

	odd := &unstructured.Unstructured{Object: map[string]any{
		FieldSpec: map[string]any{FieldName: 7, FieldTemplateName: "t", FieldTemplateParameters: map[string]any{ParamClusterName: "edge-1"}},
		FieldStatus: map[string]any{
			FieldProvisioningStatus:     map[string]any{FieldProvisioningState: StateFailed, FieldProvisioningUpdateTime: 12},
			FieldProvisionedResourceSet: map[string]any{FieldInfrastructureResources: []any{"h1", 3, "h2"}},
		},
	}}
	assert.Equal(t, ProvisioningStatus{State: StateFailed}, StatusOf(odd), "a field of the wrong type reads as \"\", the others still read")
	assert.Equal(t, []string{"h1", "h2"}, ResourceSetOf(odd).InfrastructureResourceIDs)
	assert.Equal(t, "", SpecOf(odd).Name)
	assert.Equal(t, "t", SpecOf(odd).TemplateName)
	assert.Equal(t, "edge-1", ClusterName(odd))

	// SpecOf hands out the stored map itself (no copy on the NBI's hot path).
	params := odd.Object[FieldSpec].(map[string]any)[FieldTemplateParameters].(map[string]any)
	params["x"] = 1
	assert.Equal(t, 1, SpecOf(odd).TemplateParameters["x"])
}

func jsonRoundTrip(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(m)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out))
	return out
}
