package hydra

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// PKI is a test CA: it issues the SMO's server certificates (127.0.0.1, localhost) and the O-Cloud's client
// certificates, and writes them where a configuration names files.
type PKI struct {
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	Pool   *x509.CertPool
	CAFile string // the CA certificate, PEM
	dir    string
}

// NewPKI makes a CA named cn.
func NewPKI(t testing.TB, cn string) *PKI {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	p := &PKI{cert: cert, key: key, Pool: x509.NewCertPool(), dir: t.TempDir()}
	p.Pool.AddCert(cert)
	p.CAFile = filepath.Join(p.dir, "ca.pem")
	require.NoError(t, os.WriteFile(p.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	return p
}

func (p *PKI) issue(t testing.TB, cn string, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	if usage == x509.ExtKeyUsageServerAuth {
		tmpl.IPAddresses, tmpl.DNSNames = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, []string{"localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.cert, &key.PublicKey, p.key)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// Server is a server certificate for loopback.
func (p *PKI) Server(t testing.TB) tls.Certificate {
	return p.issue(t, "smo", x509.ExtKeyUsageServerAuth)
}

// WriteClient issues a client certificate for cn into certFile and keyFile (replaced in place, as a
// mounted Secret is).
func (p *PKI) WriteClient(t testing.TB, cn, certFile, keyFile string) {
	t.Helper()
	c := p.issue(t, cn, x509.ExtKeyUsageClientAuth)
	keyDER, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600))
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}), 0o600))
}

// MutualTLS is a server configuration requiring a client certificate this CA issued.
func (p *PKI) MutualTLS(t testing.TB) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{p.Server(t)}, ClientAuth: tls.RequireAndVerifyClientCert,
		ClientCAs: p.Pool, MinVersion: tls.VersionTLS12}
}
