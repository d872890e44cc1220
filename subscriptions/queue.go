package subscriptions

import (
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/o2ims-operator/o2ims-operator/inventory"
)

// queue is one subscriber's notifications, in order, and its progress, under a lock of its own: the
// view's sink pushes while the subscriber's delivery takes the head, and no other subscriber waits.
type queue struct {
	limit int // before changes of one object are coalesced
	wake  chan struct{}
	clock clock.PassiveClock

	mu    sync.Mutex
	notes []*note
	index map[string]*note // object id → its last queued note not yet being sent
	// told is every object as this subscriber was last told of it (delivered, or left out by its
	// filter): its progress, persisted in its ConfigMap when its queue is empty and told moved (dirty).
	told  map[string]inventory.Change
	dirty bool
}

// note is one notification to send: a change of one object, from prior to post.
type note struct {
	kind        inventory.Kind
	id          string
	prior, post *inventory.Entry
	at          time.Time // when the change was seen
	sending     bool      // being delivered: never rewritten
}

// newQueue starts a queue from what its subscriber was told; dirty: that is not persisted yet.
func newQueue(limit int, told map[string]inventory.Change, dirty bool, clk clock.PassiveClock) *queue {
	return &queue{limit: limit, wake: make(chan struct{}, 1), clock: clk, index: map[string]*note{}, told: told, dirty: dirty}
}

// push queues a change; past the limit, a change of an object already queued (and not being sent) is
// folded into that notification (its prior kept, its post replaced), so a queue holds at most the
// limit plus one notification per object: bounded, and nothing lost but intermediate states. An object
// whose creation waits and that goes again is folded into nothing: the subscriber never knew it.
func (q *queue) push(c inventory.Change) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.notes) >= q.limit {
		if p := q.index[c.ID]; p != nil && !p.sending {
			p.post = c.Post
			if p.prior == nil && p.post == nil {
				q.drop(p)
			}
			return
		}
	}
	p := &note{kind: c.Kind, id: c.ID, prior: c.Prior, post: c.Post, at: c.At}
	if p.at.IsZero() {
		p.at = q.clock.Now()
	}
	q.notes = append(q.notes, p)
	q.index[c.ID] = p
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// drop removes p, which is not being sent.
func (q *queue) drop(p *note) {
	delete(q.index, p.id)
	for i, n := range q.notes {
		if n == p {
			q.notes = append(q.notes[:i], q.notes[i+1:]...)
			return
		}
	}
}

// next is the head, marked as being sent (a later change of its object queues behind it), or nil.
func (q *queue) next() *note {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.notes) == 0 {
		return nil
	}
	p := q.notes[0]
	p.sending = true
	if q.index[p.id] == p {
		delete(q.index, p.id)
	}
	return p
}

// done removes the head p, delivered or left out by the filter: the subscriber has been told of it.
func (q *queue) done(p *note) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.notes = q.notes[1:]
	if p.post == nil {
		delete(q.told, p.id)
	} else {
		q.told[p.id] = inventory.Change{Kind: p.kind, ID: p.id, Post: p.post}
	}
	q.dirty = true
}

// depth is how many notifications wait and when the oldest was seen (zero when none).
func (q *queue) depth() (int, time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.notes) == 0 {
		return 0, time.Time{}
	}
	return len(q.notes), q.notes[0].at
}

// unsaved is the progress to persist — when the queue is empty and the progress moved since the last
// time — taken as saved; ok false when there is nothing to write.
func (q *queue) unsaved() (objs map[string]storedObject, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.dirty || len(q.notes) > 0 {
		return nil, false
	}
	q.dirty = false
	return stored(q.told), true
}

// saveFailed marks the progress as not persisted, for the next round.
func (q *queue) saveFailed() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.dirty = true
}
