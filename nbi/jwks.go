package nbi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"go.uber.org/zap"
)

// Errors of the key set, each a refusal class of its own (issue 35, item 5).
var (
	errUnknownKey      = errors.New("the token's signing key (kid) is not among the issuer's keys")
	errKeysUnreachable = errors.New("the issuer's signing keys could not be fetched and none are cached")
)

// keySet is the authorization server's signing keys: found by discovery (OpenID Connect, else RFC 8414
// metadata), fetched from its jwks_uri, kept in memory and refreshed on a schedule and when a token names
// a key not held (at most once per minRefresh, so junk kids cannot make the NBI hammer the issuer). A
// failed refresh keeps the keys held: an issuer outage does not stop tokens signed by known keys; with no
// key ever fetched every token is refused (fail closed).
type keySet struct {
	issuerURL  string // as configured
	client     *http.Client
	log        *zap.Logger
	minRefresh time.Duration

	fetch sync.Mutex // one fetch at a time; others wait for its answer

	mu      sync.Mutex
	now     func() time.Time
	issuer  string // the metadata's issuer, once discovered: what tokens' iss must be
	jwksURI string
	keys    map[string]jose.JSONWebKey // by kid; "" for a set whose only key has none
	attempt time.Time                  // of the last fetch, successful or not
	fetches int                        // for tests and metrics
}

func newKeySet(issuerURL string, client *http.Client, minRefresh time.Duration, log *zap.Logger) *keySet {
	return &keySet{issuerURL: issuerURL, client: client, log: log, minRefresh: minRefresh, now: time.Now}
}

// expectedIssuer is what a token's iss must be: the discovered issuer, or the configured URL before
// discovery has answered (the two may differ only by a trailing slash).
func (k *keySet) expectedIssuer() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.issuer != "" {
		return k.issuer
	}
	return k.issuerURL
}

// key answers the key named kid, refreshing once (rate-limited) when it is not held.
func (k *keySet) key(ctx context.Context, kid string) (jose.JSONWebKey, error) {
	if key, ok := k.lookup(kid); ok {
		return key, nil
	}
	k.refresh(ctx, false)
	if key, ok := k.lookup(kid); ok {
		return key, nil
	}
	k.mu.Lock()
	empty := len(k.keys) == 0
	k.mu.Unlock()
	if empty {
		return jose.JSONWebKey{}, errKeysUnreachable
	}
	return jose.JSONWebKey{}, errUnknownKey
}

func (k *keySet) lookup(kid string) (jose.JSONWebKey, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if key, ok := k.keys[kid]; ok {
		return key, true
	}
	if kid == "" && len(k.keys) == 1 { // a token without kid, an issuer with one key
		for _, key := range k.keys {
			return key, true
		}
	}
	return jose.JSONWebKey{}, false
}

// refresh fetches the keys again unless a fetch was tried within minRefresh (scheduled: always).
func (k *keySet) refresh(ctx context.Context, scheduled bool) {
	k.mu.Lock()
	before := k.attempt
	k.mu.Unlock()
	k.fetch.Lock()
	defer k.fetch.Unlock()
	k.mu.Lock()
	if k.attempt != before { // another caller fetched while this one waited: use its answer
		k.mu.Unlock()
		return
	}
	if !scheduled && !k.attempt.IsZero() && k.now().Sub(k.attempt) < k.minRefresh {
		k.mu.Unlock()
		return
	}
	k.attempt = k.now()
	k.fetches++
	k.mu.Unlock()

	keys, err := k.fetchKeys(ctx)
	if err != nil {
		k.log.Warn("the OAuth issuer's signing keys could not be refreshed; the keys held stay in use",
			zap.Error(err))
		return
	}
	k.mu.Lock()
	k.keys = keys
	k.mu.Unlock()
}

// run refreshes the keys every interval until ctx ends.
func (k *keySet) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			k.refresh(ctx, true)
		}
	}
}

func (k *keySet) fetchKeys(ctx context.Context) (map[string]jose.JSONWebKey, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	k.mu.Lock()
	uri := k.jwksURI
	k.mu.Unlock()
	if uri == "" {
		issuer, jwks, err := k.discover(ctx)
		if err != nil {
			return nil, err
		}
		k.mu.Lock()
		k.issuer, k.jwksURI, uri = issuer, jwks, jwks
		k.mu.Unlock()
	}
	var set jose.JSONWebKeySet
	if err := k.getJSON(ctx, uri, &set); err != nil {
		return nil, fmt.Errorf("the JWKS: %w", err)
	}
	keys := make(map[string]jose.JSONWebKey, len(set.Keys))
	for _, key := range set.Keys {
		// Only public signing keys: a symmetric key in a JWKS would let anyone who read it sign tokens.
		if key.IsPublic() && key.Valid() && (key.Use == "" || key.Use == "sig") {
			keys[key.KeyID] = key
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("the JWKS holds no public signing key")
	}
	return keys, nil
}

// discover reads the issuer's metadata: OpenID Connect discovery first, RFC 8414 next. Both documents
// must name the configured issuer (OpenID Connect Discovery 1.0 §4.3, RFC 8414 §3.3), so a metadata
// document cannot redirect trust to another issuer.
func (k *keySet) discover(ctx context.Context) (issuer, jwksURI string, err error) {
	base := strings.TrimSuffix(k.issuerURL, "/")
	u, err := url.Parse(base)
	if err != nil {
		return "", "", err
	}
	rfc8414 := u.Scheme + "://" + u.Host + "/.well-known/oauth-authorization-server" + u.Path
	var errs []error
	for _, doc := range []string{base + "/.well-known/openid-configuration", rfc8414} {
		var meta struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		if err := k.getJSON(ctx, doc, &meta); err != nil {
			errs = append(errs, err)
			continue
		}
		if strings.TrimSuffix(meta.Issuer, "/") != base {
			return "", "", errors.New("the issuer's metadata names another issuer than OAUTH_ISSUER_URL")
		}
		if meta.JWKSURI == "" {
			return "", "", errors.New("the issuer's metadata has no jwks_uri")
		}
		return meta.Issuer, meta.JWKSURI, nil
	}
	return "", "", fmt.Errorf("issuer discovery: %w", errors.Join(errs...))
}

func (k *keySet) getJSON(ctx context.Context, uri string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, uri, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := k.client.Do(req)
	if err != nil {
		// The error names the address, which stays out of logs: only its class is kept.
		var ne interface{ Timeout() bool }
		if errors.As(err, &ne) && ne.Timeout() {
			return errors.New("the issuer did not answer in time")
		}
		return errors.New("the issuer could not be reached")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return fmt.Errorf("the issuer answered %d", resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v); err != nil {
		return errors.New("the issuer answered a malformed document")
	}
	return nil
}
