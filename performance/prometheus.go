package performance

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/o2ims-operator/o2ims-operator/internal/bearer"
)

// The Prometheus the measurement jobs are evaluated against, read with the official client
// (github.com/prometheus/client_golang/api), configured as the NetBox client is: a CA file for its TLS, a
// token file re-read when rotated (a ServiceAccount token for a Prometheus behind kube-rbac-proxy, or
// Thanos/Cortex's bearer), a timeout per query, no redirects followed.
const (
	EnvPrometheusURL       = "PROMETHEUS_URL"
	EnvPrometheusCAFile    = "PROMETHEUS_CA_FILE"
	EnvPrometheusTokenFile = "PROMETHEUS_TOKEN_FILE"
	EnvPrometheusTimeout   = "PROMETHEUS_TIMEOUT"
	defaultQueryTimeout    = 10 * time.Second
	maxTokenBytes          = 16 << 10
)

// PrometheusConfig is where Prometheus is and how to reach it ("" URL: the performance API is not served).
type PrometheusConfig struct {
	URL       string
	CAFile    string
	TokenFile string
	Timeout   time.Duration
}

// PrometheusConfigFromEnv reads PROMETHEUS_*: an http(s) URL without credentials in it; a token only over
// https or to a loopback host (it would travel in the clear otherwise).
func PrometheusConfigFromEnv(getenv func(string) string) (PrometheusConfig, error) {
	c := PrometheusConfig{URL: getenv(EnvPrometheusURL), CAFile: getenv(EnvPrometheusCAFile),
		TokenFile: getenv(EnvPrometheusTokenFile), Timeout: defaultQueryTimeout}
	if c.URL == "" {
		return c, nil
	}
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return PrometheusConfig{}, fmt.Errorf("%s: want http(s)://host[:port][/path], without credentials", EnvPrometheusURL)
	}
	if c.TokenFile != "" && u.Scheme != "https" && !isLoopback(u.Hostname()) {
		return PrometheusConfig{}, fmt.Errorf("%s: a token is sent only over https (or to loopback)", EnvPrometheusTokenFile)
	}
	if raw := getenv(EnvPrometheusTimeout); raw != "" {
		s, err := strconv.Atoi(raw)
		if err != nil || s < 1 || s > 300 {
			return PrometheusConfig{}, fmt.Errorf("%s=%q: want seconds from 1 to 300", EnvPrometheusTimeout, raw)
		}
		c.Timeout = time.Duration(s) * time.Second
	}
	return c, nil
}

func isLoopback(host string) bool { return host == "localhost" || host == "127.0.0.1" || host == "::1" }

var errRedirect = errors.New("a redirect from Prometheus is not followed (check " + EnvPrometheusURL + ")")

// NewPrometheus is the query API of the Prometheus c names; the CA and token files are read now (a
// configuration error stops the operator at start, as NetBox's do).
func NewPrometheus(c PrometheusConfig) (promv1.API, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%s cannot be read: %w", EnvPrometheusCAFile, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s holds no PEM certificate", EnvPrometheusCAFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	var rt http.RoundTripper = tr
	if c.TokenFile != "" {
		f := bearer.NewFile(c.TokenFile, maxTokenBytes)
		if _, err := f.Read(); err != nil {
			return nil, fmt.Errorf("%s: %s", EnvPrometheusTokenFile, bearer.Describe(c.TokenFile, err))
		}
		rt = tokenTransport{next: tr, file: f}
	}
	client, err := api.NewClient(api.Config{Address: c.URL, Client: &http.Client{
		Transport: rt, Timeout: c.Timeout, CheckRedirect: bearer.RefuseRedirects(errRedirect),
	}})
	if err != nil {
		return nil, err
	}
	return promv1.NewAPI(client), nil
}

// tokenTransport sends the token file's current token.
type tokenTransport struct {
	next http.RoundTripper
	file *bearer.File
}

func (t tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	tok, err := t.file.Token()
	if err != nil {
		return nil, fmt.Errorf("%s: %s", EnvPrometheusTokenFile, bearer.Describe(t.file.Path(), err))
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	resp, err := t.next.RoundTrip(r)
	if err == nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
		t.file.Forget() // re-read at the next query: it may have rotated
	}
	return resp, err
}
