package nbi

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"k8s.io/client-go/kubernetes"
)

// OAuthConfig is the OAuth authenticator's configuration (OAUTH_* variables).
type OAuthConfig struct {
	IssuerURL     string        // OAUTH_ISSUER_URL: discovery (OpenID Connect, else RFC 8414) and iss
	Audience      string        // OAUTH_AUDIENCE: a token's aud must hold it
	UsernameClaim string        // OAUTH_USERNAME_CLAIM, default sub
	GroupsClaim   string        // OAUTH_GROUPS_CLAIM, default groups
	CertBound     bool          // OAUTH_CERT_BOUND: every token bound to the client certificate (RFC 8705)
	CAFile        string        // OAUTH_CA_FILE: the CAs the issuer's TLS certificate is checked with
	Algorithms    []string      // OAUTH_SIGNING_ALGS, default DefaultSigningAlgorithms (never HMAC)
	JWKSRefresh   time.Duration // OAUTH_JWKS_REFRESH seconds, default 300
	// MinKeyRefresh is the least time between two fetches of the keys for an unknown kid (default 10 s;
	// not from the environment).
	MinKeyRefresh time.Duration
}

func (o OAuthConfig) withDefaults(d OAuthConfig) OAuthConfig {
	if o.UsernameClaim == "" {
		o.UsernameClaim = d.UsernameClaim
	}
	if o.GroupsClaim == "" {
		o.GroupsClaim = d.GroupsClaim
	}
	if len(o.Algorithms) == 0 {
		o.Algorithms = d.Algorithms
	}
	if o.JWKSRefresh == 0 {
		o.JWKSRefresh = d.JWKSRefresh
	}
	if o.MinKeyRefresh == 0 {
		o.MinKeyRefresh = 10 * time.Second
	}
	return o
}

// list splits a comma list, dropping empty items (nil for none).
func list(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// authFromEnv reads NBI_AUTH's companions: the rate limit and the OAUTH_* variables.
func (c *Config) authFromEnv(get func(string) string) error {
	var err error
	if v := get("NBI_AUTH_RATE"); v != "" {
		if c.AuthRate, err = strconv.ParseFloat(v, 64); err != nil || c.AuthRate < 0 {
			return fmt.Errorf("NBI_AUTH_RATE=%q: want a number of attempts per second (0: no limit)", v)
		}
	}
	if v := get("NBI_AUTH_BURST"); v != "" {
		if c.AuthBurst, err = strconv.Atoi(v); err != nil || c.AuthBurst < 1 {
			return fmt.Errorf("NBI_AUTH_BURST=%q: want a positive integer", v)
		}
	}
	o := &c.OAuth
	o.IssuerURL, o.Audience, o.CAFile = get("OAUTH_ISSUER_URL"), get("OAUTH_AUDIENCE"), get("OAUTH_CA_FILE")
	if v := get("OAUTH_USERNAME_CLAIM"); v != "" {
		o.UsernameClaim = v
	}
	if v := get("OAUTH_GROUPS_CLAIM"); v != "" {
		o.GroupsClaim = v
	}
	if v := list(get("OAUTH_SIGNING_ALGS")); v != nil {
		o.Algorithms = v
	}
	if v := get("OAUTH_CERT_BOUND"); v != "" {
		if o.CertBound, err = strconv.ParseBool(v); err != nil {
			return fmt.Errorf("OAUTH_CERT_BOUND=%q: want true or false", v)
		}
	}
	o.JWKSRefresh, err = seconds(get, "OAUTH_JWKS_REFRESH", o.JWKSRefresh)
	return err
}

// authModes are NBI_AUTH's authenticators in order (nil: none).
func (c Config) authModes() []string {
	var out []string
	for _, m := range list(strings.ToLower(c.Auth)) {
		if m != AuthNone {
			out = append(out, m)
		}
	}
	return out
}

func (c Config) validateAuth() error {
	modes := c.authModes()
	for _, m := range modes {
		if m != AuthKubernetes && m != AuthOAuth {
			return fmt.Errorf("NBI_AUTH=%q: want %q, or a comma list of %q and %q", c.Auth, AuthNone, AuthKubernetes, AuthOAuth)
		}
	}
	if slices.Contains(list(strings.ToLower(c.Auth)), AuthNone) && len(modes) > 0 {
		return fmt.Errorf("NBI_AUTH=%q: %q cannot be combined with an authenticator", c.Auth, AuthNone)
	}
	if c.AuthRate < 0 {
		return fmt.Errorf("NBI_AUTH_RATE=%v: want a non-negative number", c.AuthRate)
	}
	if c.OAuth.CertBound && c.ClientCAFile == "" {
		return fmt.Errorf("OAUTH_CERT_BOUND=true needs NBI_TLS_CLIENT_CA_FILE: a token can only be bound to a verified client certificate")
	}
	if !slices.Contains(modes, AuthOAuth) {
		return nil
	}
	return c.OAuth.validate()
}

func (o OAuthConfig) validate() error {
	u, err := url.Parse(o.IssuerURL)
	if o.IssuerURL == "" || err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("OAUTH_ISSUER_URL=%q: NBI_AUTH=oauth needs the issuer's https URL", o.IssuerURL)
	}
	// Keys fetched in clear could be swapped on the way: plain http only to this host (tests, a sidecar).
	if ip := net.ParseIP(u.Hostname()); u.Scheme == "http" && u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("OAUTH_ISSUER_URL=%q: want https (plain http only on loopback)", o.IssuerURL)
	}
	if o.Audience == "" {
		return fmt.Errorf("OAUTH_AUDIENCE is empty: NBI_AUTH=oauth needs the audience tokens must be issued for")
	}
	if o.UsernameClaim == "" || o.GroupsClaim == "" {
		return fmt.Errorf("OAUTH_USERNAME_CLAIM and OAUTH_GROUPS_CLAIM must not be empty")
	}
	for _, a := range o.Algorithms {
		if !slices.Contains(DefaultSigningAlgorithms, a) {
			return fmt.Errorf("OAUTH_SIGNING_ALGS: %q is not allowed: want asymmetric algorithms among %s",
				a, strings.Join(DefaultSigningAlgorithms, ","))
		}
	}
	return nil
}

