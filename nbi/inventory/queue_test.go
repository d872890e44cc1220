package inventory

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// At its limit a subscriber's queue coalesces: a further change of an object already waiting (and not
// being sent) replaces that object's post state in place, keeping its prior state and its place; a change
// of an object not waiting still queues (the queue is bounded by the objects, not the changes), and one
// being sent is never rewritten under the sender.
func TestAFullQueueCoalescesChangesOfOneObject(t *testing.T) {
	s := &subscriber{wake: make(chan struct{}, 1), index: map[string]*note{}}
	e := func(v string) *Entry { return NewEntry("x", map[string]any{"v": v}) }
	const limit = 2
	s.push(Change{Kind: KindResource, ID: "a", Prior: e("a0"), Post: e("a1")}, limit)
	s.push(Change{Kind: KindResource, ID: "b", Prior: e("b0"), Post: e("b1")}, limit)
	require.Len(t, s.queue, 2)

	s.push(Change{Kind: KindResource, ID: "a", Prior: e("a1"), Post: e("a2")}, limit)
	require.Len(t, s.queue, 2, "a change of a waiting object at the limit is coalesced")
	assert.Equal(t, e("a0"), s.queue[0].prior, "the prior state the subscriber was told of stays")
	assert.Equal(t, e("a2"), s.queue[0].post, "the latest state replaces the queued one")

	s.push(Change{Kind: KindResource, ID: "c", Prior: nil, Post: e("c1")}, limit)
	require.Len(t, s.queue, 3, "another object still queues")

	s.queue[1].sending = true
	s.push(Change{Kind: KindResource, ID: "b", Prior: e("b1"), Post: e("b2")}, limit)
	require.Len(t, s.queue, 4, "a note being sent is not rewritten: the change queues behind it")
	assert.Equal(t, e("b1"), s.queue[1].post)
	assert.Equal(t, e("b2"), s.queue[3].post)

	s = &subscriber{wake: make(chan struct{}, 1), index: map[string]*note{}}
	s.push(Change{Kind: KindResource, ID: "a", Post: e("a1")}, 10)
	s.push(Change{Kind: KindResource, ID: "a", Prior: e("a1"), Post: e("a2")}, 10)
	assert.Len(t, s.queue, 2, "below the limit every change is its own notification")
}
