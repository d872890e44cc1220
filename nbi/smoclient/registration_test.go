package smoclient_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/nbi/smoclient"
	"github.com/o2ims-operator/o2ims-operator/tests/hydra"
)

// smoEnv is a real Hydra behind its mTLS front, an SMO stand-in that requires the PKI's client
// certificates and Hydra's tokens, and the O-Cloud's client configured for both.
type smoEnv struct {
	hydra *hydra.Hydra
	pki   *hydra.PKI
	front *hydra.Front
	smo   *hydra.SMO
	cfg   smoclient.Config
}

const smoAudience = "smo"

func newSMOEnv(t *testing.T) *smoEnv {
	t.Helper()
	e := &smoEnv{hydra: hydra.Start(t), pki: hydra.NewPKI(t, "smo-ca")}
	e.front = e.hydra.MTLSFront(t, e.pki)
	e.smo = e.hydra.NewSMO(t, e.pki, smoAudience)
	c := e.hydra.CreateClient(t, "o2ims-ocloud", []string{"o2ims:notify"}, []string{smoAudience})
	dir := t.TempDir()
	e.cfg = smoclient.Config{
		TokenURL: e.front.TokenURL(), ClientID: c.ID, SecretFile: filepath.Join(dir, "secret"),
		Scopes: []string{"o2ims:notify"}, Audience: smoAudience,
		CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key"), CAFiles: []string{e.pki.CAFile},
	}
	require.NoError(t, os.WriteFile(e.cfg.SecretFile, []byte(c.Secret+"\n"), 0o600))
	e.pki.WriteClient(t, "o2ims-ocloud", e.cfg.CertFile, e.cfg.KeyFile)
	return e
}

// The leader registers once the O-Cloud can serve, until the SMO answers 2xx (a refusal retried with
// backoff, visible on /readyz's line and the metrics), with Hydra's token over mutual TLS, and again when
// IMS_EP changes; without a client certificate the SMO refuses it in the handshake and it is retried.
func TestTheOCloudRegistersWithTheSMO(t *testing.T) {
	e := newSMOEnv(t)
	reg := prometheus.NewRegistry()
	client, err := smoclient.New(e.cfg, reg, nil)
	require.NoError(t, err)
	var ready atomic.Bool
	var checks atomic.Int64 // the registrar's readings of readiness: it is running
	var mu sync.Mutex
	id := smoclient.Identity{GlobalCloudID: "7b7e0c5e-7f7a-4c36-9c0e-3b2a4a1e9d11", OCloudID: "0f4b7c8a-1d2e-5f3a-8b9c-0d1e2f3a4b5c", IMSEndpoint: "https://o2ims.example.com"}
	r := client.Registrar(smoclient.RegistrationConfig{
		URL: e.smo.URL(), Ready: func() bool { checks.Add(1); return ready.Load() }, Recheck: 20 * time.Millisecond,
		Identity:    func() smoclient.Identity { mu.Lock(); defer mu.Unlock(); return id },
		BackoffBase: 10 * time.Millisecond, BackoffCap: 50 * time.Millisecond,
	}, nil)
	require.True(t, r.NeedLeaderElection())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	defer func() { cancel(); require.NoError(t, <-done) }()

	passes := func(n int64) {
		from := checks.Load()
		require.Eventually(t, func() bool { return checks.Load() >= from+n }, 10*time.Second, time.Millisecond)
	}
	passes(3) // nothing before the O-Cloud can serve
	assert.Empty(t, e.smo.Bodies())
	assert.Zero(t, e.front.Requests(), "no token is asked for before there is something to send")

	e.smo.Fail(http.StatusServiceUnavailable)
	ready.Store(true)
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(client.Metrics().RegistrationAttempts("refused")) >= 2
	}, 30*time.Second, 5*time.Millisecond, "a refusal is retried")
	assert.Contains(t, r.Degraded(), "the SMO answered 503 Service Unavailable; retrying with backoff")
	e.smo.Fail(0)
	require.Eventually(t, func() bool { return len(e.smo.Bodies()) == 1 }, 30*time.Second, 5*time.Millisecond)
	assert.Equal(t, map[string]any{"globalCloudId": id.GlobalCloudID, "oCloudId": id.OCloudID, "IMS_EP": id.IMSEndpoint}, e.smo.Bodies()[0])
	require.Eventually(t, func() bool { return r.Degraded() == "" }, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, 1.0, testutil.ToFloat64(client.Metrics().Registered()))
	assert.Len(t, e.smo.Tokens(), 1, "one Hydra token, valid for the SMO")
	assert.Equal(t, 1, e.front.Requests(), "the refusals and the registration shared the token")

	passes(3)
	assert.Len(t, e.smo.Bodies(), 1, "registered once while nothing changes")
	mu.Lock()
	id.IMSEndpoint = "https://o2ims.other.example.com"
	mu.Unlock()
	require.Eventually(t, func() bool { return len(e.smo.Bodies()) == 2 }, 30*time.Second, 5*time.Millisecond)
	assert.Equal(t, "https://o2ims.other.example.com", e.smo.Bodies()[1]["IMS_EP"])

	// No client certificate: refused in the handshake, retried, never a crash. (Without a token either:
	// the token endpoint, behind the same mutual TLS, would refuse first.)
	noCert := smoclient.Config{CAFiles: e.cfg.CAFiles}
	bare, err := smoclient.New(noCert, prometheus.NewRegistry(), nil)
	require.NoError(t, err)
	r2 := bare.Registrar(smoclient.RegistrationConfig{URL: e.smo.URL(), Ready: func() bool { return true },
		Identity: func() smoclient.Identity { return id }, BackoffBase: 10 * time.Millisecond, BackoffCap: 50 * time.Millisecond}, nil)
	ctx2, cancel2 := context.WithCancel(context.Background())
	done2 := make(chan error, 1)
	go func() { done2 <- r2.Start(ctx2) }()
	before := e.smo.FailedHandshakes()
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(bare.Metrics().RegistrationAttempts("failed")) >= 2
	}, 30*time.Second, 5*time.Millisecond)
	cancel2()
	require.NoError(t, <-done2)
	assert.Greater(t, e.smo.FailedHandshakes(), before, "refused at the TLS layer")
	assert.Len(t, e.smo.Bodies(), 2, "nothing reached the SMO's handler")
	assert.Equal(t, 0.0, testutil.ToFloat64(bare.Metrics().Registered()))
}