// newAuth builds the authenticators NBI_AUTH lists, in its order.
func (s *Server) newAuth(kube kubernetes.Interface) error {
	cfg := s.cfg
	if kube == nil {
		return errors.New("NBI_AUTH=" + cfg.Auth + " needs a Kubernetes client for SubjectAccessReviews (and TokenReviews)")
	}
	a := newAuthenticator(kube, cfg.APITimeout, s.log, s.metrics)
	a.certBound = cfg.OAuth.CertBound
	a.limiter = newAddrLimiter(cfg.AuthRate, cfg.AuthBurst)
	for _, m := range cfg.authModes() {
		switch m {
		case AuthKubernetes:
			a.methods = append(a.methods, &kubeAuthenticator{kube: kube, timeout: cfg.APITimeout, audiences: cfg.TokenAudiences})
		case AuthOAuth:
			client, err := issuerClient(cfg.OAuth.CAFile)
			if err != nil {
				return err
			}
			s.keys = newKeySet(cfg.OAuth.IssuerURL, client, cfg.OAuth.MinKeyRefresh, s.log.Named("oauth"))
			algs := make([]jose.SignatureAlgorithm, len(cfg.OAuth.Algorithms))
			for i, alg := range cfg.OAuth.Algorithms {
				algs[i] = jose.SignatureAlgorithm(alg)
			}
			a.methods = append(a.methods, &oauthAuthenticator{keys: s.keys, audience: cfg.OAuth.Audience,
				usernameClaim: cfg.OAuth.UsernameClaim, groupsClaim: cfg.OAuth.GroupsClaim, algorithms: algs, now: time.Now})
		}
	}
	s.auth = a
	return nil
}

// issuerClient is the HTTP client for the issuer's metadata and keys: its own CAs when OAUTH_CA_FILE is
// set, no proxy from the environment, bounded redirects (the default's).
func issuerClient(caFile string) (*http.Client, error) {
	tr := &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12}}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("OAUTH_CA_FILE: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("OAUTH_CA_FILE: no PEM certificate in the file")
		}
		tr.TLSClientConfig.RootCAs = pool
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}, nil
}
