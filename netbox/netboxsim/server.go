package netboxsim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
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

// Options configure a simulator. The zero value is a NetBox 4.6.8 that accepts no
// token (every request gets 403) – set Tokens, or AllowAnonymous for a local run.
type Options struct {
	// Version is the netbox-version of /api/status/ (default "4.6.8").
	Version string
	// Tokens are the accepted API tokens: v1 tokens as plain text, v2 tokens as
	// "nbt_<key>.<secret>" (NetBox infers the version from the nbt_ prefix).
	Tokens []string
	// AllowAnonymous serves requests without a token (LOGIN_REQUIRED=False).
	AllowAnonymous bool
	// PageSize is PAGINATE_COUNT (default 50); MaxPageSize is MAX_PAGE_SIZE (default 1000).
	PageSize, MaxPageSize int
	// SelectAsObject renders select custom field values as {"value","label"} like NetBox 4.7.
	SelectAsObject bool
	// ExtraStatuses are device statuses added as by FIELD_CHOICES (go-netbox cannot decode them).
	ExtraStatuses []string
	// Clock replaces time.Now.
	Clock func() time.Time
}

// Fault makes the next Count requests for Method+Route answer Status with Body
// (a NetBox-like {"detail": …} when empty) before any other processing.
type Fault struct {
	Method, Route string
	Status        int
	Count         int
	Body          string
	// RetryAfter sets a Retry-After header (seconds) when > 0.
	RetryAfter int
}

// Server is the simulator. It is safe for concurrent use.
type Server struct {
	mu         sync.Mutex
	opts       Options
	version    string
	fields     map[string]*field
	devices    map[int32]*device
	sites      map[int32]*site
	types      map[int32]*deviceType
	nextSite   int32
	nextType   int32
	nextField  int32
	nextDevice int32
	lastStamp  time.Time

	calls     map[string]int
	patchLog  []PatchRecord
	faults    []*Fault
	latency   map[string]time.Duration
	dropPatch int
	ignored   map[string]bool

	patchHook func(id int32)

	servers []*httptest.Server
	closing chan struct{} // closed by Close: ends latency waits
}

// New returns a simulator with no custom fields and no devices.
func New(opts Options) *Server {
	if opts.Version == "" {
		opts.Version = "4.6.8"
	}
	if opts.PageSize <= 0 {
		opts.PageSize = 50
	}
	if opts.MaxPageSize <= 0 {
		opts.MaxPageSize = 1000
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	return &Server{
		opts:       opts,
		version:    opts.Version,
		fields:     map[string]*field{},
		devices:    map[int32]*device{},
		sites:      map[int32]*site{},
		types:      map[int32]*deviceType{},
		nextField:  1,
		nextDevice: 1,
		calls:      map[string]int{},
		latency:    map[string]time.Duration{},
		ignored:    map[string]bool{},
		closing:    make(chan struct{}),
	}
}

// Handler returns the simulator as an http.Handler (for a standalone program).
func (s *Server) Handler() http.Handler { return s }

// Start serves the simulator over plain HTTP on a loopback port.
func (s *Server) Start() *httptest.Server {
	ts := httptest.NewServer(s)
	s.mu.Lock()
	s.servers = append(s.servers, ts)
	s.mu.Unlock()
	return ts
}

// StartTLS serves the simulator over HTTPS on a loopback port; ts.Certificate()
// is the self-signed certificate a client must trust.
func (s *Server) StartTLS() *httptest.Server {
	ts := httptest.NewTLSServer(s)
	s.mu.Lock()
	s.servers = append(s.servers, ts)
	s.mu.Unlock()
	return ts
}

// Close stops every server started with Start or StartTLS.
func (s *Server) Close() {
	s.mu.Lock()
	servers := s.servers
	s.servers = nil
	select {
	case <-s.closing:
	default:
		if len(servers) > 0 {
			close(s.closing)
		}
	}
	s.mu.Unlock()
	for _, ts := range servers {
		ts.Close()
	}
}

// SetVersion changes the netbox-version reported by /api/status/.
func (s *Server) SetVersion(v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.version = v
}

// IgnoreFilter makes the device list silently ignore a query parameter (e.g.
// "cf_gpu_model"), as NetBox does for parameters it has no filter for.
func (s *Server) IgnoreFilter(param string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ignored[param] = true
}

// InjectFault queues a fault; faults for the same route are used in order.
func (s *Server) InjectFault(f Fault) {
	if f.Count <= 0 {
		f.Count = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &f)
}

// ClearFaults drops every queued fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// SetLatency delays every Method+Route request by d before it is processed (0
// removes it). A request whose client goes away during the delay is not processed.
func (s *Server) SetLatency(method, route string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency[method+" "+route] = d
}

// SetTokens replaces the accepted tokens (token rotation on the NetBox side).
func (s *Server) SetTokens(tokens ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.Tokens = append([]string(nil), tokens...)
}

// SetPatchHook runs fn (outside the simulator's lock, so it may call SetStatus
// or SetCustom) when a device PATCH arrives, before it is processed: a test
// uses it to change the device between a client's read and its write. nil removes it.
func (s *Server) SetPatchHook(fn func(id int32)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.patchHook = fn
}

// DropPatchAnswers makes the next n device PATCHes commit and then close the
// connection without any answer (a lost response).
func (s *Server) DropPatchAnswers(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropPatch = n
}

// Calls returns how many requests reached Method+Route (faulted ones included).
func (s *Server) Calls(method, route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method+" "+route]
}

