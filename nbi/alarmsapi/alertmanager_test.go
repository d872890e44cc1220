package alarmsapi

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/o2ims-operator/o2ims-operator/alarms"
	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/subscriptions"
	"github.com/o2ims-operator/o2ims-operator/subscriptions/smo"
	"github.com/o2ims-operator/o2ims-operator/tests/alerting"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// tlsFiles writes a self-signed certificate for 127.0.0.1 and its key; the certificate is its own CA.
func tlsFiles(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "o2ims-operator-nbi.o2ims.svc"},
		DNSNames: []string{"o2ims-operator-nbi.o2ims.svc"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600))
	return certFile, keyFile
}

// shippedCredentialsToken applies manifests/monitoring's Alertmanager credentials to the API server and
// answers a token of their ServiceAccount.
func (e *env) shippedCredentialsToken(root string) string {
	t := e.T
	t.Helper()
	ctx := context.Background()
	require.NoError(t, e.Kapi.EnsureNamespace(ctx, "o2ims"))
	assets, err := kubeapi.Assets()
	require.NoError(t, err)
	kc, err := e.Kapi.WriteKubeconfig(filepath.Join(t.TempDir(), "kubeconfig"), "", "")
	require.NoError(t, err)
	out, err := exec.Command(filepath.Join(assets, "kubectl"), "--kubeconfig", kc, "apply", "-n", "o2ims", "-f",
		filepath.Join(root, "manifests", "monitoring", "objects", "alertmanager-credentials.yaml")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	// Minted for the NBI's audience (NBI_TOKEN_AUDIENCES): the Secret's legacy token has none, and the
	// NBI refuses tokens meant for the API server.
	token, err := e.Kapi.ServiceAccountTokenFor(ctx, "o2ims", "o2ims-operator-alertmanager", nbi.DefaultTokenAudience)
	require.NoError(t, err)
	return token
}

// postAlert sends one alert to Alertmanager's API (as Prometheus does); endsAt in the past resolves it.
func postAlert(t *testing.T, am string, labels map[string]string, endsAt time.Time) {
	t.Helper()
	alert := map[string]any{"labels": labels, "annotations": map[string]string{
		"summary": "NetBox answers errors.", "description": "The NetBox API answered 5xx for 10 minutes."},
		"startsAt": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)}
	if !endsAt.IsZero() {
		alert["endsAt"] = endsAt.UTC().Format(time.RFC3339)
	}
	b, _ := json.Marshal([]any{alert})
	resp, err := http.Post(am+"/api/v2/alerts", "application/json", bytes.NewReader(b))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// The shipped route and receiver with Debian's real Alertmanager: it posts the firing alert to the NBI's
// webhook over TLS with the shipped ServiceAccount's token (the NBI authenticating and authorising it on
// the real API server), the alarm appears and its subscriber is notified; the resolved alert clears it.
func TestRealAlertmanagerPostsToTheReceiverAndTheAlarmClearsWhenTheAlertResolves(t *testing.T) {
	bin := alerting.AlertmanagerBinary(t)
	e := newEnv(t)
	root, err := kubeapi.RepoRoot()
	require.NoError(t, err)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(e.shippedCredentialsToken(root)), 0o600))
	certFile, keyFile := tlsFiles(t, dir)

	// The NBI as nbi-tls and nbi-auth make it: TLS, every caller's token reviewed.
	require.NoError(t, e.Srv.Shutdown(context.Background()))
	api := New(e.store, nil).WithAlertmanager(alarms.NewReceiver(e.cfg, e.facts)).WithSubscriptions(e.subs, nil)
	e.Serve(e.kube, zap.NewNop(), []nbi.API{api}, func(c *nbi.Config) {
		c.Auth, c.TLSCertFile, c.TLSKeyFile = nbi.AuthKubernetes, certFile, keyFile
	})
	// Without a token the webhook is refused: what follows passed the NBI's TokenReview and
	// SubjectAccessReview with the shipped credentials.
	caPEM, err := os.ReadFile(certFile)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM))
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	resp, err := client.Post(e.Base+AlertmanagerPath, "application/json", bytes.NewReader([]byte(`{}`)))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	r := smo.New()
	defer r.Close()
	_, err = e.subs.Create(context.Background(), subscriptions.Subscription{Callback: r.URL()})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.notifier(ctx)

	am := alerting.StartAlertmanager(t, bin, alerting.ShippedAlertmanagerConfig(t, e.Base, AlertmanagerPath, tokenFile, certFile))
	labels := map[string]string{"alertname": "O2IMSNetBoxErrors", "severity": "warning", "instance": "10.0.0.7:8080"}
	postAlert(t, am, labels, time.Time{})
	alarm := func() *alarms.Alarm {
		s, err := e.store.Load(context.Background())
		require.NoError(t, err)
		for _, a := range s.Alarms {
			if a.Extensions["alertname"] == "O2IMSNetBoxErrors" {
				return a
			}
		}
		return nil
	}
	require.Eventually(t, func() bool { return alarm() != nil }, 60*time.Second, 100*time.Millisecond, "no alarm from Alertmanager's webhook")
	a := alarm()
	require.True(t, a.Active())
	require.Equal(t, alarms.SeverityWarning, a.Severity)
	require.Equal(t, alarms.AlertFiring.ID(), a.DefinitionID)

	postAlert(t, am, labels, time.Now().Add(-time.Second))
	require.Eventually(t, func() bool { a := alarm(); return a != nil && !a.Active() }, 60*time.Second, 100*time.Millisecond,
		"the alarm did not clear when the alert resolved")
	require.Equal(t, []string{"0 PrometheusAlertFiring", "2 PrometheusAlertFiring"}, waitAlarmEvents(t, r, 2))
}
