package netbox

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"k8s.io/utils/clock"

	"github.com/o2ims-operator/o2ims-operator/internal/backoff"
	"github.com/o2ims-operator/o2ims-operator/internal/bearer"
)

// go-netbox's request builders know neither cf_* filters nor If-Match nor
// changelog_message. Instead of forking it, each call puts what it needs into
// the request context and the RoundTripper chain below applies it:
//
//	fenceTransport    writes: Config.WriteFence, asked before anything is sent
//	requestTransport  query filters, If-Match, changelog_message, fixed headers
//	retryTransport    GET only: transport error / 429 / 5xx, capped backoff
//	attemptTransport  per-attempt timeout, token header, metrics
//	http.Transport    TLS: system roots + optional CA file

type requestOptionsKey struct{}

// requestOptions travel in the request context from a client call to the transport.
type requestOptions struct {
	op        string     // metric label: status, list_custom_fields, list_devices, get_device, patch_device
	query     url.Values // extra query parameters (cf_* filters)
	ifMatch   string     // ETag echoed verbatim
	changelog string     // changelog_message added to a JSON body
}

func withRequestOptions(ctx context.Context, o requestOptions) context.Context {
	return context.WithValue(ctx, requestOptionsKey{}, &o)
}

func requestOptionsFrom(ctx context.Context) *requestOptions {
	o, _ := ctx.Value(requestOptionsKey{}).(*requestOptions)
	if o == nil {
		return &requestOptions{op: "other"}
	}
	return o
}

// errRedirectRefused: a redirect would resend the token to a place nobody
// configured (and NetBox's API does not redirect on valid URLs).
var errRedirectRefused = errors.New("NetBox answered with a redirect, which is refused (check NETBOX_URL)")

type requestTransport struct{ next http.RoundTripper }

func (t *requestTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	o := requestOptionsFrom(req.Context())
	r := req.Clone(req.Context())
	// Labels (status, type…) are localised; go-netbox decodes them as strict enums.
	r.Header.Set("Accept-Language", "en-US")
	r.Header.Set("Accept", "application/json")
	r.Header.Del("Authorization") // set per attempt from the token file
	if len(o.query) > 0 {
		q := r.URL.Query()
		for k, vs := range o.query {
			for _, v := range vs {
				q.Add(k, v)
			}
		}
		r.URL.RawQuery = q.Encode()
	}
	if o.ifMatch != "" {
		r.Header.Set("If-Match", o.ifMatch)
	}
	if o.changelog != "" && r.Body != nil {
		if err := addChangelog(r, o.changelog); err != nil {
			return nil, err
		}
	}
	return t.next.RoundTrip(r)
}

// fenceTransport keeps a write unsent when Config.WriteFence refuses it (a replica that does not lead).
type fenceTransport struct {
	fence func() error
	next  http.RoundTripper
}

func (t *fenceTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		if err := t.fence(); err != nil {
			if req.Body != nil {
				_ = req.Body.Close()
			}
			return nil, &Error{Kind: KindFenced, Op: requestOptionsFrom(req.Context()).op, Err: err}
		}
	}
	return t.next.RoundTrip(req)
}

// addChangelog adds "changelog_message" to the JSON object in r's body.
func addChangelog(r *http.Request, msg string) error {
	raw, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	if err != nil {
		return err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return fmt.Errorf("changelog_message needs a JSON object body: %w", err)
	}
	m, _ := json.Marshal(msg)
	obj["changelog_message"] = m
	body, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return nil
}

// retryPolicy bounds GET retries.
type retryPolicy struct {
	attempts int           // total attempts, ≥ 1
	base     time.Duration // first backoff
	max      time.Duration // backoff cap (also caps Retry-After)
}

func defaultRetryPolicy() retryPolicy {
	return retryPolicy{attempts: 4, base: 250 * time.Millisecond, max: 4 * time.Second}
}

// backoff is the wait after attempt (1 = the first): doubling from base, capped, with ±10% jitter so
// that many reconcilers do not retry in lockstep.
func (p retryPolicy) backoff(attempt int) time.Duration {
	return backoff.Exponential{Base: p.base, Max: p.max, Jitter: 0.2}.Delay(attempt - 1)
}

