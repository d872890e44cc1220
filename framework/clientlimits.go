package framework

import (
	"net/http"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// perResource is a dynamic client whose every API resource (group and resource; a subresource such as
// /status goes with its resource) is served by a REST client of its own, and so has a client-side rate
// limiter (token bucket of --kube-api-qps/--kube-api-burst) of its own, over one shared HTTP client. It is
// what controller-runtime's per-kind REST clients give a Go operator; client-go's one dynamic client
// would put every call in one bucket, so that a burst of ProvisioningRequest patches holds back the
// PackageVariant writes of the same passes.
type perResource struct {
	cfg   *rest.Config
	http  *http.Client
	codec codecOptions
	mu    sync.Mutex
	by    map[schema.GroupResource]resourceClients
	// first serves any resource if building a client ever failed (it cannot with a config that built one).
	first resourceClients
}

// resourceClients are one resource's clients: the dynamic one and the REST client under it, and its
// bucket (nil without a client-side limit).
type resourceClients struct {
	dynamic.Interface
	rest   rest.Interface
	bucket *bucket
}

var _ dynamic.Interface = (*perResource)(nil)

func newPerResource(cfg *rest.Config, httpClient *http.Client, codec codecOptions) (*perResource, error) {
	first, err := newResourceClients(cfg, httpClient, codec)
	if err != nil {
		return nil, err
	}
	return &perResource{cfg: cfg, http: httpClient, codec: codec, by: map[schema.GroupResource]resourceClients{}, first: first}, nil
}

func newResourceClients(cfg *rest.Config, h *http.Client, codec codecOptions) (resourceClients, error) {
	var b *bucket
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		// The bucket client-go would build from QPS and Burst, held here so a write may yield (yield.go).
		cfg = rest.CopyConfig(cfg)
		b = newBucket(cfg.QPS, cfg.Burst)
		cfg.RateLimiter = b
	}
	rc, err := newRESTClient(cfg, h, codec)
	if err != nil {
		return resourceClients{}, err
	}
	return resourceClients{dynamic.New(rc), rc, b}, nil
}

// Resource answers the resource's own client, built on first use.
func (p *perResource) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return p.client(gvr.GroupResource()).Resource(gvr)
}

func (p *perResource) client(gr schema.GroupResource) resourceClients {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.by[gr]; ok {
		return c
	}
	c := p.first
	if own, err := newResourceClients(p.cfg, p.http, p.codec); err == nil {
		c = own
	}
	p.by[gr] = c
	return c
}

// clientQPS is the rest.Config QPS for a limit: client-go reads 0 as its default of 5, so "no limit"
// (qps ≤ 0) is -1 there.
func clientQPS(qps float32) float32 {
	if qps <= 0 {
		return -1
	}
	return qps
}

// leaseClient is the leader election's client (the typed one where Clients were built by hand).
func (c *Clients) leaseClient() kubernetes.Interface {
	if c.lease != nil {
		return c.lease
	}
	return c.Kubernetes
}
