package nbi

import (
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/util/cache"
)

// addrLimiter bounds the authentication attempts (tokens not answered from a cache) per client address
// (NBI_AUTH_RATE per second, bursts of NBI_AUTH_BURST): junk tokens cost the API server or the CPU at
// most that rate per address. A caller whose token is cached is not counted. nil: no limit.
type addrLimiter struct {
	limit rate.Limit
	burst int

	mu    sync.Mutex
	addrs *cache.LRUExpireCache // address → *rate.Limiter; the least recently seen go first
}

func newAddrLimiter(perSecond float64, burst int) *addrLimiter {
	if perSecond <= 0 {
		return nil
	}
	return &addrLimiter{limit: rate.Limit(perSecond), burst: max(burst, 1), addrs: cache.NewLRUExpireCache(reviewCacheLimit)}
}

func (l *addrLimiter) allow(addr string, now time.Time) bool {
	if l == nil {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	v, ok := l.addrs.Get(addr)
	if !ok {
		v = rate.NewLimiter(l.limit, l.burst)
		l.addrs.Add(addr, v, 10*time.Minute) // an address quiet that long starts afresh
	}
	return v.(*rate.Limiter).AllowN(now, 1)
}

// clientAddr is the peer's IP address (no X-Forwarded-For: a client sets that header itself).
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
