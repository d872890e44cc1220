package hosts_test

import (
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/o2ims-operator/o2ims-operator/handlers/hosts"
	"github.com/o2ims-operator/o2ims-operator/inventory"
	"github.com/o2ims-operator/o2ims-operator/netbox"
)

// The allocator over the real inventory view, driven by seeded random interleavings of arrivals,
// releases, administrators taking hosts, safety-net passes and requests that stop waiting, with the
// chain played by the test: a woken request asks at once, and every host it gets is claimed (the view
// shows it taken). Invariants, after every step: no host is handed to two requests; a host goes to a
// later request only when no earlier waiter that can use it still lacks one; and no free host is left
// while a waiter that can use it waits. Replay one sequence with O2IMS_ALLOC_SEED.

type allocModel struct {
	t      *testing.T
	seed   int64
	rng    *rand.Rand
	clk    *clocktesting.FakeClock
	view   *inventory.View
	alloc  *hosts.Allocator
	kinds  map[int32]string // device → its kind (the capability selectors match)
	owner  map[int32]string // device → the request that claimed it ("" free, "admin" taken by hand)
	reqs   map[string]*allocReq
	order  []string // waiting requests in the order they began to wait
	woken  []string
	nextID int
}

type allocReq struct {
	name, kind string // kind "" matches every kind
	need       int
	got        []int32
	waiting    bool
	gone       bool
}

func (r *allocReq) lacks() int { return r.need - len(r.got) }

func (r *allocReq) matches(kind string) bool { return r.kind == "" || r.kind == kind }

func TestAllocatorServesWaitersFirstComeFirstServed(t *testing.T) {
	seeds := []int64{1, 2, 3, 4, 5, 6, 7, 8, time.Now().UnixNano()}
	if s := os.Getenv("O2IMS_ALLOC_SEED"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		seeds = []int64{n}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			m := newAllocModel(t, seed)
			for step := 0; step < 300 && !t.Failed(); step++ {
				op := m.step()
				m.settle(op)
				m.checkLiveness(fmt.Sprintf("step %d (%s)", step, op))
			}
			if t.Failed() {
				t.Logf("replay with O2IMS_ALLOC_SEED=%d", seed)
			}
		})
	}
}

func newAllocModel(t *testing.T, seed int64) *allocModel {
	m := &allocModel{t: t, seed: seed, rng: rand.New(rand.NewSource(seed)), clk: clocktesting.NewFakeClock(time.Unix(1e9, 0)),
		view: inventory.NewView(inventory.Config{OCloudID: uuid.New()}, nil), kinds: map[int32]string{}, owner: map[int32]string{},
		reqs: map[string]*allocReq{}}
	m.alloc = hosts.NewAllocator(m.view, m.clk, time.Hour)
	m.alloc.WakeWith(func(_, name string) { m.woken = append(m.woken, name) })
	m.alloc.AliveWith(func(uid string) bool { r := m.reqs[uid]; return r == nil || !r.gone })
	for id := int32(1); id <= 12; id++ {
		m.kinds[id] = []string{"a", "b"}[id%2]
		m.owner[id] = "admin" // the pool starts full; releases free hosts
		m.write(id)
	}
	return m
}

// write shows device id in the view as its owner has it.
func (m *allocModel) write(id int32) {
	owner := m.owner[id]
	status := netbox.StatusActive
	if owner == "" {
		status = netbox.StatusStaged
	}
	m.view.Written(id, &netbox.InventoryDevice{ID: id, Name: fmt.Sprint("host-", id), Status: status, Managed: true,
		RequestUID: owner, Free: owner == "", Capabilities: map[string]any{"kind": m.kinds[id]},
		Site: netbox.InventorySite{ID: 1, Name: "site"}, Type: netbox.InventoryDeviceType{ID: 1, Model: "m"}})
}

func (m *allocModel) step() string {
	m.clk.Step(time.Second)
	if m.rng.Intn(8) == 0 {
		m.kinds[5] = []string{"a", "b"}[m.rng.Intn(2)] // an administrator edits a host's capability
		m.write(5)
	}
	switch n := m.rng.Intn(10); {
	case n < 3:
		m.nextID++
		r := &allocReq{name: fmt.Sprint("r", m.nextID), kind: []string{"a", "b", ""}[m.rng.Intn(3)], need: 1 + m.rng.Intn(2)}
		m.reqs[r.name] = r
		m.take(r)
		return "arrive " + r.name + " kind " + r.kind
	case n < 6:
		return m.release()
	case n < 7:
		return m.adminTakes()
	case n < 8:
		if r := m.pickWaiting(); r != nil {
			m.take(r)
			return "safety net " + r.name
		}
		return "nothing"
	case n < 9:
		// The spec's selector changes while it waits; the next pass asks with the new one.
		if r := m.pickWaiting(); r != nil {
			r.kind = []string{"a", "b", ""}[m.rng.Intn(3)]
			m.take(r)
			return "reselect " + r.name + " kind " + r.kind
		}
		return "nothing"
	default:
		if r := m.pickWaiting(); r != nil {
			r.gone, r.waiting = true, false
			m.order = slices.DeleteFunc(m.order, func(s string) bool { return s == r.name })
			if m.rng.Intn(2) == 0 {
				// Deleted before it had a finalizer: no pass of it says it stopped waiting.
				return "vanish " + r.name
			}
			m.alloc.Forget(r.name)
			return "forget " + r.name
		}
		return "nothing"
	}
}

