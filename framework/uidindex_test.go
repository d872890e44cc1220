package framework

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

func TestUIDIndexFollowsAddsUpdatesDeletesAndRecreation(t *testing.T) {
	x := newUIDIndex()
	h := x.handler()
	obj := func(ns, name, uid string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetNamespace(ns)
		u.SetName(name)
		u.SetUID(types.UID(uid))
		return u
	}
	a1, b := obj("", "a", "uid-a1"), obj("ns", "b", "uid-b")
	h.OnAdd(a1, true)
	h.OnAdd(b, false)
	assert.Equal(t, "a", x.key("uid-a1"))
	assert.Equal(t, "ns/b", x.key("uid-b"))
	assert.Equal(t, "", x.key("nobody"))

	// Deleted and re-created under the same name: the old uid's delete may arrive after the new add.
	a2 := obj("", "a", "uid-a2")
	h.OnAdd(a2, false)
	h.OnDelete(a1)
	assert.Equal(t, "", x.key("uid-a1"))
	assert.Equal(t, "a", x.key("uid-a2"), "the old uid's delete leaves the new one")
	h.OnUpdate(a2, a2)
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/b", Obj: b})
	assert.Equal(t, "", x.key("uid-b"))
	assert.Len(t, x.keys, 1)
}
