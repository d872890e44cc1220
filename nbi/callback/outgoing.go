package callback

import "net/http"

// Outgoing is what every request of the policy's clients carries beyond the policy: the O-Cloud's
// credentials towards the SMO (an OAuth 2.0 access token, a client certificate) and the trust the SMO's
// certificate needs. nbi/smoclient implements it; the policy hands it the transport it built, whose
// every connection it still checks.
type Outgoing interface {
	// RoundTripper answers what sends through base. It may set base's TLSClientConfig (it is called
	// before base's first request) and send base's clones.
	RoundTripper(base *http.Transport) http.RoundTripper
}

// WithOutgoing has every client of the policy (each delivery and the callback test) carry o's
// credentials; clients built before keep what they had.
func (p *Policy) WithOutgoing(o Outgoing) *Policy {
	p.mu.Lock()
	p.outgoing = o
	p.mu.Unlock()
	return p
}

func (p *Policy) outgoingRoundTripper(base *http.Transport) http.RoundTripper {
	p.mu.Lock()
	o := p.outgoing
	p.mu.Unlock()
	if o == nil {
		return base
	}
	return o.RoundTripper(base)
}
