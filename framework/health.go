package framework

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
	"k8s.io/utils/clock"
)

// probeCacheTTL is kopf's: probes are expensive enough (the NBI probe connects) that a kubelet polling
// every few seconds must not run them each time.
const probeCacheTTL = 10 * time.Second

// ParseLiveness reads kopf's --liveness=http://HOST:PORT/PATH (no port → 80, no path → /healthz).
func ParseLiveness(raw string) (addr, path string, err error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Hostname() == "" {
		return "", "", fmt.Errorf("--liveness must look like http://HOST:PORT/PATH, got %q", raw)
	}
	port := u.Port()
	if port == "" {
		port = "80"
	}
	path = u.Path
	if path == "" || path == "/" {
		path = "/healthz"
	}
	if path == "/readyz" || path == "/metrics" {
		return "", "", fmt.Errorf("--liveness path %s is reserved for readiness/metrics", path)
	}
	return net.JoinHostPort(u.Hostname(), port), path, nil
}

// healthServer is the operator's one HTTP listener: liveness (kopf's JSON of probe results), readiness and
// Prometheus metrics.
type healthServer struct {
	addr, path string
	probes     []probe
	readyz     http.Handler // 200 "ok", or 503 with why (readiness.serve)
	gatherer   prometheus.Gatherer
	clock      clock.PassiveClock
	log        *zap.Logger
	metricsIn  func(http.Handler) http.Handler // guards /metrics (METRICS_AUTH); nil: open
	timeouts   ServerTimeouts

	mu       sync.Mutex
	cachedAt time.Time
	cached   []byte
	failed   bool

	srv   *http.Server
	bound atomic.Value // string: the listener's address, read by other goroutines
}

func (h *healthServer) start() error {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+h.path, h.liveness)
	mux.Handle("GET /readyz", h.readyz)
	var metrics http.Handler = promhttp.HandlerFor(h.gatherer, promhttp.HandlerOpts{ErrorLog: zap.NewStdLog(h.log)})
	if h.metricsIn != nil {
		metrics = h.metricsIn(metrics)
	}
	mux.Handle("GET /metrics", metrics)
	l, err := net.Listen("tcp", h.addr)
	if err != nil {
		return err
	}
	h.bound.Store(l.Addr().String())
	h.srv = h.timeouts.server(mux)
	h.srv.ErrorLog = zap.NewStdLog(h.log.Named("health"))
	go func() {
		if err := h.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			h.log.Error("health listener stopped", zap.Error(err))
		}
	}()
	return nil
}

// Addr is the bound address (tests bind port 0).
func (h *healthServer) Addr() string {
	a, _ := h.bound.Load().(string)
	return a
}

// stop closes the listener and waits for answers in flight until ctx ends, then cuts them off: it runs
// last within the shutdown deadline.
func (h *healthServer) stop(ctx context.Context) {
	if h.srv != nil && h.srv.Shutdown(ctx) != nil {
		_ = h.srv.Close()
	}
}

func (h *healthServer) liveness(w http.ResponseWriter, r *http.Request) {
	body, failed := h.runProbes(r.Context())
	w.Header().Set("Content-Type", "application/json")
	if failed {
		w.WriteHeader(http.StatusInternalServerError)
	}
	_, _ = w.Write(body)
}

func (h *healthServer) runProbes(ctx context.Context) ([]byte, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.clock.Now()
	if h.cached != nil && now.Sub(h.cachedAt) < probeCacheTTL {
		return h.cached, h.failed
	}
	results := map[string]any{}
	failed := false
	for _, p := range h.probes {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		v, err := p.fn(pctx)
		cancel()
		if err != nil {
			failed = true
			results[p.id] = map[string]string{"error": err.Error()}
			h.log.Warn("liveness probe failed", zap.String("probe", p.id), zap.Error(err))
			continue
		}
		results[p.id] = v
	}
	body, err := json.Marshal(results)
	if err != nil {
		body, failed = []byte(`{"error":"probe results are not JSON"}`), true
	}
	h.cached, h.cachedAt, h.failed = body, now, failed
	return body, failed
}
