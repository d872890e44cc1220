package framework

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/o2ims-operator/o2ims-operator/internal/bearer"
)

// ErrRedirectRefused is returned when the API server (or something posing as it) answers with a redirect:
// following one would send the bearer token elsewhere.
var ErrRedirectRefused = errors.New("redirect refused")

// ClientOptions size and bound the clients.
type ClientOptions struct {
	// QPS and Burst are the client-side rate limit of each API resource (--kube-api-qps/--kube-api-burst):
	// every resource the dynamic client reaches has a token bucket of its own, as with controller-runtime's
	// per-kind clients; the typed client (Events, Secrets, reviews) has one, and the leader election's
	// Lease another. QPS ≤ 0 turns the client-side limit off (the API server's priority and fairness, or
	// its max-in-flight limits, still apply).
	QPS   float32
	Burst int
	// Timeout bounds every non-watch call.
	Timeout time.Duration
	// UserAgent names the operator in the API server's logs and audit.
	UserAgent string
}

// DefaultQPS and DefaultBurst are the shipped client-side limits of each resource. They are a cap against
// a runaway loop, not the pace of normal work: the workers bound how many calls are in flight, and the API
// server protects itself with priority and fairness (or its max-in-flight limits), answering 429 with
// Retry-After, which client-go waits out and retries. With 4 ProvisioningRequest writes per fulfilled
// request, a burst of 1 000 requests needs 4 000 tokens of one bucket, which 2 000 of burst and 1 000/s
// refill hand out within 2 s, so the API server, not this client, sets the pace. (client-go's own default
// is 5/10 per client; controller-runtime's config has no client-side limit since v0.21.)
const (
	DefaultQPS   = 1000
	DefaultBurst = 2000
)

// DefaultClientOptions are the shipped limits.
func DefaultClientOptions() ClientOptions {
	return ClientOptions{QPS: DefaultQPS, Burst: DefaultBurst, Timeout: 30 * time.Second, UserAgent: "o2ims-operator"}
}

// Clients are the API clients of one operator process.
type Clients struct {
	// Config is the base config (rotating token, refused redirects, rate limits, bounded calls).
	Config *rest.Config
	// Dynamic is for handler reads and writes: every call bounded by the timeout.
	Dynamic dynamic.Interface
	// Kubernetes is the typed client (events, leases, secrets, reviews), bounded too.
	Kubernetes kubernetes.Interface
	// lease is the leader election's client: the one that never passes through fence.
	lease kubernetes.Interface
	// fence refuses every other client's writes once the operator may no longer write (writefence.go).
	fence *writeFence
	// watch is for informers: no overall timeout (watches are long), same token and redirect rules.
	watch dynamic.Interface
}

// LoadConfig finds the cluster: an explicit kubeconfig, else in-cluster, else the default kubeconfig rules.
// The Python image's KUBERNETES_CA_FILE and UNSAFE_SKIP_TLS_VERIFY are honoured (both at once is an error).
func LoadConfig(kubeconfig string, getenv func(string) string) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	switch {
	case kubeconfig != "":
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	default:
		cfg, err = rest.InClusterConfig()
		if errors.Is(err, rest.ErrNotInCluster) {
			rules := clientcmd.NewDefaultClientConfigLoadingRules()
			cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("no Kubernetes client configuration: %w", err)
	}
	ca := getenv("KUBERNETES_CA_FILE")
	skip, err := pythonBool(getenv("UNSAFE_SKIP_TLS_VERIFY"))
	if err != nil {
		return nil, fmt.Errorf("UNSAFE_SKIP_TLS_VERIFY: %w", err)
	}
	if ca != "" && skip {
		return nil, errors.New("KUBERNETES_CA_FILE and UNSAFE_SKIP_TLS_VERIFY contradict each other; set one")
	}
	if ca != "" {
		// Read and checked at start: a file that is not a PEM bundle is a configuration error then, not a
		// TLS failure on every call.
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("KUBERNETES_CA_FILE: %w", err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("KUBERNETES_CA_FILE %s: no PEM certificate in it", ca)
		}
		cfg.TLSClientConfig.CAFile, cfg.TLSClientConfig.CAData = "", pem
	}
	if skip {
		cfg.TLSClientConfig.Insecure = true
		cfg.TLSClientConfig.CAFile, cfg.TLSClientConfig.CAData = "", nil
	}
	return cfg, nil
}

// pythonBool reads a boolean setting as the Python image's environment handling does: 1/true/yes/on and
// 0/false/no/off in any case, empty for false; anything else is refused rather than guessed.
func pythonBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true, nil
	case "", "0", "false", "no", "off":
		return false, nil
	}
	return false, fmt.Errorf("%q is not one of 1/true/yes/on or 0/false/no/off", v)
}

