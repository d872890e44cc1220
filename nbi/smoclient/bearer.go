package smoclient

import (
	"io"
	"net/http"
)

// errPlainHTTP: an access token travels only where no one between can read it.
var errPlainHTTP error = plainHTTPError{}

type plainHTTPError struct{}

func (plainHTTPError) Error() string {
	return "the SMO's access token is sent only over https (plain http only on loopback)"
}

// Explain is what a subscriber is told when its callback's test was not sent (callback.Explained).
func (e plainHTTPError) Explain() string { return "it was not sent: " + e.Error() }

// bearer puts the access token on every request (RFC 6750 clause 2.1) and, when the receiver answers
// 401 (the token revoked, its keys rotated), drops the token and sends once more with a new one; a second
// 401 is the answer.
type bearer struct {
	next   http.RoundTripper
	tokens *tokens
}

func (b *bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" && !loopback(req.URL.Hostname()) {
		closeBody(req)
		return nil, errPlainHTTP
	}
	tok, gen, err := b.tokens.token()
	if err != nil {
		closeBody(req)
		return nil, err
	}
	first := req.Clone(req.Context()) // a RoundTripper leaves the caller's request as it is
	tok.SetAuthHeader(first)
	resp, err := b.next.RoundTrip(first)
	if err != nil || resp.StatusCode != http.StatusUnauthorized || (req.Body != nil && req.GetBody == nil) {
		return resp, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	b.tokens.invalidate(gen)
	if tok, _, err = b.tokens.token(); err != nil {
		return nil, err
	}
	again := req.Clone(req.Context())
	if req.GetBody != nil {
		if again.Body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
	tok.SetAuthHeader(again)
	return b.next.RoundTrip(again)
}

// closeBody: a RoundTripper closes the request's body, even when it sends nothing.
func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}
