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
	"k8s.io/client-go/kubernetes/fake"

	"github.com/o2ims-operator/o2ims-operator/nbi/callback"
	"github.com/o2ims-operator/o2ims-operator/nbi/smoclient"
	"github.com/o2ims-operator/o2ims-operator/tests/hydra"

	"github.com/o2ims-operator/o2ims-operator/inventory"
)

// notificationsPerOp is how many notifications one iteration delivers.
const notificationsPerOp = 1000

// BenchmarkNotificationsPerToken is issue 35's "token-endpoint calls per 1 000 notifications" (target 1 while
// the token lives): each iteration is an operator starting cold (a new SMO client, so no token cached) that
// delivers 1 000 notifications through the real notifier, over mutual TLS, to an SMO stand-in that checks
// every token against Hydra's keys. It counts the token requests that reached Hydra (through its mTLS front).
func BenchmarkNotificationsPerToken(b *testing.B) {
	h := hydra.Start(b)
	pki := hydra.NewPKI(b, "smo-ca")
	front := h.MTLSFront(b, pki)
	smo := h.NewSMO(b, pki, "smo")
	oc := h.CreateClient(b, "o2ims-ocloud", []string{"o2ims:notify"}, []string{"smo"})
	dir := b.TempDir()
	cfg := smoclient.Config{TokenURL: front.TokenURL(), ClientID: oc.ID, SecretFile: filepath.Join(dir, "secret"),
		Scopes: []string{"o2ims:notify"}, Audience: "smo", CAFiles: []string{pki.CAFile},
		CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key")}
	if err := os.WriteFile(cfg.SecretFile, []byte(oc.Secret), 0o600); err != nil {
		b.Fatal(err)
	}
	pki.WriteClient(b, "o2ims-ocloud", cfg.CertFile, cfg.KeyFile)
	b.ResetTimer()
	delivered := 0
	for i := range b.N {
		deliverThousand(b, cfg, smo.URL(), strconv.Itoa(i))
		delivered += notificationsPerOp
		for deadline := time.Now().Add(time.Minute); len(smo.Bodies()) < delivered; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				b.Fatalf("the SMO received %d of %d notifications within a minute", len(smo.Bodies()), delivered)
			}
		}
	}
	b.StopTimer()
	if got := len(smo.Bodies()); got != delivered {
		b.Fatalf("the SMO received %d notifications, want %d", got, delivered)
	}
	if refused := smo.Refused(); len(refused) > 0 {
		b.Fatalf("the SMO refused %d requests: %v", len(refused), refused)
	}
	b.ReportMetric(float64(front.Requests())/float64(b.N), "token-requests/1000-notifications")
}

// deliverThousand builds the delivery path of a fresh operator (SMO client, callback policy, subscription
// store, notifier), subscribes callback (its test, a GET, carries the token too), queues 1 000 changes and
// returns once the notifier has them; the caller waits for the SMO to receive them. The notifier stops
// when the benchmark ends.
func deliverThousand(b *testing.B, cfg smoclient.Config, callbackURL, run string) {
	client, err := smoclient.New(cfg, prometheus.NewRegistry(), nil)
	if err != nil {
		b.Fatal(err)
	}
	policy, err := callback.New(callback.Config{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	if err != nil {
		b.Fatal(err)
	}
	policy.WithOutgoing(client)
	view := syncedView(b)
	store := NewSubscriptionStore(fake.NewClientset(), "o2ims").WithPolicy(policy)
	n, err := NewNotifier(NotifierConfig{Policy: policy, Timeout: 5 * time.Second, BackoffBase: 10 * time.Millisecond,
		BackoffCap: 100 * time.Millisecond}, view, store, nil, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := store.Create(context.Background(), Subscription{Callback: callbackURL}); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Start(ctx) }()
	b.Cleanup(func() { cancel(); <-done })
	for {
		n.set.mu.Lock()
		subscribed := len(n.set.subs) == 1
		n.set.mu.Unlock()
		if subscribed {
			break
		}
		time.Sleep(time.Millisecond)
	}
	for k := range notificationsPerOp {
		n.set.apply([]inventory.Change{change(run+"-r"+strconv.Itoa(k), "", "v")})
	}
}
