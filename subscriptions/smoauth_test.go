package subscriptions

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/o2ims-operator/o2ims-operator/nbi/callback"
	"github.com/o2ims-operator/o2ims-operator/nbi/smoclient"
	"github.com/o2ims-operator/o2ims-operator/tests/hydra"

	"github.com/o2ims-operator/o2ims-operator/inventory"
)

// Notifications to an SMO that requires mutual TLS and Hydra's tokens, through the whole delivery path
// (the callback policy's client with the SMO client's credentials, the notifier's queue and retries): the
// callback test and every notification carry a valid token, one token serves them all while it lives
// (1 000 notifications: one token request),
// a 401 costs exactly one new token, a token-endpoint outage and a refused client certificate are
// failed deliveries retried with backoff, and nothing is lost or reordered.
func TestNotificationsCarryHydraTokensOverMutualTLS(t *testing.T) {
	h := hydra.Start(t)
	pki := hydra.NewPKI(t, "smo-ca")
	front := h.MTLSFront(t, pki)
	smo := h.NewSMO(t, pki, "smo")
	oc := h.CreateClient(t, "o2ims-ocloud", []string{"o2ims:notify"}, []string{"smo"})
	dir := t.TempDir()
	cfg := smoclient.Config{TokenURL: front.TokenURL(), ClientID: oc.ID, SecretFile: filepath.Join(dir, "secret"),
		Scopes: []string{"o2ims:notify"}, Audience: "smo", CAFiles: []string{pki.CAFile},
		CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key")}
	require.NoError(t, os.WriteFile(cfg.SecretFile, []byte(oc.Secret), 0o600))
	pki.WriteClient(t, "o2ims-ocloud", cfg.CertFile, cfg.KeyFile)
	client, err := smoclient.New(cfg, prometheus.NewRegistry(), nil)
	require.NoError(t, err)
	tokens := func(outcome string) float64 { return testutil.ToFloat64(client.Metrics().TokenRequests(outcome)) }

	policy, err := callback.New(callback.Config{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	require.NoError(t, err)
	policy.WithOutgoing(client)
	view := syncedView(t)
	store := NewSubscriptionStore(fake.NewClientset(), "o2ims").WithPolicy(policy)
	n, err := NewNotifier(NotifierConfig{Policy: policy, Timeout: 5 * time.Second, BackoffBase: 10 * time.Millisecond,
		BackoffCap: 100 * time.Millisecond}, view, store, nil, nil, nil)
	require.NoError(t, err)
	_, err = store.Create(context.Background(), Subscription{Callback: smo.URL()})
	require.NoError(t, err, "the callback test (a GET) carried a valid token over mutual TLS")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Start(ctx) }()
	defer func() { cancel(); require.NoError(t, <-done) }()

	sent := 0
	send := func(k int) {
		for range k {
			n.set.apply([]inventory.Change{change("r"+strconv.Itoa(sent), "", "v")})
			sent++
		}
	}
	arrived := func(k int) {
		t.Helper()
		require.Eventually(t, func() bool { return len(smo.Bodies()) == k }, 60*time.Second, 5*time.Millisecond, "want %d notifications", k)
	}
	require.Eventually(t, func() bool { n.set.mu.Lock(); defer n.set.mu.Unlock(); return len(n.set.subs) == 1 }, 10*time.Second, time.Millisecond)

	send(1000)
	arrived(1000)
	assert.Len(t, smo.Tokens(), 1, "one token for the callback test and every notification")
	assert.Equal(t, 1, front.Requests(), "one token request reached Hydra")
	assert.Equal(t, 1.0, tokens("issued"), "o2ims_smo_token_requests_total")

	smo.Unauthorized(1) // the SMO no longer takes the token
	send(1)
	arrived(1001)
	assert.Equal(t, 2, front.Requests(), "a 401 costs exactly one new token")
	assert.Len(t, smo.Tokens(), 2)

	front.Down() // the token endpoint's outage, and a token the SMO refuses: none can be had
	smo.Unauthorized(1)
	send(3)
	require.Eventually(t, func() bool { return tokens("unreachable") >= 3 }, 60*time.Second, 5*time.Millisecond, "retried with backoff")
	assert.Len(t, smo.Bodies(), 1001, "nothing delivered without a token")
	_, err = store.Create(context.Background(), Subscription{Callback: smo.URL() + "/another"})
	var failed *callback.TestFailedError
	require.ErrorAs(t, err, &failed, "a callback that cannot be tested is no subscription")
	assert.Contains(t, failed.Detail, "it could not be sent: no access token for the SMO: the token endpoint could not be reached: connection refused")
	assert.NotContains(t, failed.Detail, "127.0.0.1", "no address in the answer")
	front.Up()
	arrived(1004)
	assert.Equal(t, 3, front.Requests())

	// A client certificate the SMO does not trust (its files replaced): refused in the handshake, retried;
	// the right one back in the files, delivered — no restart.
	hydra.NewPKI(t, "rogue-ca").WriteClient(t, "o2ims-ocloud", cfg.CertFile, cfg.KeyFile)
	smo.DropConnections()
	handshakes := smo.FailedHandshakes()
	send(1)
	require.Eventually(t, func() bool { return smo.FailedHandshakes() >= handshakes+2 }, 60*time.Second, 5*time.Millisecond)
	assert.Len(t, smo.Bodies(), 1004)
	pki.WriteClient(t, "o2ims-ocloud", cfg.CertFile, cfg.KeyFile)
	arrived(1005)

	var ids []string
	for _, b := range smo.Bodies() {
		post, _ := b["postObjectState"].(map[string]any)
		id, _ := post["resourceId"].(string)
		ids = append(ids, id)
	}
	want := make([]string, sent)
	for i := range want {
		want[i] = "r" + strconv.Itoa(i)
	}
	assert.Equal(t, want, ids, "every notification once, in order")
	for _, why := range smo.Refused() {
		assert.Equal(t, "401 asked for", why, "every token the SMO saw was Hydra's and valid")
	}
}
