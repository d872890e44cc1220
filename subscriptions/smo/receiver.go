// Package smo is a small SMO callback receiver: it accepts O2IMS InventoryChangeNotifications POSTed to
// it, records them in arrival order, and can be told to fail (an HTTP status) or to hang, for tests and
// the local run.
package smo

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// Notification is one accepted notification with its arrival time.
type Notification struct {
	Body     map[string]any
	Received time.Time
}

// Receiver records notifications. Its zero value is not usable; see New.
type Receiver struct {
	mu       sync.Mutex
	got      []Notification
	attempts int
	status   int           // answered instead of 204 while non-zero (nothing recorded)
	hang     chan struct{} // while non-nil, requests wait for it to close (or the client to give up)
	srv      *httptest.Server
	onNotify func(Notification)
}

// New starts a receiver on a loopback port.
func New() *Receiver {
	r := &Receiver{}
	r.srv = httptest.NewServer(r)
	return r
}

// URL is the callback to subscribe with.
func (r *Receiver) URL() string { return r.srv.URL + "/smo/v1/ocloud_inventory_observer" }

// Close stops it.
func (r *Receiver) Close() {
	r.Hang(false)
	r.srv.Close()
}

// Fail makes every POST answer status (0: accept again).
func (r *Receiver) Fail(status int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status = status
}

// Hang makes POSTs never answer (until Hang(false)).
func (r *Receiver) Hang(on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case on && r.hang == nil:
		r.hang = make(chan struct{})
	case !on && r.hang != nil:
		close(r.hang)
		r.hang = nil
	}
}

// OnNotify calls fn for each accepted notification (e.g. to print it).
func (r *Receiver) OnNotify(fn func(Notification)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.onNotify = fn
}

// Notifications answers what was accepted, in arrival order.
func (r *Receiver) Notifications() []Notification {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Notification(nil), r.got...)
}

// Attempts counts every POST that arrived, accepted or not.
func (r *Receiver) Attempts() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.attempts
}

func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method == http.MethodGet { // the test of the callback before a subscription (SOL 013): 204
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if req.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, 4<<20))
	r.mu.Lock()
	r.attempts++
	hang, status := r.hang, r.status
	r.mu.Unlock()
	if hang != nil {
		select {
		case <-hang:
		case <-req.Context().Done():
			return
		}
	}
	if status != 0 {
		w.WriteHeader(status)
		return
	}
	var m map[string]any
	if err != nil || json.Unmarshal(body, &m) != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	n := Notification{Body: m, Received: time.Now()}
	r.mu.Lock()
	r.got = append(r.got, n)
	fn := r.onNotify
	r.mu.Unlock()
	if fn != nil {
		fn(n)
	}
	w.WriteHeader(http.StatusNoContent)
}
