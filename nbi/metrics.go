package nbi

import (
	"errors"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the NBI's Prometheus series. route is the ServeMux pattern's path ("unmatched" for 404/405
// on unknown routes), never a concrete id, and method is one of a fixed set, so callers cannot grow the
// label space.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// auth counts authenticated requests by the authenticator that recognised the token ("none": no
	// token, or none recognised it) and outcome (allowed, unauthenticated, forbidden, rate_limited,
	// unavailable).
	auth *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "o2ims_nbi_requests_total",
			Help: "Requests answered by the O2IMS northbound API, by route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "o2ims_nbi_request_duration_seconds",
			Help:    "Time to answer a request of the O2IMS northbound API, by route pattern and method.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route", "method"}),
		auth: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "o2ims_nbi_auth_requests_total",
			Help: "Requests authenticated by the O2IMS northbound API, by authenticator and outcome.",
		}, []string{"authenticator", "outcome"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.requests, err = register(reg, m.requests); err != nil {
		return nil, err
	}
	if m.duration, err = register(reg, m.duration); err != nil {
		return nil, err
	}
	if m.auth, err = register(reg, m.auth); err != nil {
		return nil, err
	}
	return m, nil
}

// register adopts an identical collector already registered (a second Server on the same registry).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, err
	}
	return c, nil
}

// methodLabel keeps the method label to the methods HTTP defines.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete,
		http.MethodPatch, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "OTHER"
}
