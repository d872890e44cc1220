package nbi_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/tests/hydra"
	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
)

// testCA issues client certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newCA(t *testing.T, cn string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// client issues a client certificate for cn.
func (ca *testCA) client(t *testing.T, cn string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// Mutual TLS: a client without a certificate of the configured CAs is refused in the handshake, before
// any HTTP; the CA file is reloaded when it changes. With OAUTH_CERT_BOUND a token must be bound to the
// certificate presented (RFC 8705): unbound (Hydra's own) and bound to another certificate are 401.
func TestMutualTLSAndCertificateBoundTokens(t *testing.T) {
	h := hydra.Start(t)
	trusted := rsaKey(t)
	h.ImportKey(t, "test-bound", trusted)
	dir := t.TempDir()
	certFile, keyFile, serverPool := writeCert(t, dir, "nbi")
	ca, otherCA := newCA(t, "smo-ca"), newCA(t, "other-ca")
	caFile := filepath.Join(dir, "client-ca.crt")
	require.NoError(t, os.WriteFile(caFile, ca.pem, 0o600))
	e := oauthEnv(t, h, nbi.AuthOAuth, func(c *nbi.Config) {
		c.TLSCertFile, c.TLSKeyFile, c.ClientCAFile = certFile, keyFile, caFile
		c.OAuth.CertBound = true
	})
	clientWith := func(certs ...tls.Certificate) *http.Client {
		return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs: serverPool, Certificates: certs, MinVersion: tls.VersionTLS12}}}
	}
	get := func(c *http.Client, token string) (*http.Response, error) {
		req, err := http.NewRequest(http.MethodGet, e.Base+nbitest.CollectionPath, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return resp, err
	}
	smo, smo2, stranger := ca.client(t, "smo"), ca.client(t, "smo-2"), otherCA.client(t, "stranger")

	_, err := get(clientWith(), "x")
	require.Error(t, err, "no client certificate: refused in the handshake")
	_, err = get(clientWith(stranger), "x")
	require.Error(t, err, "a certificate of another CA: refused in the handshake")
	_, err = e.Srv.Probe(t.Context())
	require.NoError(t, err, "the probe's refused handshake proves serving")

	c := h.CreateClient(t, "smo-mtls", []string{"role:o2ims-reader"}, []string{audience})
	unbound := h.Token(t, c, []string{"role:o2ims-reader"}, []string{audience})
	claims := forged(hydra.Claims(t, unbound)["iss"].(string), "role:o2ims-reader")
	claims["cnf"] = map[string]any{"x5t#S256": nbi.Thumbprint(smo.Leaf.Raw)}
	bound := hydra.Sign(t, trusted, "test-bound", jose.RS256, claims)

	resp, err := get(clientWith(smo), unbound)
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "OAUTH_CERT_BOUND: an unbound token is refused")
	resp, err = get(clientWith(smo), bound)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "bound to the certificate presented")
	resp, err = get(clientWith(smo2), bound)
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "bound to another certificate (the token is cached: checked anyway)")

	// The CA file is replaced: the other CA's clients are let in, the first's refused.
	time.Sleep(10 * time.Millisecond) // a distinct modification time
	require.NoError(t, os.WriteFile(caFile, append(otherCA.pem, '\n'), 0o600))
	_, err = get(clientWith(stranger), unbound)
	require.NoError(t, err, "the reloaded CA verifies the other CA's client")
	_, err = get(clientWith(smo), bound)
	require.Error(t, err, "the replaced CA no longer verifies")
}
