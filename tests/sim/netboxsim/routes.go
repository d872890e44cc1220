package netboxsim

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"
)

// Route names used by Calls, InjectFault and SetLatency.
const (
	RouteStatus       = "status"
	RouteCustomFields = "custom-fields"
	RouteDevices      = "devices" // the device list
	RouteDevice       = "device"  // one device (GET/PATCH)
	RouteSites        = "sites"
	RouteDeviceTypes  = "device-types"
)

// routes maps NetBox's paths onto ServeMux method patterns ({$}: the path exactly, as NetBox's URL conf
// matches it). Each path also gets a pattern for any other method, so that such a request is counted,
// delayed, faulted and authenticated like the rest before its 405; an unknown path is a 404. Both answer
// NetBox's {"detail": …} body, never ServeMux's text.
func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	handle := func(pattern, route string, byMethod map[string]http.HandlerFunc) {
		for method, h := range byMethod {
			mux.Handle(method+" "+pattern, s.serve(route, method, h))
		}
		mux.Handle(pattern, s.serve(route, "", nil))
	}
	get := func(h http.HandlerFunc) map[string]http.HandlerFunc {
		return map[string]http.HandlerFunc{http.MethodGet: h}
	}
	handle("/api/status/{$}", RouteStatus, get(s.handleStatus))
	handle("/api/extras/custom-fields/{$}", RouteCustomFields, map[string]http.HandlerFunc{
		http.MethodGet: s.handleCustomFields, http.MethodPost: s.handleCustomFieldCreate})
	handle("/api/dcim/devices/{$}", RouteDevices, get(s.handleDeviceList))
	handle("/api/dcim/devices/{id}/{$}", RouteDevice, map[string]http.HandlerFunc{
		http.MethodGet: s.handleDeviceGet, http.MethodPatch: s.handleDevicePatch})
	handle("/api/dcim/sites/{$}", RouteSites, get(s.handleSiteList))
	handle("/api/dcim/device-types/{$}", RouteDeviceTypes, get(s.handleDeviceTypeList))
	mux.HandleFunc("/", notFound)
	return mux
}

// ServeHTTP implements http.Handler. Every API path ends in "/"; one that does not, or is not in
// canonical form, gets NetBox's 404 here, where ServeMux would answer with a redirect.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if !strings.HasSuffix(p, "/") || path.Clean(p)+"/" != p {
		notFound(w, r)
		return
	}
	s.mux.ServeHTTP(w, r)
}

func notFound(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusNotFound, map[string]any{"detail": "Not found."}, "")
}

// deviceID is the {id} of a device path; serve has already refused one that is not a positive int32.
func deviceID(r *http.Request) (int32, bool) {
	n, err := strconv.ParseInt(r.PathValue("id"), 10, 32)
	return int32(n), err == nil && n > 0
}

// serve wraps a route's handler (nil: no handler for this method) in what every request meets first,
// in NetBox's order as far as a test can see it: the call is counted, its latency waited out, an outage
// or a queued fault answered, the token checked, and only then the method dispatched.
func (s *Server) serve(route, method string, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := deviceID(r)
		if route == RouteDevice && !ok {
			notFound(w, r) // /api/dcim/devices/<not a number>/: no such URL
			return
		}
		key := r.Method + " " + route

		// Read the body first: net/http notices a client that hangs up only once
		// the body has been consumed, and latency must be cut short by that.
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))

		s.mu.Lock()
		s.calls[key]++
		if s.logCalls {
			s.callLog = append(s.callLog, CallRecord{Method: r.Method, Route: route, Query: r.URL.Query(), At: s.opts.Clock()})
		}
		delay := s.latency[key]
		s.mu.Unlock()

		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-s.closing:
				t.Stop()
				return
			case <-r.Context().Done():
				t.Stop()
				if r.Method == http.MethodPatch && route == RouteDevice {
					s.recordAbandonedPatch(r, id)
				}
				return // the client left: like a request killed before it reached the database
			}
		}

		if status := s.outageStatus(); status != 0 {
			writeFault(w, &Fault{Status: status})
			return
		}
		if f := s.takeFault(r.Method, route); f != nil {
			writeFault(w, f)
			return
		}

		if status, detail := s.authenticate(r); status != 0 {
			writeJSON(w, status, map[string]any{"detail": detail}, "")
			return
		}
		if !s.permitted(r, route) {
			writeJSON(w, http.StatusForbidden, map[string]any{"detail": "You do not have permission to perform this action."}, "")
			return
		}

		// A GET pattern matches HEAD too; NetBox's API views answer HEAD as any other unknown method here.
		if h == nil || r.Method != method {
			writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"detail": fmt.Sprintf("Method %q not allowed.", r.Method)}, "")
			return
		}
		h(w, r)
	})
}