// PatchLog returns every device PATCH received, in arrival order.
func (s *Server) PatchLog() []PatchRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]PatchRecord, len(s.patchLog))
	for i, r := range s.patchLog {
		r.Body = deepCopyMap(r.Body)
		out[i] = r
	}
	return out
}

// AddCustomField defines a custom field and returns its id. It panics on an
// invalid definition (a test bug).
func (s *Server) AddCustomField(cf CustomField) int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, err := s.addFieldLocked(cf)
	if err != nil {
		panic(err)
	}
	return id
}

func (s *Server) addFieldLocked(cf CustomField) (int32, error) {
	if cf.Name == "" || strings.Trim(cf.Name, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
		return 0, fmt.Errorf("netboxsim: invalid custom field name %q", cf.Name)
	}
	if _, ok := typeLabels[cf.Type]; !ok {
		return 0, fmt.Errorf("netboxsim: custom field %s: unknown type %q", cf.Name, cf.Type)
	}
	if _, dup := s.fields[cf.Name]; dup {
		return 0, fmt.Errorf("netboxsim: custom field %s already exists", cf.Name)
	}
	if cf.FilterLogic == "" {
		cf.FilterLogic = FilterLoose // NetBox's model default
	}
	if _, ok := filterLogicLabels[cf.FilterLogic]; !ok {
		return 0, fmt.Errorf("netboxsim: custom field %s: unknown filter logic %q", cf.Name, cf.FilterLogic)
	}
	if len(cf.ObjectTypes) == 0 {
		cf.ObjectTypes = []string{"dcim.device"}
	}
	cf.ObjectTypes = append([]string(nil), cf.ObjectTypes...)
	cf.Choices = append([]string(nil), cf.Choices...)
	cf.ID = s.nextField
	s.nextField++
	s.fields[cf.Name] = &field{CustomField: cf, created: s.stampLocked()}
	return cf.ID, nil
}

// RemoveCustomField deletes a custom field definition (stored values stay, as
// NetBox keeps custom_field_data until cleaned up, but are no longer rendered).
func (s *Server) RemoveCustomField(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.fields[name]; !ok {
		return false
	}
	delete(s.fields, name)
	return true
}

// StandardFields are the four fixed o2ims fields with their default names.
func StandardFields() []CustomField {
	return []CustomField{
		{Name: "o2ims_managed", Type: TypeBoolean, Label: "O2IMS managed", FilterLogic: FilterExact},
		{Name: "o2ims_request_uid", Type: TypeText, Label: "O2IMS request UID", FilterLogic: FilterExact},
		{Name: "o2ims_bmc_address", Type: TypeText, Label: "O2IMS BMC address", FilterLogic: FilterExact},
		{Name: "o2ims_boot_mac", Type: TypeText, Label: "O2IMS boot MAC", FilterLogic: FilterExact},
	}
}

// AddDevice stores a device and returns its id (d.ID when set, else the next free
// id). Status defaults to "staged". It panics on an invalid device (a test bug).
func (s *Server) AddDevice(d Device) int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, err := s.addDeviceLocked(d)
	if err != nil {
		panic(err)
	}
	return id
}

