package nbi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/o2ims-operator/o2ims-operator/internal/certfile"
	"github.com/o2ims-operator/o2ims-operator/nbi/callback"
)

// Store is the operator's informer cache of ProvisioningRequests: reads never call the API server.
type Store interface {
	// List answers every request: shared, read-only objects (never changed here), in any order.
	List() ([]*unstructured.Unstructured, error)
	// Get answers one request, and whether it exists: shared and read-only like List's (never changed
	// here; a copy per named GET was most of what one allocated).
	Get(name string) (*unstructured.Unstructured, bool, error)
}

// RevisionedStore is a Store that can tell whether List's answer may have changed: the id order a
// list walks is then sorted once per change rather than once per page (see byID).
type RevisionedStore interface {
	Store
	// Revision moves after every change List would show: read before List, a value that has not
	// moved since means that List's answer is still current (as current as the cache it reads). It
	// fails whenever the kept answer must not be used, e.g. while List would fail.
	Revision() (uint64, error)
}

// StoreUnavailable is the answer while the Store cannot be read.
func StoreUnavailable(err error) *Problem {
	return NewProblem(http.StatusServiceUnavailable, "the provisioning requests cannot be read right now; retry later").WithCause(err)
}

// Server is the northbound listener every O2IMS API is served on (the provisioning API, nbi/provisioning;
// the inventory API, nbi/inventoryapi): TLS, authentication, content negotiation, ProblemDetails,
// metrics and one log line per request. The APIs register their routes when it is built (New).
type Server struct {
	cfg       Config
	log       *zap.Logger
	metrics   *metrics
	auth      *authenticator    // nil when Auth is none
	keys      *keySet           // the OAuth issuer's keys; nil without oauth
	certs     *certfile.KeyPair // nil without TLS
	clientCAs *caReloader       // nil without client certificates
	mux       *http.ServeMux
	roots     []root // the APIs' roots, in registration order
	handler   http.Handler

	mu       sync.Mutex
	srv      *http.Server
	ln       net.Listener // the TCP listener (beneath TLS, when served)
	stopping bool
	stopped  chan error
	cancel   context.CancelFunc // stops the key refresh
}

// New builds the server with its APIs' routes (each registers on the shared mux); Start binds it. kube
// reviews tokens and permissions and is required when cfg.Auth is "kubernetes"; reg receives the
// metrics (nil: not registered).
func New(cfg Config, kube kubernetes.Interface, log *zap.Logger, reg prometheus.Registerer, apis ...API) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	s := &Server{cfg: cfg, log: log, mux: http.NewServeMux(), stopped: make(chan error, 1)}
	var err error
	if s.metrics, err = newMetrics(reg); err != nil {
		return nil, fmt.Errorf("nbi: registering metrics: %w", err)
	}
	if cfg.authEnabled() {
		if err := s.newAuth(kube); err != nil {
			return nil, err
		}
	}
	if cfg.TLSCertFile != "" {
		if s.certs, err = certfile.NewKeyPair(cfg.TLSCertFile, cfg.TLSKeyFile, "NBI_TLS_CERT_FILE/NBI_TLS_KEY_FILE", "TLS certificate", log); err != nil {
			return nil, err
		}
	}
	if cfg.ClientCAFile != "" {
		if s.clientCAs, err = newCAReloader(cfg.ClientCAFile, log); err != nil {
			return nil, err
		}
	}
	for _, api := range apis {
		api.Register(&Mux{s})
	}
	s.handler = http.HandlerFunc(s.serveHTTP)
	return s, nil
}

// Handler is the whole API (routing, errors, authentication, metrics and logs) as one http.Handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Start binds Host:Port now — a port in use is an error naming it, so the operator stops instead of
// running without its API — and serves in the background.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil || s.stopping {
		return errors.New("nbi: the server was already started")
	}
	addr := net.JoinHostPort(s.cfg.Host, strconv.Itoa(s.cfg.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("nbi: cannot listen on %s: %w", addr, err)
	}
	s.ln = ln
	// Every connection is bounded: no handler streams (each answers one body), so WriteTimeout — from the
	// end of the request's headers to the end of the answer — covers the longest one, a subscription's
	// POST, which waits for its callback's test (at most callback.MaxTestTimeout) and one API write.
	s.srv = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second, // a 1 MiB body at a slow but honest pace
		WriteTimeout:      s.cfg.APITimeout + callback.MaxTestTimeout + 30*time.Second,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		// Handshake failures and broken connections are the peer's business: debug, not warnings.
		ErrorLog: mustStdLog(s.log.Named("http")),
	}
	served := ln
	if s.certs != nil {
		s.srv.TLSConfig = s.tlsConfig()
		served = tls.NewListener(ln, s.srv.TLSConfig)
	}
	if s.keys != nil {
		ctx, cancel := context.WithCancel(context.Background())
		s.cancel = cancel
		go s.keys.refresh(ctx, true) // fetched ahead of the first token, which then costs no fetch
		go s.keys.run(ctx, s.cfg.OAuth.JWKSRefresh)
	}
	srv := s.srv
	go func() { s.served(srv.Serve(served)) }()
	s.log.Info("northbound API listening", zap.String("address", ln.Addr().String()),
		zap.Bool("tls", s.certs != nil), zap.String("auth", s.cfg.Auth))
	return nil
}

