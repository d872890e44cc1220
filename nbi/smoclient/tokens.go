package smoclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/o2ims-operator/o2ims-operator/internal/netcause"
)

// tokenTimeout bounds one token request.
const tokenTimeout = 10 * time.Second

// TokenError is an access token the authorization server did not give: unreachable (the transport's
// class), refused (its status and OAuth error code), or a secret file that cannot be read. It never
// carries the secret, a token or the endpoint's address. A request that needed it failed and its caller
// retries it (a notification stays queued).
type TokenError struct {
	Status int    // the token endpoint's answer (0: none came)
	Code   string // its OAuth error code ("invalid_client", …), when it gave one
	Cause  string // why none came: netcause's class, or the secret file's trouble
}

func (e *TokenError) Error() string {
	switch {
	case e.Status != 0 && e.Code != "":
		return fmt.Sprintf("no access token for the SMO: the token endpoint answered %d (%s)", e.Status, e.Code)
	case e.Status != 0:
		return fmt.Sprintf("no access token for the SMO: the token endpoint answered %d", e.Status)
	}
	return "no access token for the SMO: " + e.Cause
}

// Explain is what a subscriber is told when its callback's test could not be sent (callback.Explained).
func (e *TokenError) Explain() string { return "it could not be sent: " + e.Error() }

// tokens are the client-credentials grant's access tokens (RFC 6749 clause 4.4): one cached until near
// its expiry (oauth2.ReuseTokenSource: 10 s before), shared by every request; invalidate drops it after a
// 401, once per token however many requests met the 401.
type tokens struct {
	cfg      Config
	client   *http.Client // the token endpoint's: the client certificate and the CAs, no proxy
	requests func(outcome string)

	mu    sync.Mutex
	reuse oauth2.TokenSource
	gen   uint64 // which reuse: a 401 of an older one changes nothing
}

func newTokens(cfg Config, client *http.Client, requests func(string)) *tokens {
	t := &tokens{cfg: cfg, client: client, requests: requests}
	t.reuse = oauth2.ReuseTokenSource(nil, fetcher{t})
	return t
}

// token is the current token and its generation (for invalidate).
func (t *tokens) token() (*oauth2.Token, uint64, error) {
	t.mu.Lock()
	reuse, gen := t.reuse, t.gen
	t.mu.Unlock()
	tok, err := reuse.Token()
	return tok, gen, err
}

// invalidate drops the token of generation gen: the next token() fetches a new one.
func (t *tokens) invalidate(gen uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if gen == t.gen {
		t.gen++
		t.reuse = oauth2.ReuseTokenSource(nil, fetcher{t})
	}
}

type fetcher struct{ t *tokens }

func (f fetcher) Token() (*oauth2.Token, error) { return f.t.fetch() }

// fetch asks the token endpoint, reading the secret file now (a rotated Secret needs no restart).
func (t *tokens) fetch() (*oauth2.Token, error) {
	secret, err := os.ReadFile(t.cfg.SecretFile)
	if err != nil || strings.TrimSpace(string(secret)) == "" {
		t.requests("unreadable_secret")
		return nil, &TokenError{Cause: "SMO_OAUTH_CLIENT_SECRET_FILE cannot be read or is empty"}
	}
	cc := clientcredentials.Config{
		ClientID: t.cfg.ClientID, ClientSecret: strings.TrimSpace(string(secret)), TokenURL: t.cfg.TokenURL,
		Scopes: t.cfg.Scopes,
		// HTTP Basic (client_secret_basic), which RFC 6749 clause 2.3.1 makes every server support; the
		// auto-detection would ask twice on a refusal.
		AuthStyle: oauth2.AuthStyleInHeader,
	}
	if t.cfg.Audience != "" {
		cc.EndpointParams = url.Values{"audience": {t.cfg.Audience}} // Hydra, Keycloak and Auth0 read it
	}
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), oauth2.HTTPClient, t.client), tokenTimeout)
	defer cancel()
	tok, err := cc.Token(ctx)
	var re *oauth2.RetrieveError
	switch {
	case err == nil:
		t.requests("issued")
		return tok, nil
	case errors.As(err, &re) && re.Response != nil:
		t.requests("refused")
		return nil, &TokenError{Status: re.Response.StatusCode, Code: re.ErrorCode}
	}
	t.requests("unreachable")
	return nil, &TokenError{Cause: "the token endpoint could not be reached: " + netcause.Of(err)}
}
