// Package hydra runs a real ORY Hydra v2.3.0 (an OAuth 2.0 and OpenID Connect authorization server) on
// loopback for tests: built from the Go module proxy by hack/hydra.sh and cached outside the checkout, it
// serves from an in-memory database (DSN=memory) with JWT access tokens (STRATEGIES_ACCESS_TOKEN=jwt), so
// its client-credentials tokens are RS256 JWTs with aud and scp, signed by keys it publishes at
// /.well-known/jwks.json. Clients are created through its admin API, as an operator would.
package hydra

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// BinaryEnv names the hydra binary to use; when unset hack/hydra.sh builds (or finds) it.
const BinaryEnv = "O2IMS_HYDRA"

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// Binary is the path of the hydra binary, built first when missing or stale.
func Binary() (string, error) {
	binOnce.Do(func() {
		if p := os.Getenv(BinaryEnv); p != "" {
			binPath = p
			_, binErr = os.Stat(p)
			return
		}
		root, err := kubeapi.RepoRoot()
		if err != nil {
			binErr = err
			return
		}
		var out bytes.Buffer
		cmd := exec.Command(filepath.Join(root, "hack", "hydra.sh"))
		cmd.Stdout, cmd.Stderr = &out, os.Stderr
		if err := cmd.Run(); err != nil {
			binErr = fmt.Errorf("building ORY Hydra (hack/hydra.sh): %w", err)
			return
		}
		binPath = strings.TrimSpace(out.String())
	})
	return binPath, binErr
}

// Hydra is one running Hydra.
type Hydra struct {
	Public, Admin string // base URLs
	cmd           *exec.Cmd
	done          chan struct{}
	logFile       string
}

// Start runs Hydra on two free loopback ports until the test ends and waits for it to be ready.
func Start(t testing.TB) *Hydra {
	t.Helper()
	h, err := StartProcess(context.Background(), t.TempDir())
	if h != nil {
		t.Cleanup(h.Stop)
	}
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// StartProcess is Start for a program (no testing.TB): Hydra on two free loopback ports, its log in dir,
// ready and with its signing keys made when it returns. The caller stops it (Stop); on an error it is
// already stopped.
func StartProcess(ctx context.Context, dir string) (*Hydra, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	ports, err := kubeapi.FreePorts(2)
	if err != nil {
		return nil, err
	}
	pub, adm := ports[0], ports[1]
	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	h := &Hydra{
		Public: "http://127.0.0.1:" + strconv.Itoa(pub), Admin: "http://127.0.0.1:" + strconv.Itoa(adm),
		done: make(chan struct{}), logFile: filepath.Join(dir, "hydra.log"),
	}
	logf, err := os.Create(h.logFile)
	if err != nil {
		return nil, err
	}
	h.cmd = exec.Command(bin, "serve", "all", "--dev")
	h.cmd.Env = append(os.Environ(),
		"DSN=memory",
		"SECRETS_SYSTEM="+hex.EncodeToString(secret), // 32 characters
		"STRATEGIES_ACCESS_TOKEN=jwt",
		"URLS_SELF_ISSUER="+h.Public,
		"SERVE_PUBLIC_HOST=127.0.0.1", "SERVE_PUBLIC_PORT="+strconv.Itoa(pub),
		"SERVE_ADMIN_HOST=127.0.0.1", "SERVE_ADMIN_PORT="+strconv.Itoa(adm),
		"LOG_LEVEL=warn", "SQA_OPT_OUT=true",
	)
	h.cmd.Stdout, h.cmd.Stderr = logf, logf
	if err := h.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting hydra: %w", err)
	}
	go func() { _ = h.cmd.Wait(); logf.Close(); close(h.done) }()
	if err := h.waitReady(ctx); err != nil {
		h.Stop()
		return nil, err
	}
	return h, nil
}

// waitReady waits until both ports answer ready, then has Hydra make its keys (warm).
func (h *Hydra) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(60 * time.Second)
	for !h.ready() {
		select {
		case <-h.done:
			log, _ := os.ReadFile(h.logFile)
			return fmt.Errorf("hydra exited before it was ready:\n%s", log)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(h.logFile)
			return fmt.Errorf("hydra not ready within 60s:\n%s", log)
		}
	}
	return h.warm(ctx)
}

func (h *Hydra) ready() bool {
	for _, base := range []string{h.Public, h.Admin} {
		resp, err := http.Get(base + "/health/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false
		}
	}
	return true
}

// warm has Hydra make its signing keys now: it generates them (RSA 4096) at the first request that needs
// them, which on a busy machine takes longer than a relying party waits.
func (h *Hydra) warm(ctx context.Context) error {
	// Hydra's server may cut the first request off (its write timeout) while generation goes on: ask again.
	c := &http.Client{Timeout: time.Minute}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.Public+"/.well-known/jwks.json", nil)
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("hydra published no keys within 5 minutes (last: %v)", errors.Join(err, ctx.Err()))
		}
		time.Sleep(time.Second)
	}
}

