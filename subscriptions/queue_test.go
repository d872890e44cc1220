package subscriptions

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/clock"

	"github.com/o2ims-operator/o2ims-operator/inventory"
)

// At its limit a subscriber's queue coalesces: a further change of an object already waiting (and not
// being sent) replaces that object's post state in place, keeping its prior state and its place; a change
// of an object not waiting still queues (the queue is bounded by the objects, not the changes), and one
// being sent is never rewritten under the sender.
func TestAFullQueueCoalescesChangesOfOneObject(t *testing.T) {
	const limit = 2
	q := newQueue(limit, map[string]inventory.Change{}, false, clock.RealClock{})
	e := func(v string) *inventory.Entry { return inventory.NewEntry("x", map[string]any{"v": v}) }
	q.push(inventory.Change{Kind: inventory.KindResource, ID: "a", Prior: e("a0"), Post: e("a1")})
	q.push(inventory.Change{Kind: inventory.KindResource, ID: "b", Prior: e("b0"), Post: e("b1")})
	require.Len(t, q.notes, 2)

	q.push(inventory.Change{Kind: inventory.KindResource, ID: "a", Prior: e("a1"), Post: e("a2")})
	require.Len(t, q.notes, 2, "a change of a waiting object at the limit is coalesced")
	assert.Equal(t, e("a0"), q.notes[0].prior, "the prior state the subscriber was told of stays")
	assert.Equal(t, e("a2"), q.notes[0].post, "the latest state replaces the queued one")

	q.push(inventory.Change{Kind: inventory.KindResource, ID: "c", Prior: nil, Post: e("c1")})
	require.Len(t, q.notes, 3, "another object still queues")

	q.notes[1].sending = true
	q.push(inventory.Change{Kind: inventory.KindResource, ID: "b", Prior: e("b1"), Post: e("b2")})
	require.Len(t, q.notes, 4, "a note being sent is not rewritten: the change queues behind it")
	assert.Equal(t, e("b1"), q.notes[1].post)
	assert.Equal(t, e("b2"), q.notes[3].post)

	q = newQueue(10, map[string]inventory.Change{}, false, clock.RealClock{})
	q.push(inventory.Change{Kind: inventory.KindResource, ID: "a", Post: e("a1")})
	q.push(inventory.Change{Kind: inventory.KindResource, ID: "a", Prior: e("a1"), Post: e("a2")})
	assert.Len(t, q.notes, 2, "below the limit every change is its own notification")
}
