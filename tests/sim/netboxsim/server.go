package netboxsim

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// The simulator: its options, state and lifecycle. Its routes are in routes.go, each NetBox endpoint
// family in a file of its own (status, customfields, devices, devicepatch, sites, devicetypes).

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
	// Permissions restrict a token to the Django permissions listed ("dcim.view_device",
	// "dcim.change_device", "extras.add_customfield"…); a token not in the map has them all (a
	// superuser's). A request the token may not make is NetBox's 403 (TokenPermissions' perms_map).
	Permissions map[string][]string
	// ReadOnlyTokens are tokens with write_enabled off: every POST/PUT/PATCH/DELETE is a 403.
	ReadOnlyTokens []string
	// PageSize is PAGINATE_COUNT (default 50); MaxPageSize is MAX_PAGE_SIZE (default 1000).
	PageSize, MaxPageSize int
	// SelectAsObject renders select custom field values as {"value","label"} like NetBox 4.7.
	SelectAsObject bool
	// ExtraStatuses are device statuses added as by FIELD_CHOICES (go-netbox cannot decode them).
	ExtraStatuses []string
	// Clock replaces time.Now.
	Clock func() time.Time
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
	callLog   []CallRecord
	logCalls  bool // LogCalls
	patchLog  []PatchRecord
	faults    []*Fault
	latency   map[string]time.Duration
	dropPatch int
	ignored   map[string]bool
	outage    int // every request answers this status (0: none); SetOutage

	patchHook func(id int32)

	mux     *http.ServeMux // routes.go
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
	s := &Server{
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
	s.mux = s.routes()
	return s
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