// served records how Serve ended: after Shutdown that is expected; otherwise the API stopped by itself
// (its listener closed or failed) and Stopped reports it, so the operator exits and is restarted.
func (s *Server) served(err error) {
	s.mu.Lock()
	stopping := s.stopping
	s.mu.Unlock()
	if stopping {
		return
	}
	if err == nil || errors.Is(err, http.ErrServerClosed) {
		err = errors.New("stopped serving")
	}
	err = fmt.Errorf("nbi: the northbound API stopped by itself: %w", err)
	s.log.Error("the northbound API stopped by itself", zap.Error(err))
	s.stopped <- err
}

// Addr is the address the server listens on ("" before Start).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Stopped receives an error when the server stops serving by itself (not through Shutdown).
func (s *Server) Stopped() <-chan error { return s.stopped }

// Shutdown stops accepting, lets requests in flight finish within ShutdownTimeout (or ctx, if sooner)
// and then closes what is left.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.stopping = true
	srv := s.srv
	if s.cancel != nil {
		s.cancel()
	}
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("nbi: requests still in flight after %s were cut off: %w", s.cfg.ShutdownTimeout, err)
	}
	s.log.Info("northbound API stopped")
	return nil
}

// Probe connects to the listener as a client would — TCP, then a GET of the first API root's
// api_versions — so a liveness
// check fails (500) when the API does not accept connections, even if the process is alive. With
// authentication on, the 401 an anonymous GET earns proves serving as well as a 200.
func (s *Server) Probe(ctx context.Context) (any, error) {
	s.mu.Lock()
	ln, stopping := s.ln, s.stopping
	s.mu.Unlock()
	if ln == nil {
		return nil, errors.New("nbi: the northbound API was not started")
	}
	if stopping {
		return nil, errors.New("nbi: the northbound API is stopping")
	}
	addr := s.dialAddr(ln.Addr())
	scheme := "http"
	tr := &http.Transport{DisableKeepAlives: true, Proxy: nil}
	if s.certs != nil {
		scheme = "https"
		// Probing our own listener: the certificate is ours, its name need not match the loopback dial.
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // see above
	}
	defer tr.CloseIdleConnections()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
	}
	first := ""
	if len(s.roots) > 0 {
		first = s.roots[0].path
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+addr+first+"/api_versions", nil)
	if err != nil {
		return nil, err
	}
	resp, err := tr.RoundTrip(req)
	var opErr *net.OpError
	if err != nil && s.clientCAs != nil && errors.As(err, &opErr) && opErr.Op == "remote error" {
		// The probe has no client certificate: the handshake's refusal proves serving.
		return map[string]string{"northbound": "serving", "address": ln.Addr().String()}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("nbi: the northbound API does not accept connections on %s: %w", addr, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && !(s.auth != nil && resp.StatusCode == http.StatusUnauthorized) {
		return nil, fmt.Errorf("nbi: the northbound API answered its probe with %d", resp.StatusCode)
	}
	return map[string]string{"northbound": "serving", "address": ln.Addr().String()}, nil
}

// dialAddr turns a wildcard listen address into one a client can dial.
func (s *Server) dialAddr(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return a.String()
	}
	ip := "127.0.0.1"
	if h := net.ParseIP(s.cfg.Host); h != nil && h.To4() == nil {
		ip = "::1"
	}
	return net.JoinHostPort(ip, strconv.Itoa(tcp.Port))
}

func mustStdLog(l *zap.Logger) *log.Logger {
	std, err := zap.NewStdLogAt(l, zap.DebugLevel)
	if err != nil { // only for a level zap does not know
		return zap.NewStdLog(l)
	}
	return std
}
