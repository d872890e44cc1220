package smoclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"
	"k8s.io/utils/clock"

	"github.com/o2ims-operator/o2ims-operator/internal/backoff"
	"github.com/o2ims-operator/o2ims-operator/internal/netcause"
)

// Identity is the OCloud Available Notification's body (O2IMS clause 3.6.5.1.2, table 3.6.5.1.2-1; the
// member names as oran-o2ims sends them, internal/controllers/utils/types.go AvailableNotification).
type Identity struct {
	GlobalCloudID string `json:"globalCloudId"` // as the SMO assigned it at genesis
	OCloudID      string `json:"oCloudId"`
	IMSEndpoint   string `json:"IMS_EP"` // the apiRoot of the O-Cloud's APIs
}

// RegistrationConfig says where and when to register. Zero durations take the defaults.
type RegistrationConfig struct {
	URL      string          // SMO_REGISTRATION_URL: the oCloudAvailableEventNotification callback the SMO gave
	Identity func() Identity // read at each check: a change is registered again
	// Ready says the O-Cloud can serve (caches synced, the NBI listening): nothing is sent before.
	Ready       func() bool
	Timeout     time.Duration // per POST (default 10 s)
	BackoffBase time.Duration // first retry delay (default 1 s), doubled per failure …
	BackoffCap  time.Duration // … up to this (default 5 min), each drawn from [d/2, d]
	Recheck     time.Duration // how often readiness and the identity are read again (default 5 s)
	Clock       clock.WithTicker
}

// Registrar registers the O-Cloud with the SMO (O2IMS clause 3.6.5, the Genesis procedure's end): once
// it can serve, it POSTs the OCloud Available Notification until the SMO answers 2xx, with backoff, and
// again when the identity or IMS_EP changes. A runnable of the leader: each new leader announces the
// O-Cloud once (the SMO learns it is back). The SMO being away never stops the operator nor fails its
// readiness: it is a metric and a degraded line (Degraded).
type Registrar struct {
	cfg     RegistrationConfig
	client  *http.Client
	metrics *Metrics
	retry   backoff.Exponential
	log     *zap.Logger

	mu         sync.Mutex
	running    bool
	registered *Identity // what the SMO accepted in this term
	failures   int
	lastErr    string
}

// Registrar builds the registrar sending with c's credentials.
func (c *Client) Registrar(cfg RegistrationConfig, log *zap.Logger) *Registrar {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.Timeout, 10*time.Second)
	def(&cfg.BackoffBase, time.Second)
	def(&cfg.BackoffCap, 5*time.Minute)
	def(&cfg.Recheck, 5*time.Second)
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Registrar{cfg: cfg, client: c.HTTPClient(cfg.Timeout), metrics: c.metrics, log: log,
		retry: backoff.Exponential{Base: cfg.BackoffBase * 3 / 4, Max: cfg.BackoffCap * 3 / 4, Jitter: 2.0 / 3}}
}

// NeedLeaderElection: only the leader registers.
func (r *Registrar) NeedLeaderElection() bool { return true }

// Start registers until ctx ends (leadership lost, the operator stopping); it returns nil.
func (r *Registrar) Start(ctx context.Context) error {
	r.mu.Lock()
	r.running, r.registered, r.failures, r.lastErr = true, nil, 0, ""
	r.mu.Unlock()
	r.metrics.registered.Set(0)
	defer func() {
		r.mu.Lock()
		r.running = false
		r.mu.Unlock()
		r.metrics.registered.Set(0) // another replica leads now, or none
	}()
	for {
		wait := r.cfg.Recheck
		if r.cfg.Ready() {
			if id := r.cfg.Identity(); !r.isRegistered(id) {
				if failures := r.attempt(ctx, id); failures > 0 {
					wait = r.retry.Delay(failures - 1)
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.cfg.Clock.After(wait):
		}
	}
}

func (r *Registrar) isRegistered(id Identity) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.registered != nil && *r.registered == id
}

// attempt POSTs once and records the outcome; it answers the failures in a row (0: registered).
func (r *Registrar) attempt(ctx context.Context, id Identity) int {
	outcome, err := r.post(ctx, id)
	if ctx.Err() != nil {
		return 0
	}
	r.metrics.registrations.WithLabelValues(outcome).Inc()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		r.registered, r.failures, r.lastErr = &id, 0, ""
		r.metrics.registered.Set(1)
		r.log.Info("registered with the SMO (OCloud Available Notification accepted)",
			zap.String("oCloudId", id.OCloudID), zap.String("globalCloudId", id.GlobalCloudID))
		return 0
	}
	r.registered = nil
	r.metrics.registered.Set(0)
	if r.failures == 0 || err.Error() != r.lastErr {
		r.log.Warn("the SMO has not accepted the OCloud Available Notification; retrying with backoff", zap.String("why", err.Error()))
	}
	r.failures++
	r.lastErr = err.Error()
	return r.failures
}

// post sends the notification: outcome "accepted" (2xx), "refused" (another answer) or "failed" (none).
// The error words why without the SMO's address.
func (r *Registrar) post(ctx context.Context, id Identity) (string, error) {
	body, _ := json.Marshal(id) // strings only: cannot fail
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return "failed", errors.New("SMO_REGISTRATION_URL is not a URL")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		var te *TokenError
		if errors.As(err, &te) {
			return "failed", te
		}
		if errors.Is(err, errPlainHTTP) {
			return "failed", errPlainHTTP
		}
		return "failed", fmt.Errorf("the SMO could not be reached: %s", netcause.Of(err))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "refused", fmt.Errorf("the SMO answered %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	return "accepted", nil
}

// Degraded is the /readyz line while the SMO has not accepted the notification after an attempt (""
// otherwise, and on a replica that does not lead).
func (r *Registrar) Degraded() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.running || r.lastErr == "" {
		return ""
	}
	return "not registered with the SMO yet (SMO_REGISTRATION_URL): " + strconv.Itoa(r.failures) +
		" attempt(s), the last: " + r.lastErr + "; retrying with backoff"
}
