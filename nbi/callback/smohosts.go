package callback

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"
)

// The SMO's hosts (SMO_URL): with it set, a callback must be on one of them, as oran-o2ims has it
// (internal/service/common/api/utils.go ValidateCallbackTarget, openshift-kni/oran-o2ims e734c06a): a
// subscription is the SMO's, and its notifications carry the O-Cloud's access token to whoever receives
// them. CALLBACK_ALLOW_CIDRS still admits a callback elsewhere when every address it reaches is inside.
// It is checked at creation and at every connection of a delivery, like the rest of the policy.

// NotSMO is a callback on another host than SMO_URL's.
const NotSMO Reason = "not_smo_host"

// smoConfigFromEnv reads SMO_URL (one URL, or a comma list for an SMO with several hosts) into c.
func smoConfigFromEnv(get func(string) string, c *Config) error {
	for _, s := range strings.Split(get("SMO_URL"), ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" {
			return fmt.Errorf("SMO_URL: %q is not an absolute http(s) URL (such as https://smo.example.com)", s)
		}
		c.SMOHosts = append(c.SMOHosts, hostKey(u.Hostname()))
	}
	return nil
}

// hostKey is a host as compared: lower case, no trailing dot, an IP literal in its canonical form.
func hostKey(h string) string {
	h = strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
	if a, err := netip.ParseAddr(h); err == nil {
		return canonical(a).String()
	}
	return h
}

// checkSMO refuses host (with addrs, what it reaches) when SMO_URL is set, host is none of its hosts and
// some address is outside CALLBACK_ALLOW_CIDRS.
func (p *Policy) checkSMO(host string, addrs []netip.Addr) error {
	if len(p.cfg.SMOHosts) == 0 {
		return nil
	}
	key := hostKey(host)
	for _, h := range p.cfg.SMOHosts {
		if h == key {
			return nil
		}
	}
	allowed := len(addrs) > 0
	for _, a := range addrs {
		if longest(p.cfg.Allow, canonical(a)) < 0 {
			allowed = false
		}
	}
	if allowed {
		return nil
	}
	return &RefusedError{Reason: NotSMO, Host: host,
		Detail: "callbacks must be on the SMO's host (SMO_URL), or reach only addresses CALLBACK_ALLOW_CIDRS allows"}
}