// release frees a host: an administrator's, or every host of the request holding it, which is deleted.
func (m *allocModel) release() string {
	var held []int32
	for id, o := range m.owner {
		if o != "" {
			held = append(held, id)
		}
	}
	if len(held) == 0 {
		return "nothing"
	}
	slices.Sort(held)
	id := held[m.rng.Intn(len(held))]
	if o := m.owner[id]; o != "admin" {
		r := m.reqs[o]
		r.gone, r.waiting = true, false
		m.order = slices.DeleteFunc(m.order, func(s string) bool { return s == r.name })
		m.alloc.Forget(r.name)
		for _, h := range r.got {
			m.owner[h] = ""
			m.write(h)
		}
		return fmt.Sprintf("delete %s, releasing %v", r.name, r.got)
	}
	m.owner[id] = ""
	m.write(id)
	return fmt.Sprintf("release %d (%s)", id, m.kinds[id])
}

func (m *allocModel) adminTakes() string {
	for id := int32(1); id <= int32(len(m.kinds)); id++ {
		if m.owner[id] == "" {
			m.owner[id] = "admin"
			m.write(id)
			return fmt.Sprintf("admin takes %d", id)
		}
	}
	return "nothing"
}

func (m *allocModel) pickWaiting() *allocReq {
	if len(m.order) == 0 {
		return nil
	}
	return m.reqs[m.order[m.rng.Intn(len(m.order))]]
}

// take is one pass of r: it asks for what it lacks and claims what it gets.
func (m *allocModel) take(r *allocReq) {
	if r.gone || r.lacks() == 0 {
		return
	}
	skip := map[int32]bool{}
	for _, id := range r.got {
		skip[id] = true
	}
	kind := r.kind
	ids, since := m.alloc.Take(hosts.Want{UID: r.name, Name: r.name, Role: "worker", N: r.lacks(), Skip: skip, Selector: kind,
		Match: func(d *netbox.InventoryDevice) bool { return d.Free && (kind == "" || d.Capabilities["kind"] == kind) }})
	for _, id := range ids {
		if m.owner[id] != "" {
			m.t.Errorf("seed %d: %s got host %d, which %s holds", m.seed, r.name, id, m.owner[id])
			continue
		}
		if !r.matches(m.kinds[id]) {
			m.t.Errorf("seed %d: %s (kind %q) got host %d of kind %s", m.seed, r.name, r.kind, id, m.kinds[id])
		}
		for _, earlier := range m.order {
			if earlier == r.name {
				break
			}
			if e := m.reqs[earlier]; e.lacks() > 0 && e.matches(m.kinds[id]) {
				m.t.Errorf("seed %d: %s got host %d (%s) while %s, waiting longer for one, lacks %d", m.seed, r.name, id, m.kinds[id], e.name, e.lacks())
			}
		}
		r.got = append(r.got, id)
		m.owner[id] = r.name
		m.write(id)
	}
	switch {
	case r.lacks() == 0:
		r.waiting = false
		m.order = slices.DeleteFunc(m.order, func(s string) bool { return s == r.name })
		if !since.IsZero() {
			m.t.Errorf("seed %d: %s has all it asked for, yet is told it waits", m.seed, r.name)
		}
	case since.IsZero():
		m.t.Errorf("seed %d: %s lacks %d hosts and is not told since when it waits", m.seed, r.name, r.lacks())
	case !r.waiting:
		r.waiting = true
		m.order = append(m.order, r.name)
	}
}

// settle plays the chain: woken requests ask, longest waiter first, until nobody is woken.
func (m *allocModel) settle(op string) {
	for i := 0; len(m.woken) > 0; i++ {
		if i > 1000 {
			m.t.Fatalf("seed %d, %s: wakes never settle", m.seed, op)
		}
		woken := m.woken
		m.woken = nil
		slices.SortStableFunc(woken, func(x, y string) int { return slices.Index(m.order, x) - slices.Index(m.order, y) })
		for _, name := range slices.Compact(woken) {
			if !m.reqs[name].gone {
				m.take(m.reqs[name])
			}
		}
	}
}

// checkLiveness: once settled, no free host is left while a waiter that can use it waits.
func (m *allocModel) checkLiveness(where string) {
	for id, o := range m.owner {
		if o != "" {
			continue
		}
		for _, name := range m.order {
			if r := m.reqs[name]; r.matches(m.kinds[id]) {
				m.t.Errorf("seed %d, %s: host %d (%s) is free while %s waits for one", m.seed, where, id, m.kinds[id], name)
			}
		}
	}
}
