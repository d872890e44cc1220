package nbi

import (
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// What the external tests (package nbi_test, which serve the provisioning API) read inside a Server.

// ReviewTTL is how long a successful review is kept.
const ReviewTTL = reviewTTL

// Listener is the TCP listener beneath the server (nil before Start).
func (s *Server) Listener() net.Listener {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ln
}

// DurationMetric is the request-duration histogram.
func (s *Server) DurationMetric() *prometheus.HistogramVec { return s.metrics.duration }

// SetAuthNow moves the review caches' clock.
func (s *Server) SetAuthNow(now func() time.Time) {
	s.auth.mu.Lock()
	s.auth.now = now
	s.auth.mu.Unlock()
}

// KeyFetches is how many times the OAuth issuer's keys were fetched (discovery included).
func (s *Server) KeyFetches() int {
	s.keys.mu.Lock()
	defer s.keys.mu.Unlock()
	return s.keys.fetches
}

// AuthMetric is the authentication counter.
func (s *Server) AuthMetric() *prometheus.CounterVec { return s.metrics.auth }