// NewClients builds the operator's clients from a base config.
func NewClients(base *rest.Config, opts ClientOptions) (*Clients, error) {
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst, cfg.RateLimiter = clientQPS(opts.QPS), opts.Burst, nil
	if opts.UserAgent != "" {
		cfg.UserAgent = opts.UserAgent
	}
	// A token file (in-cluster projected token, kubeconfig tokenFile) is re-read whenever it changes, so a
	// rotated token is used on the very next request instead of after client-go's one-minute cache.
	if cfg.BearerTokenFile != "" {
		src := bearer.NewFile(cfg.BearerTokenFile, maxTokenFileSize)
		// At start a missing or empty file is a configuration error; later it is a passing state.
		if _, err := src.Read(); err != nil {
			return nil, &ConfigError{tokenError(src, err)}
		}
		cfg.BearerToken, cfg.BearerTokenFile = "", ""
		wrapOuter(cfg, func(rt http.RoundTripper) http.RoundTripper { return &tokenTransport{src: src, next: rt} })
	}

	// Count every request at the transport by method and resource (after the token is set, before the
	// wire): what the API server receives from us, per resource.
	wrapOuter(cfg, func(rt http.RoundTripper) http.RoundTripper { return &countingTransport{next: rt} })

	// The Lease's renewals and release must reach the API server after the write fence closed: its client
	// is built before the fence is put on the others' transport.
	leaseCfg := rest.CopyConfig(cfg)
	leaseCfg.Timeout = opts.Timeout
	fence := &writeFence{}
	wrapOuter(cfg, fence.wrap)

	watchHTTP, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, &ConfigError{err}
	}
	watchHTTP.CheckRedirect = bearer.RefuseRedirects(ErrRedirectRefused)
	watchDyn, err := newPerResource(cfg, watchHTTP, codecOptions{dropManagedFields: true})
	if err != nil {
		return nil, &ConfigError{err}
	}

	bounded := rest.CopyConfig(cfg)
	bounded.Timeout = opts.Timeout
	httpClient, err := rest.HTTPClientFor(bounded)
	if err != nil {
		return nil, &ConfigError{err}
	}
	httpClient.CheckRedirect = bearer.RefuseRedirects(ErrRedirectRefused)
	dyn, err := newPerResource(bounded, httpClient, codecOptions{})
	if err != nil {
		return nil, &ConfigError{err}
	}
	typed := protobufConfig(bounded)
	cs, err := kubernetes.NewForConfigAndClient(typed, httpClient)
	if err != nil {
		return nil, &ConfigError{err}
	}
	// The Lease has a client (and so a bucket) of its own: a renewal waiting behind a burst of Events
	// past the renew deadline would cost the leadership.
	leaseHTTP, err := rest.HTTPClientFor(leaseCfg)
	if err != nil {
		return nil, &ConfigError{err}
	}
	leaseHTTP.CheckRedirect = bearer.RefuseRedirects(ErrRedirectRefused)
	lease, err := kubernetes.NewForConfigAndClient(protobufConfig(leaseCfg), leaseHTTP)
	if err != nil {
		return nil, &ConfigError{err}
	}
	return &Clients{Config: bounded, Dynamic: dyn, Kubernetes: cs, lease: lease, watch: watchDyn, fence: fence}, nil
}

// wrapOuter puts wrap around whatever transport cfg already builds (rest.Config.WrapTransport).
func wrapOuter(cfg *rest.Config, wrap func(http.RoundTripper) http.RoundTripper) {
	prev := cfg.WrapTransport
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if prev != nil {
			rt = prev(rt)
		}
		return wrap(rt)
	}
}

// maxTokenFileSize bounds the bearer token file: a projected token is a few KiB at most.
const maxTokenFileSize = 64 << 10

// errTokenUnavailable: the token file cannot be read now and no earlier token is at hand. It is not a
// ConfigError, so it classifies as a transport failure: retryable, nothing sent.
type errTokenUnavailable struct{ err error }

func (e *errTokenUnavailable) Error() string {
	return "bearer token temporarily unavailable: " + e.err.Error()
}
func (e *errTokenUnavailable) Unwrap() error { return e.err }

// Timeout and Temporary make it a net.Error: a failure to reach the server, for whoever classifies it.
func (e *errTokenUnavailable) Timeout() bool   { return false }
func (e *errTokenUnavailable) Temporary() bool { return true }

// tokenError words why the token file gave no token.
func tokenError(f *bearer.File, err error) error {
	if errors.Is(err, bearer.ErrEmpty) || errors.Is(err, bearer.ErrTooLarge) || errors.Is(err, bearer.ErrNotToken) {
		return fmt.Errorf("the bearer token file %s %w", f.Path(), err)
	}
	return fmt.Errorf("reading the bearer token file: %w", err)
}

// tokenTransport sets the token of a bearer.File (re-read when the file changes, the last good one kept
// while it is briefly unreadable) on every request.
type tokenTransport struct {
	src  *bearer.File
	next http.RoundTripper
}

func (t *tokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, err := t.src.Token()
	if err != nil {
		// No request is sent without a token: retried, as any failure to reach the server.
		return nil, &errTokenUnavailable{tokenError(t.src, err)}
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	resp, err := t.next.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		// Re-read the file next time, so one rewritten within the mtime granularity is still picked up.
		t.src.Forget()
	}
	return resp, err
}

// countingTransport feeds o2ims_rest_client_requests_by_resource_total.
type countingTransport struct{ next http.RoundTripper }

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	code := "<error>"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	restByResource.WithLabelValues(req.Method, resourceOf(req.URL.Path), code).Inc()
	return resp, err
}

// resourceOf names the resource of an API path: /api/v1/namespaces/ns/events/x → events,
// /apis/g/v/namespaces/ns/r/name/status → r/status, /apis/g/v/r → r. Names never become labels.
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return "other"
	}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		if len(parts) == 2 {
			return "namespaces"
		}
		parts = parts[2:]
	}
	switch len(parts) {
	case 0:
		return "discovery"
	case 1, 2:
		return parts[0]
	default:
		return parts[0] + "/" + parts[2]
	}
}
