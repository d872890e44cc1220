package nbi

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"

	"go.uber.org/zap"

	"github.com/o2ims-operator/o2ims-operator/internal/certfile"
)

// caReloader holds the CAs client certificates are verified against (NBI_TLS_CLIENT_CA_FILE) and reads
// the file again when it changes, as certfile.KeyPair does for the serving pair: a rotated CA bundle needs
// no restart, and a bundle caught half-written keeps the previous one in service.
type caReloader struct {
	file string
	log  *zap.Logger

	mu     sync.Mutex
	pool   *x509.CertPool
	stamp  certfile.Stamp
	failed certfile.Stamp
}

func newCAReloader(file string, log *zap.Logger) (*caReloader, error) {
	c := &caReloader{file: file, log: log}
	stamp, err := certfile.StampOf(file)
	if err == nil {
		err = c.load(stamp)
	}
	if err != nil {
		return nil, fmt.Errorf("NBI_TLS_CLIENT_CA_FILE: %w", err)
	}
	return c, nil
}

func (c *caReloader) load(stamp certfile.Stamp) error {
	pem, err := os.ReadFile(c.file)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return errors.New("no PEM certificate in the file")
	}
	c.pool, c.stamp = pool, stamp
	return nil
}

// current is the pool to verify a handshake with: a stat per handshake, a reload when the file changed.
func (c *caReloader) current() *x509.CertPool {
	stamp, err := certfile.StampOf(c.file)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		return c.pool
	}
	if stamp == c.stamp || stamp == c.failed {
		return c.pool
	}
	if err := c.load(stamp); err != nil {
		c.failed = stamp
		c.log.Warn("the changed client CA file could not be loaded; verifying with the previous CAs",
			zap.String("file", c.file), zap.Error(err))
		return c.pool
	}
	c.log.Info("client CA file reloaded", zap.String("file", c.file))
	return c.pool
}

// tlsConfig is the listener's TLS: the served certificate (reloaded), and with client CAs every client
// must present a certificate they verify — refused in the handshake otherwise, before any HTTP.
func (s *Server) tlsConfig() *tls.Config {
	base := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: s.certs.GetCertificate}
	if s.clientCAs == nil {
		return base
	}
	base.ClientAuth = tls.RequireAndVerifyClientCert
	base.ClientCAs = s.clientCAs.current()
	base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		c := base.Clone()
		c.GetConfigForClient = nil
		c.ClientCAs = s.clientCAs.current()
		return c, nil
	}
	return base
}
