package nbi

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"
)

// certReloader serves the certificate in a pair of files and reads them again when either changes
// (cert-manager and mounted Secrets replace them in place), so a renewed certificate needs no restart.
// A pair that cannot be loaded (e.g. caught half-written) keeps the previous certificate in service.
type certReloader struct {
	certFile, keyFile string
	log               *zap.Logger

	mu     sync.Mutex
	cert   *tls.Certificate
	stamp  [2]fileStamp // of the files the served certificate came from
	failed [2]fileStamp // of the last pair that failed to load, so a failure is logged once
}

type fileStamp struct {
	mod  time.Time
	size int64
}

func newCertReloader(certFile, keyFile string, log *zap.Logger) (*certReloader, error) {
	c := &certReloader{certFile: certFile, keyFile: keyFile, log: log}
	stamp, err := c.stamps()
	if err == nil {
		err = c.load(stamp)
	}
	if err != nil {
		return nil, fmt.Errorf("NBI_TLS_CERT_FILE/NBI_TLS_KEY_FILE: %w", err)
	}
	return c, nil
}

func (c *certReloader) stamps() ([2]fileStamp, error) {
	var s [2]fileStamp
	for i, f := range []string{c.certFile, c.keyFile} {
		fi, err := os.Stat(f)
		if err != nil {
			return s, err
		}
		s[i] = fileStamp{fi.ModTime(), fi.Size()}
	}
	return s, nil
}

// load reads the pair; called with mu held (or before the reloader is shared).
func (c *certReloader) load(stamp [2]fileStamp) error {
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return err
	}
	c.cert, c.stamp = &cert, stamp
	return nil
}

// GetCertificate is the tls.Config hook: a stat of both files per handshake, a reload when they changed.
func (c *certReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	stamp, err := c.stamps()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil || stamp == c.stamp || stamp == c.failed {
		return c.cert, nil
	}
	if err := c.load(stamp); err != nil {
		c.failed = stamp
		c.log.Warn("the changed TLS certificate could not be loaded; serving the previous one",
			zap.String("certFile", c.certFile), zap.String("keyFile", c.keyFile), zap.Error(err))
		return c.cert, nil
	}
	c.log.Info("TLS certificate reloaded", zap.String("certFile", c.certFile))
	return c.cert, nil
}
