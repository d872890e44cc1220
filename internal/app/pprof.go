package app

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"go.uber.org/zap"
)

// startPprof serves Go's profiles (/debug/pprof/: heap, goroutine, profile…) on addr, a listener of its
// own and off by default (--debug-pprof): profiles show the process's internals, so it is meant for a
// loopback or port-forwarded address while measuring, never for the NBI's or the metrics' port.
func startPprof(addr string, log *zap.Logger) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("--debug-pprof: cannot listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	// No WriteTimeout: a CPU profile or trace streams for the seconds asked (net/http/pprof refuses any
	// longer than a WriteTimeout). Idle connections are closed as on the other listeners.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("the pprof listener stopped", zap.Error(err))
		}
	}()
	log.Info("serving Go profiles (--debug-pprof)", zap.String("address", ln.Addr().String()))
	return ln.Addr().String(), nil
}
