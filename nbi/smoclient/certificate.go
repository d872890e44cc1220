package smoclient

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"
)

// certificate is the client certificate presented to the SMO (and its token endpoint), read from a pair
// of files again whenever either changes (cert-manager and mounted Secrets replace them in place), at the
// handshake that needs it. A pair caught half-written keeps the previous certificate in service.
type certificate struct {
	certFile, keyFile string
	log               *zap.Logger

	mu     sync.Mutex
	cert   *tls.Certificate
	stamp  [2]stamp // of the files cert came from
	failed [2]stamp // of the last pair that failed to load, so a failure is logged once
}

// stamp tells a file's version apart: a replaced file has another time or size.
type stamp struct {
	mod  time.Time
	size int64
}

func stampOf(file string) (stamp, error) {
	fi, err := os.Stat(file)
	if err != nil {
		return stamp{}, err
	}
	return stamp{fi.ModTime(), fi.Size()}, nil
}

func newCertificate(certFile, keyFile string, log *zap.Logger) (*certificate, error) {
	c := &certificate{certFile: certFile, keyFile: keyFile, log: log}
	s, err := c.stamps()
	if err == nil {
		err = c.load(s)
	}
	if err != nil {
		return nil, fmt.Errorf("SMO_TLS_CERT_FILE/SMO_TLS_KEY_FILE: %w", err)
	}
	return c, nil
}

func (c *certificate) stamps() ([2]stamp, error) {
	var s [2]stamp
	for i, f := range []string{c.certFile, c.keyFile} {
		st, err := stampOf(f)
		if err != nil {
			return s, err
		}
		s[i] = st
	}
	return s, nil
}

// load reads the pair; called with mu held (or before the certificate is shared).
func (c *certificate) load(s [2]stamp) error {
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return err
	}
	c.cert, c.stamp = &cert, s
	return nil
}

// GetClientCertificate is the tls.Config hook: a stat of both files per handshake, a reload when they
// changed.
func (c *certificate) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	s, err := c.stamps()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil || s == c.stamp || s == c.failed {
		return c.cert, nil
	}
	if err := c.load(s); err != nil {
		c.failed = s
		c.log.Warn("the changed SMO client certificate could not be loaded; presenting the previous one",
			zap.String("certFile", c.certFile), zap.Error(err))
		return c.cert, nil
	}
	c.log.Info("SMO client certificate reloaded", zap.String("certFile", c.certFile))
	return c.cert, nil
}
