package framework

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// What client-go hands back from a named GET without an error is checked to be that object.
func TestCheckNamedAnswer(t *testing.T) {
	pv := func(kind, ns, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": kind}}
		u.SetNamespace(ns)
		u.SetName(name)
		return u
	}
	list := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "PackageVariantList",
		"metadata": map[string]any{"resourceVersion": "7"}, "items": []any{},
	}}
	nullItems := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "PackageVariantList", "items": nil}}
	otherGroup := pv("PackageVariant", "default", "a")
	otherGroup.SetAPIVersion("porch.example.com/v1")
	cases := map[string]struct {
		obj  runtime.Object
		kind string
		ns   string
		bad  string
	}{
		"the object":          {pv("PackageVariant", "default", "a"), "PackageVariant", "default", ""},
		"a list":              {list, "PackageVariant", "default", "is a list"},
		"a list, null items":  {nullItems, "PackageVariant", "default", `"PackageVariantList"`},
		"another kind":        {pv("ConfigMap", "default", "a"), "PackageVariant", "default", `"ConfigMap"`},
		"another group":       {otherGroup, "PackageVariant", "default", `"porch.example.com/v1"`},
		"another name":        {pv("PackageVariant", "default", "b"), "PackageVariant", "default", `"default/b", not "default/a"`},
		"another namespace":   {pv("PackageVariant", "other", "a"), "PackageVariant", "default", `"other/a"`},
		"cluster-scoped":      {pv("PackageVariant", "", "a"), "PackageVariant", "", ""},
		"typed, right":        {&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"}}, "", "default", ""},
		"typed, from a list":  {&corev1.Secret{}, "", "default", `"", not "default/a"`},
		"typed list":          {&corev1.SecretList{}, "", "default", "is a list"},
		"nothing":             {nil, "", "default", "holds no object"},
		"kind unknown, right": {pv("Whatever", "default", "a"), "", "default", ""},
	}
	for name, c := range cases {
		err := CheckNamedAnswer("get x", c.obj, "config.porch.kpt.dev/v1alpha1", c.kind, c.ns, "a")
		if c.bad == "" {
			assert.NoError(t, err, name)
			continue
		}
		ae, ok := AsAPIError(err)
		if !assert.True(t, ok, name) {
			continue
		}
		assert.Equal(t, ClassProtocol, ae.Class, name)
		assert.True(t, ae.Retryable, "%s: the next answer may be right", name)
		assert.False(t, ae.MayHaveLanded, name)
		assert.False(t, IsClass(err, ClassNotFound), name)
		assert.Contains(t, err.Error(), c.bad, name)
	}
}