type retryTransport struct {
	next   http.RoundTripper
	policy *retryPolicy
	clock  clock.Clock // the waits between attempts
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	// Writes are never retried: a PATCH whose answer was lost may have landed.
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		return t.next.RoundTrip(req)
	}
	ctx := req.Context()
	for attempt := 1; ; attempt++ {
		resp, err := t.next.RoundTrip(req)
		if attempt >= t.policy.attempts || ctx.Err() != nil {
			return resp, err
		}
		var wait time.Duration
		switch {
		case err != nil:
			if !retryableTransportErr(err) {
				return resp, err
			}
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
			wait = retryAfter(resp)
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			_ = resp.Body.Close()
		default:
			return resp, nil
		}
		d := t.policy.backoff(attempt)
		if wait > d {
			d = min(wait, t.policy.max)
		}
		timer := t.clock.NewTimer(d)
		select {
		case <-timer.C():
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		}
	}
}

func retryAfter(resp *http.Response) time.Duration {
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}

func retryableTransportErr(err error) bool {
	var e *Error
	if errors.As(err, &e) { // token file problem: retrying does not help
		return false
	}
	return !tlsVerificationErr(err)
}

func tlsVerificationErr(err error) bool {
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		verify   *tls.CertificateVerificationError
		record   tls.RecordHeaderError
	)
	return errors.As(err, &unknown) || errors.As(err, &hostname) || errors.As(err, &invalid) ||
		errors.As(err, &verify) || errors.As(err, &record)
}

// attemptTimeoutError: one HTTP attempt got no answer within Config.Timeout.
type attemptTimeoutError struct{ timeout time.Duration }

func (e *attemptTimeoutError) Error() string {
	return fmt.Sprintf("no answer within %s", e.timeout)
}

type attemptTransport struct {
	next    http.RoundTripper
	timeout time.Duration
	tokens  *tokenSource
	metrics *metrics
}

func (t *attemptTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, err := t.tokens.token()
	if err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, err
	}
	parent := req.Context()
	ctx, cancel := context.WithTimeout(parent, t.timeout)
	r := req.Clone(ctx)
	r.Header.Set("Authorization", authorization(tok))

	op := requestOptionsFrom(parent).op
	start := time.Now()
	resp, err := t.next.RoundTrip(r)
	t.metrics.duration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if err != nil {
		cancel()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && parent.Err() == nil {
			err = &attemptTimeoutError{timeout: t.timeout}
			t.metrics.apiError("timeout")
			t.metrics.reached(false, err.Error())
		} else if parent.Err() == nil {
			t.metrics.apiError("transport")
			t.metrics.reached(false, transportCause(err))
		}
		return nil, err
	}
	if label := statusLabel(resp.StatusCode); label != "" {
		t.metrics.apiError(label)
	}
	t.metrics.reached(resp.StatusCode < 500, fmt.Sprintf("HTTP %d", resp.StatusCode))
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		t.tokens.refused()
	}
	// The attempt's deadline must also cover reading the body.
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// statusLabel is the sanitized metric label of an HTTP status ("" = no error).
func statusLabel(code int) string {
	switch {
	case code < 400:
		return ""
	case code == 401, code == 403, code == 404, code == 412, code == 429:
		return strconv.Itoa(code)
	case code >= 500:
		return "5xx"
	}
	return "4xx"
}

// newHTTPClient builds the client go-netbox uses.
func newHTTPClient(cfg Config, tokens *tokenSource, m *metrics, policy *retryPolicy) (*http.Client, error) {
	tlsCfg, err := tlsConfig(cfg.CAFile)
	if err != nil {
		return nil, err
	}
	base := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       tlsCfg,
		TLSHandshakeTimeout:   cfg.Timeout,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          20,
		MaxIdleConnsPerHost:   10,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	var chain http.RoundTripper = &requestTransport{next: &retryTransport{
		policy: policy,
		next:   &attemptTransport{next: base, timeout: cfg.Timeout, tokens: tokens, metrics: m},
		clock:  clock.RealClock{},
	}}
	if cfg.WriteFence != nil {
		chain = &fenceTransport{fence: cfg.WriteFence, next: chain}
	}
	return &http.Client{Transport: chain, CheckRedirect: bearer.RefuseRedirects(errRedirectRefused)}, nil
}

// tlsConfig: system roots plus an optional PEM bundle, TLS ≥ 1.2.
func tlsConfig(caFile string) (*tls.Config, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, configErr("%s cannot be read", EnvCAFile)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, configErr("%s holds no PEM certificate", EnvCAFile)
		}
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}, nil
}
