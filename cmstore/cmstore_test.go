package cmstore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func cm(name, rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv}}
}

// answer is what a read answers for name when the informer holds cached (nil: nothing).
func answer(c *Cache, name string, cached *corev1.ConfigMap) *corev1.ConfigMap {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cached == nil {
		return c.overlayLocked(name, nil, false)
	}
	return c.overlayLocked(name, cached, true)
}

// The writer reads its own write until the informer has it or a later one, then the informer's copy;
// an event older than the write changes nothing.
func TestAWriteIsAnsweredUntilTheInformerHasIt(t *testing.T) {
	c := New(nil, "ns", "l")
	old, mine, later := cm("a", "4"), cm("a", "5"), cm("a", "7")
	assert.Nil(t, answer(c, "a", nil))
	c.Wrote(mine)
	assert.Same(t, mine, answer(c, "a", nil), "created here, not yet seen")
	assert.Same(t, mine, answer(c, "a", old), "the cache is behind the write")
	c.seen(old, false)
	assert.Same(t, mine, answer(c, "a", old), "an older event is no catching up")
	c.Wrote(old)
	assert.Same(t, mine, answer(c, "a", old), "an older copy does not replace a newer write")
	assert.Same(t, later, answer(c, "a", later), "a later version in the cache wins")
	c.seen(mine, false)
	assert.Empty(t, c.written, "caught up: forgotten")
	assert.Same(t, old, answer(c, "a", old), "from now on the cache answers")
}

// A deletion here is answered as none until the informer sees it; a write after it answers again.
func TestADeletionIsAnsweredUntilTheInformerSeesIt(t *testing.T) {
	c := New(nil, "ns", "l")
	x := cm("x", "3")
	c.Deleted("x")
	assert.Nil(t, answer(c, "x", x), "deleted here, still cached")
	c.seen(cache.DeletedFinalStateUnknown{Key: "ns/x", Obj: x}, true)
	assert.Empty(t, c.deleted)
	c.Deleted("x")
	again := cm("x", "9")
	c.Wrote(again)
	assert.Same(t, again, answer(c, "x", nil))
}

func TestResourceVersionsCompareAsIntegers(t *testing.T) {
	assert.True(t, atLeast("10", "9"), "not as strings")
	assert.True(t, atLeast("9", "9"))
	assert.False(t, atLeast("9", "10"))
	assert.True(t, atLeast("abc", "abc"), "opaque ones only when equal")
	assert.False(t, atLeast("abd", "abc"))
}

// A State's ConfigMap deleted and created again here: the deletion's event, older than the creation,
// leaves the creation answered; the deletion of the creation itself, or a tombstone (whose version is
// only the last the informer saw), takes it.
func TestAnOlderDeletionLeavesTheWriteMadeAfterIt(t *testing.T) {
	c := New(nil, "ns", "l")
	mine := cm("s", "9")
	c.Wrote(mine)
	c.seen(cm("s", "7"), true)
	assert.Same(t, mine, answer(c, "s", nil), "the deletion was of the copy before this creation")
	c.seen(cm("s", "10"), true)
	assert.Nil(t, answer(c, "s", nil), "the deletion of this creation")
	c.Wrote(mine)
	c.seen(cache.DeletedFinalStateUnknown{Key: "ns/s", Obj: cm("s", "7")}, true)
	assert.Nil(t, answer(c, "s", nil), "a tombstone")
}
