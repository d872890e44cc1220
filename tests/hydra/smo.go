package hydra

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// SMO is an SMO stand-in receiving the O-Cloud's notifications as an SMO that trusts Hydra does: over
// mutual TLS (a client certificate of its PKI, else the handshake fails), each request with a Bearer
// access token it validates locally — RS256 signature by a key of Hydra's JWKS (fetched again on an
// unknown kid), iss Hydra's, aud including its audience, not expired (RFC 9068). A GET (the callback
// test) answers 204, a POST with a valid token is recorded and answers 204; a bad or missing token 401.
type SMO struct {
	hydra    *Hydra
	audience string
	srv      *httptest.Server

	mu         sync.Mutex
	keys       jose.JSONWebKeySet
	bodies     []map[string]any
	tokens     map[string]int // valid tokens seen, with how many requests carried each
	refused    []string       // why each refused request was
	unauth     int            // answer 401 to this many more requests with a valid token
	fail       int            // answer this status to POSTs while non-zero
	handshakes int            // failed TLS handshakes
}

// NewSMO starts the stand-in on loopback with a server certificate of pki.
func (h *Hydra) NewSMO(t testing.TB, pki *PKI, audience string) *SMO {
	t.Helper()
	s := &SMO{hydra: h, audience: audience, tokens: map[string]int{}}
	s.srv = httptest.NewUnstartedServer(s)
	s.srv.TLS = pki.MutualTLS(t)
	s.srv.Config.ErrorLog = log.New(handshakeCounter{s}, "", 0)
	s.srv.StartTLS()
	t.Cleanup(s.srv.Close)
	return s
}

type handshakeCounter struct{ s *SMO }

func (c handshakeCounter) Write(p []byte) (int, error) {
	if strings.Contains(string(p), "TLS handshake error") {
		c.s.mu.Lock()
		c.s.handshakes++
		c.s.mu.Unlock()
	}
	return len(p), nil
}

// URL is a callback on the stand-in.
func (s *SMO) URL() string { return s.srv.URL + "/smo/v1/o2ims_notifications" }

// DropConnections closes the kept connections: the next request makes a new handshake.
func (s *SMO) DropConnections() { s.srv.CloseClientConnections() }

// Unauthorized answers 401 to the next n requests that carry a valid token (a token the SMO revoked).
func (s *SMO) Unauthorized(n int) { s.mu.Lock(); s.unauth = n; s.mu.Unlock() }

// Fail answers status to every POST (0: accept again).
func (s *SMO) Fail(status int) { s.mu.Lock(); s.fail = status; s.mu.Unlock() }

// Bodies are the accepted POSTs' bodies, in arrival order.
func (s *SMO) Bodies() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.bodies...)
}

// Tokens are the distinct valid tokens seen, each with how many requests carried it.
func (s *SMO) Tokens() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.tokens {
		out[k] = v
	}
	return out
}

// Refused is why each refused request was (a missing or invalid token, a 401 asked for).
func (s *SMO) Refused() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.refused...)
}

// FailedHandshakes counts the TLS handshakes refused (no or a wrong client certificate).
func (s *SMO) FailedHandshakes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.handshakes
}

func (s *SMO) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	err := errors.New("no Bearer token")
	if ok {
		err = s.validate(r.Context(), raw)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil && s.unauth > 0 {
		s.unauth--
		err = errors.New("401 asked for")
	}
	if err != nil {
		s.refused = append(s.refused, err.Error())
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	s.tokens[raw]++
	if r.Method == http.MethodGet {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if s.fail != 0 {
		w.WriteHeader(s.fail)
		return
	}
	var body map[string]any
	data, _ := io.ReadAll(r.Body)
	if json.Unmarshal(data, &body) != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	s.bodies = append(s.bodies, body)
	w.WriteHeader(http.StatusNoContent)
}

// validate checks raw as an RFC 9068 access token of Hydra's for the stand-in's audience.
func (s *SMO) validate(ctx context.Context, raw string) error {
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil || len(tok.Headers) != 1 {
		return fmt.Errorf("not a JWT: %v", err)
	}
	key, err := s.key(ctx, tok.Headers[0].KeyID)
	if err != nil {
		return err
	}
	var c jwt.Claims
	if err := tok.Claims(key, &c); err != nil {
		return fmt.Errorf("bad signature: %w", err)
	}
	if strings.TrimSuffix(c.Issuer, "/") != strings.TrimSuffix(s.hydra.Issuer(), "/") {
		return fmt.Errorf("issuer %q", c.Issuer)
	}
	return c.ValidateWithLeeway(jwt.Expected{AnyAudience: jwt.Audience{s.audience}, Time: time.Now()}, 30*time.Second)
}

// key is Hydra's public key kid, the JWKS fetched again when it is unknown.
func (s *SMO) key(ctx context.Context, kid string) (any, error) {
	s.mu.Lock()
	keys := s.keys.Key(kid)
	s.mu.Unlock()
	if len(keys) == 0 {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.hydra.Public+"/.well-known/jwks.json", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("JWKS: %w", err)
		}
		defer resp.Body.Close()
		var set jose.JSONWebKeySet
		if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
			return nil, fmt.Errorf("JWKS: %w", err)
		}
		s.mu.Lock()
		s.keys = set
		s.mu.Unlock()
		keys = set.Key(kid)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("unknown kid %q", kid)
	}
	return keys[0].Public().Key, nil
}