func (s *Server) addDeviceLocked(d Device) (int32, error) {
	if d.ID == 0 {
		d.ID = s.nextDevice
	}
	if d.ID < 0 {
		return 0, fmt.Errorf("netboxsim: invalid device id %d", d.ID)
	}
	if _, dup := s.devices[d.ID]; dup {
		return 0, fmt.Errorf("netboxsim: device %d already exists", d.ID)
	}
	if d.ID >= s.nextDevice {
		s.nextDevice = d.ID + 1
	}
	if d.Status == "" {
		d.Status = "staged"
	}
	if !s.validStatusLocked(d.Status) {
		return 0, fmt.Errorf("netboxsim: device %d: invalid status %q", d.ID, d.Status)
	}
	custom := map[string]any{}
	for k, v := range d.Custom {
		custom[k] = normalize(v)
	}
	st := s.siteLocked(Site{Name: d.Site})
	dt := s.deviceTypeLocked(DeviceType{Model: d.Model})
	now := s.stampLocked()
	s.devices[d.ID] = &device{
		id: d.ID, name: d.Name, status: d.Status, role: d.Role, siteID: st.ID, typeID: dt.ID,
		serial: d.Serial, assetTag: d.AssetTag, description: d.Description, tags: append([]string(nil), d.Tags...),
		custom: custom, created: now, lastUpdated: now,
	}
	return d.ID, nil
}

// Device returns a snapshot of one device.
func (s *Server) Device(id int32) (Device, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.devices[id]
	if !ok {
		return Device{}, false
	}
	return s.snapshotLocked(d), true
}

// Devices returns snapshots of all devices ordered by id.
func (s *Server) Devices() []Device {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Device, 0, len(s.devices))
	for _, d := range s.sortedDevicesLocked() {
		out = append(out, s.snapshotLocked(d))
	}
	return out
}

// SetStatus is an administrator edit of a device status (bumps last_updated).
func (s *Server) SetStatus(id int32, status string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.devices[id]
	if !ok {
		return fmt.Errorf("netboxsim: no device %d", id)
	}
	if !s.validStatusLocked(status) {
		return fmt.Errorf("netboxsim: invalid status %q", status)
	}
	d.status = status
	d.lastUpdated = s.stampLocked()
	return nil
}

// SetCustom is an administrator edit of one custom field value (nil clears it).
func (s *Server) SetCustom(id int32, name string, value any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.devices[id]
	if !ok {
		return fmt.Errorf("netboxsim: no device %d", id)
	}
	d.custom[name] = normalize(value)
	d.lastUpdated = s.stampLocked()
	return nil
}

// DeleteDevice removes a device.
func (s *Server) DeleteDevice(id int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.devices[id]; !ok {
		return false
	}
	delete(s.devices, id)
	return true
}

func (s *Server) validStatusLocked(st string) bool {
	return slices.Contains(standardStatuses, st) || slices.Contains(s.opts.ExtraStatuses, st)
}

// stampLocked returns a fresh last_updated, microsecond precision, strictly
// increasing so that two quick writes never share an ETag.
func (s *Server) stampLocked() time.Time {
	t := s.opts.Clock().UTC().Truncate(time.Microsecond)
	if !t.After(s.lastStamp) {
		t = s.lastStamp.Add(time.Microsecond)
	}
	s.lastStamp = t
	return t
}

