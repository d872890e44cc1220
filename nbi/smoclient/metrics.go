package smoclient

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the SMO client's series: the token requests (one while a token lives, however many
// notifications it carries) and the registration with the SMO.
type Metrics struct {
	tokens        *prometheus.CounterVec
	registrations *prometheus.CounterVec
	registered    prometheus.Gauge
}

// tokenOutcomes and registrationOutcomes are every label value, present from the start at zero.
var (
	tokenOutcomes        = []string{"issued", "refused", "unreachable", "unreadable_secret"}
	registrationOutcomes = []string{"accepted", "refused", "failed"}
)

func newMetrics() *Metrics {
	return &Metrics{
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "o2ims_smo_token_requests_total",
			Help: "Access token requests to the SMO's authorization server (client-credentials grant), per outcome."}, []string{"outcome"}),
		registrations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "o2ims_smo_registration_attempts_total",
			Help: "OCloud Available Notifications POSTed to SMO_REGISTRATION_URL, per outcome (accepted: 2xx)."}, []string{"outcome"}),
		registered: prometheus.NewGauge(prometheus.GaugeOpts{Name: "o2ims_smo_registered",
			Help: "1 once the SMO accepted the OCloud Available Notification of the current identity and IMS_EP (leader only)."}),
	}
}

func (m *Metrics) register(reg prometheus.Registerer) error {
	for _, o := range tokenOutcomes {
		m.tokens.WithLabelValues(o)
	}
	for _, o := range registrationOutcomes {
		m.registrations.WithLabelValues(o)
	}
	for _, c := range []prometheus.Collector{m.tokens, m.registrations, m.registered} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

func (m *Metrics) tokenRequest(outcome string) { m.tokens.WithLabelValues(outcome).Inc() }

// TokenRequests is the counter of token requests with outcome (tests, make bench).
func (m *Metrics) TokenRequests(outcome string) prometheus.Counter {
	return m.tokens.WithLabelValues(outcome)
}

// RegistrationAttempts is the counter of registration attempts with outcome.
func (m *Metrics) RegistrationAttempts(outcome string) prometheus.Counter {
	return m.registrations.WithLabelValues(outcome)
}

// Registered is the registration gauge.
func (m *Metrics) Registered() prometheus.Gauge { return m.registered }
