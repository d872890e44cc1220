package netbox

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are plain counters (no pool scans). Labels are bounded sets: never
// device names, URLs or NetBox texts.
type metrics struct {
	attempts    *prometheus.CounterVec   // result: success, race, error
	apiErrors   *prometheus.CounterVec   // type: 401, 403, 404, 412, 429, 4xx, 5xx, timeout, transport, protocol
	quarantines *prometheus.CounterVec   // reason: QuarantineReason
	duration    *prometheus.HistogramVec // operation: status, list_custom_fields, list_devices, get_device, patch_device
	up          *reachability            // o2ims_netbox_up
	avail       *availability            // o2ims_netbox_usable
}

// Label values used by the client.
const (
	resultSuccess = "success"
	resultRace    = "race"
	resultError   = "error"
)

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "o2ims_netbox_assignment_attempts_total",
			Help: "NetBox host claims attempted (conditional PATCH), by result: success, race (another owner won), error.",
		}, []string{"result"}),
		apiErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "o2ims_netbox_api_errors_total",
			Help: "Failed NetBox API attempts by sanitized type: HTTP status class, timeout, transport or protocol.",
		}, []string{"type"}),
		quarantines: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "o2ims_netbox_quarantines_total",
			Help: "Devices set to status failed because of deterministic credential or BMC data problems, by reason.",
		}, []string{"reason"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "o2ims_netbox_request_duration_seconds",
			Help:    "Duration of NetBox HTTP attempts by operation.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"operation"}),
		up: newReachability(),
	}
	m.avail = newAvailability(m.up)
	if reg != nil {
		var err error
		if m.attempts, err = register(reg, m.attempts); err != nil {
			return nil, err
		}
		if m.apiErrors, err = register(reg, m.apiErrors); err != nil {
			return nil, err
		}
		if m.quarantines, err = register(reg, m.quarantines); err != nil {
			return nil, err
		}
		if m.duration, err = register(reg, m.duration); err != nil {
			return nil, err
		}
		if m.up, err = register(reg, m.up); err != nil {
			return nil, err
		}
		m.avail = newAvailability(m.up) // the registered reachability (a second client shares the first's)
		if m.avail, err = register(reg, m.avail); err != nil {
			return nil, err
		}
	}
	// Expose the known series at zero so that rate() and alerts work from start.
	for _, r := range []string{resultSuccess, resultRace, resultError} {
		m.attempts.WithLabelValues(r)
	}
	for _, t := range []string{"401", "403", "404", "412", "429", "4xx", "5xx", "timeout", "transport", "protocol"} {
		m.apiErrors.WithLabelValues(t)
	}
	for _, r := range allQuarantineReasons {
		m.quarantines.WithLabelValues(string(r))
	}
	return m, nil
}

// register tolerates a second client on the same registry by reusing the collector.
func register[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(T); ok {
				return existing, nil
			}
		}
		return c, configErr("cannot register NetBox metrics: %v", err)
	}
	return c, nil
}

func (m *metrics) apiError(label string) { m.apiErrors.WithLabelValues(label).Inc() }

// reached records whether an attempt got an answer from a working NetBox, and if not, why in a few words.
func (m *metrics) reached(ok bool, cause string) { m.up.observe(ok, cause) }

func (m *metrics) attempt(result string) { m.attempts.WithLabelValues(result).Inc() }
func (m *metrics) quarantine(r QuarantineReason) {
	m.quarantines.WithLabelValues(string(r)).Inc()
}