// Stop ends Hydra (an outage: its ports then refuse connections).
func (h *Hydra) Stop() {
	if h.cmd.Process != nil {
		_ = h.cmd.Process.Kill()
	}
	<-h.done
}

// Issuer is the issuer URL Hydra names in its metadata and tokens.
func (h *Hydra) Issuer() string { return h.Public }

// Client is an OAuth client registered in Hydra.
type Client struct{ ID, Secret string }

// CreateClient registers a client-credentials client allowed scopes and audiences (admin API
// POST /admin/clients).
func (h *Hydra) CreateClient(t testing.TB, id string, scopes, audiences []string) Client {
	t.Helper()
	c, err := h.CreateClientE(context.Background(), id, scopes, audiences)
	require.NoError(t, err)
	return c
}

// CreateClientE is CreateClient answering an error (for a program).
func (h *Hydra) CreateClientE(ctx context.Context, id string, scopes, audiences []string) (Client, error) {
	c := Client{ID: id, Secret: "secret-" + id}
	body := map[string]any{
		"client_id": c.ID, "client_secret": c.Secret, "grant_types": []string{"client_credentials"},
		"scope": strings.Join(scopes, " "), "audience": audiences, "token_endpoint_auth_method": "client_secret_basic",
	}
	_, err := h.adminE(ctx, http.MethodPost, "/admin/clients", body, http.StatusCreated)
	return c, err
}

// Token fetches a client-credentials access token for scopes and audiences (POST /oauth2/token).
func (h *Hydra) Token(t testing.TB, c Client, scopes, audiences []string) string {
	t.Helper()
	tok, err := h.TryToken(context.Background(), c, scopes, audiences)
	require.NoError(t, err)
	return tok
}

// TryToken is Token answering an error (the token endpoint may be down).
func (h *Hydra) TryToken(ctx context.Context, c Client, scopes, audiences []string) (string, error) {
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {strings.Join(scopes, " ")}}
	for _, a := range audiences {
		form.Add("audience", a)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.Public+"/oauth2/token", strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(c.ID), url.QueryEscape(c.Secret))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("token endpoint answered %d: %s", resp.StatusCode, data)
	}
	var out struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(data, &out); err != nil || out.AccessToken == "" {
		return "", fmt.Errorf("token endpoint answered no access_token: %s", data)
	}
	return out.AccessToken, nil
}

// AccessTokenKeySet is the JWKS Hydra signs access tokens with.
const AccessTokenKeySet = "hydra.jwt.access-token"

// RotateKeys adds a new RS256 key to the access-token key set (POST /admin/keys/{set}); Hydra signs new
// tokens with it and keeps publishing the old one.
func (h *Hydra) RotateKeys(t testing.TB) {
	t.Helper()
	h.admin(t, http.MethodPost, "/admin/keys/"+AccessTokenKeySet, map[string]any{"alg": "RS256", "use": "sig", "kid": "rotated-" + strconv.FormatInt(time.Now().UnixNano(), 36)}, http.StatusCreated)
}

func (h *Hydra) admin(t testing.TB, method, path string, body any, want int) []byte {
	t.Helper()
	data, err := h.adminE(context.Background(), method, path, body, want)
	require.NoError(t, err)
	return data
}

// adminE calls Hydra's admin API and answers an error unless it answered want.
func (h *Hydra) adminE(ctx context.Context, method, path string, body any, want int) ([]byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, method, h.Admin+path, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return data, fmt.Errorf("hydra %s %s answered %d, want %d: %s", method, path, resp.StatusCode, want, data)
	}
	return data, nil
}

// ImportKey stores the test's own RSA key in Hydra's access-token key set under kid (admin API
// PUT /admin/keys/{set}/{kid}, for keys an operator brings): Hydra then publishes its public half in its
// JWKS like its own, and the test can sign tokens Hydra's relying parties trust — to make tokens whose
// every claim it chooses (expired, bound to a certificate…).
func (h *Hydra) ImportKey(t testing.TB, kid string, key *rsa.PrivateKey) {
	t.Helper()
	jwk := jose.JSONWebKey{Key: key, KeyID: kid, Algorithm: "RS256", Use: "sig"}
	b, err := jwk.MarshalJSON()
	require.NoError(t, err)
	h.admin(t, http.MethodPut, "/admin/keys/"+AccessTokenKeySet+"/"+kid, json.RawMessage(b), http.StatusOK)
}

// Sign makes a JWT of claims signed with key under kid and alg, as an issuer (or a forger) would.
func Sign(t testing.TB, key any, kid string, alg jose.SignatureAlgorithm, claims map[string]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	require.NoError(t, err)
	tok, err := jwt.Signed(signer).Claims(claims).Serialize()
	require.NoError(t, err)
	return tok
}

// Claims reads a token's claims without verifying it (what Hydra put in its own tokens).
func Claims(t testing.TB, token string) map[string]any {
	t.Helper()
	tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256})
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, tok.UnsafeClaimsWithoutVerification(&m))
	return m
}

// KeyID is the kid a token's header names.
func KeyID(t testing.TB, token string) string {
	t.Helper()
	tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256})
	require.NoError(t, err)
	return tok.Headers[0].KeyID
}