func (s *Server) sortedDevicesLocked() []*device {
	out := make([]*device, 0, len(s.devices))
	for _, d := range s.devices {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

func (s *Server) sortedFieldsLocked() []*field {
	out := make([]*field, 0, len(s.fields))
	for _, f := range s.fields {
		out = append(out, f)
	}
	// NetBox orders custom fields by group_name, weight, name; all share group and weight here.
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	route, id, ok := parseRoute(r.URL.Path)
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]any{"detail": "Not found."}, "")
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

	if f := s.takeFault(r.Method, route); f != nil {
		body := f.Body
		if body == "" {
			body = fmt.Sprintf(`{"detail": %q}`, http.StatusText(f.Status))
		}
		w.Header().Set("Content-Type", "application/json")
		if f.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(f.RetryAfter))
		}
		w.WriteHeader(f.Status)
		_, _ = w.Write([]byte(body))
		return
	}

	if status, detail := s.authenticate(r); status != 0 {
		writeJSON(w, status, map[string]any{"detail": detail}, "")
		return
	}

	switch {
	case route == RouteStatus && r.Method == http.MethodGet:
		s.handleStatus(w, r)
	case route == RouteCustomFields && r.Method == http.MethodGet:
		s.handleCustomFields(w, r)
	case route == RouteDevices && r.Method == http.MethodGet:
		s.handleDeviceList(w, r)
	case route == RouteDevice && r.Method == http.MethodGet:
		s.handleDeviceGet(w, r, id)
	case route == RouteDevice && r.Method == http.MethodPatch:
		s.handleDevicePatch(w, r, id)
	case route == RouteSites && r.Method == http.MethodGet:
		s.handleSiteList(w, r)
	case route == RouteDeviceTypes && r.Method == http.MethodGet:
		s.handleDeviceTypeList(w, r)
	default:
		writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"detail": fmt.Sprintf("Method %q not allowed.", r.Method)}, "")
	}
}

func parseRoute(path string) (route string, id int32, ok bool) {
	switch path {
	case "/api/status/":
		return RouteStatus, 0, true
	case "/api/extras/custom-fields/":
		return RouteCustomFields, 0, true
	case "/api/dcim/devices/":
		return RouteDevices, 0, true
	case "/api/dcim/sites/":
		return RouteSites, 0, true
	case "/api/dcim/device-types/":
		return RouteDeviceTypes, 0, true
	}
	rest, found := strings.CutPrefix(path, "/api/dcim/devices/")
	if !found {
		return "", 0, false
	}
	num, found := strings.CutSuffix(rest, "/")
	if !found || num == "" {
		return "", 0, false
	}
	n, err := strconv.ParseInt(num, 10, 32)
	if err != nil || n <= 0 {
		return "", 0, false
	}
	return RouteDevice, int32(n), true
}

func (s *Server) takeFault(method, route string) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if f.Method == method && f.Route == route {
			f.Count--
			if f.Count <= 0 {
				s.faults = append(s.faults[:i], s.faults[i+1:]...)
			}
			c := *f
			return &c
		}
	}
	return nil
}

// authenticate mirrors netbox.api.authentication.TokenAuthentication plus
// LOGIN_REQUIRED: DRF answers 403 (not 401) because no authenticator declares a
// WWW-Authenticate header.
func (s *Server) authenticate(r *http.Request) (int, string) {
	s.mu.Lock()
	tokens, anonymous := s.opts.Tokens, s.opts.AllowAnonymous
	s.mu.Unlock()
	parts := strings.Fields(r.Header.Get("Authorization"))
	if len(parts) == 0 || (!strings.EqualFold(parts[0], "Token") && !strings.EqualFold(parts[0], "Bearer")) {
		if anonymous {
			return 0, ""
		}
		return http.StatusForbidden, "Authentication credentials were not provided."
	}
	if len(parts) != 2 {
		return http.StatusForbidden, `Invalid authorization header: Must be in the form "Bearer <key>.<token>" or "Token <token>"`
	}
	value := parts[1]
	if strings.HasPrefix(value, "nbt_") {
		if !strings.Contains(strings.TrimPrefix(value, "nbt_"), ".") {
			return http.StatusForbidden, "Invalid authorization header: Could not parse key from v2 token. Did you mean to use 'Token' instead of 'Bearer'?"
		}
		if slices.Contains(tokens, value) {
			return 0, ""
		}
		return http.StatusForbidden, "Invalid v2 token"
	}
	if slices.Contains(tokens, value) {
		return 0, ""
	}
	return http.StatusForbidden, "Invalid v1 token"
}

func (s *Server) handleStatus(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	v := s.version
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"django-version":      "5.2.9",
		"hostname":            "netboxsim",
		"installed_apps":      map[string]any{},
		"netbox-version":      v,
		"netbox-full-version": v + "-Community",
		"plugins":             map[string]any{},
		"python-version":      "3.12.3",
		"rq-workers-running":  1,
	}, "")
}

func writeJSON(w http.ResponseWriter, status int, body any, etag string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("API-Version", "4.6")
	w.Header().Set("Vary", "Accept, Cookie, Origin")
	if etag != "" {
		w.Header().Set("ETag", etag)
	}
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(body)
}
