// Package smoclient is the O-Cloud's one client towards the SMO: every notification (inventory and alarm
// subscriptions, the callback test, through nbi/callback's policy) and every other call to the SMO (the
// registration, registration.go) carries an OAuth 2.0 access token of the client-credentials grant
// (tokens.go, bearer.go), presents the client certificate (certificate.go) and trusts the SMO's CAs
// (trust.go), each file reloaded when it changes. The token endpoint is reached the same way (the
// certificate, the CAs). As openshift-kni/oran-o2ims does (internal/controllers/utils/oauth.go,
// e734c06a), with golang.org/x/oauth2's clientcredentials.
package smoclient

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/o2ims-operator/o2ims-operator/internal/certfile"
)

// Client is built once (New) and decorates every transport that reaches the SMO: RoundTripper for the
// callback policy's clients (callback.Outgoing), HTTPClient for the rest.
type Client struct {
	cfg     Config
	cert    *certfile.KeyPair // nil: none presented
	trust   *trust            // nil: the transport's own roots
	tokens  *tokens           // nil: no token sent
	metrics *Metrics
}

// New reads the certificate and CA files now (a missing or bad one is a start-up error naming its
// variable) and registers the metrics on reg (nil: not registered).
func New(cfg Config, reg prometheus.Registerer, log *zap.Logger) (*Client, error) {
	if log == nil {
		log = zap.NewNop()
	}
	c := &Client{cfg: cfg, metrics: newMetrics()}
	if reg != nil {
		if err := c.metrics.register(reg); err != nil {
			return nil, err
		}
	}
	var err error
	if cfg.CertFile != "" {
		if c.cert, err = certfile.NewKeyPair(cfg.CertFile, cfg.KeyFile, "SMO_TLS_CERT_FILE/SMO_TLS_KEY_FILE", "SMO client certificate", log); err != nil {
			return nil, err
		}
	}
	if len(cfg.CAFiles) > 0 {
		if c.trust, err = newTrust(cfg.CAFiles, log); err != nil {
			return nil, err
		}
	}
	if cfg.OAuth() {
		tokenClient := &http.Client{
			Transport:     c.wrap(plainTransport(tokenTimeout), false),
			Timeout:       tokenTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
		c.tokens = newTokens(cfg, tokenClient, c.metrics.tokenRequest)
	}
	return c, nil
}

// Metrics are the client's series (metrics.go).
func (c *Client) Metrics() *Metrics { return c.metrics }

// RoundTripper sends through base with the O-Cloud's credentials: base presents the certificate, trusts
// the CAs, and every request carries a token (callback.Outgoing).
func (c *Client) RoundTripper(base *http.Transport) http.RoundTripper { return c.wrap(base, true) }

func (c *Client) wrap(base *http.Transport, withToken bool) http.RoundTripper {
	if base.TLSClientConfig == nil {
		base.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if c.cert != nil {
		base.TLSClientConfig.GetClientCertificate = c.cert.GetClientCertificate
	}
	var rt http.RoundTripper = base
	if c.trust != nil {
		rt = &trusting{base: base, trust: c.trust}
	}
	if withToken && c.tokens != nil {
		rt = &bearer{next: rt, tokens: c.tokens}
	}
	return rt
}

// HTTPClient is for the calls to the SMO that are not a subscription's (the registration, at an address
// the operator's configuration gives): the credentials, no proxy, no redirect (what goes to the SMO goes
// nowhere else).
func (c *Client) HTTPClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Transport:     c.RoundTripper(plainTransport(timeout)),
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func plainTransport(timeout time.Duration) *http.Transport {
	dialer := &net.Dialer{Timeout: timeout}
	return &http.Transport{
		Proxy:               nil,
		DialContext:         func(ctx context.Context, n, a string) (net.Conn, error) { return dialer.DialContext(ctx, n, a) },
		TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 2,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: timeout,
	}
}
