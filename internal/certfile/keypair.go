// Package certfile serves TLS material from files that are replaced in place (cert-manager, mounted
// Secrets): each handshake stats the files and reads them again when they changed, so a rotated
// certificate needs no restart, and a pair caught half-written keeps the previous one in service.
package certfile

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Stamp tells a file's version apart: a replaced file has another time or size.
type Stamp struct {
	mod  time.Time
	size int64
}

// StampOf is file's stamp now.
func StampOf(file string) (Stamp, error) {
	fi, err := os.Stat(file)
	if err != nil {
		return Stamp{}, err
	}
	return Stamp{fi.ModTime(), fi.Size()}, nil
}

// KeyPair is a certificate and its key read from two files, read again at the handshake after either
// changed. Both a server (GetCertificate) and a client (GetClientCertificate) use it.
type KeyPair struct {
	certFile, keyFile string
	what              string // how the log names it ("TLS certificate", "SMO client certificate")
	log               *zap.Logger

	mu     sync.Mutex
	cert   *tls.Certificate
	stamp  [2]Stamp // of the files cert came from
	failed [2]Stamp // of the last pair that failed to load, so a failure is logged once
}

// NewKeyPair reads the pair now: a pair that cannot be loaded at start is an error naming settings (the
// variables that chose the files).
func NewKeyPair(certFile, keyFile, settings, what string, log *zap.Logger) (*KeyPair, error) {
	k := &KeyPair{certFile: certFile, keyFile: keyFile, what: what, log: log}
	s, err := k.stamps()
	if err == nil {
		err = k.load(s)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", settings, err)
	}
	return k, nil
}

func (k *KeyPair) stamps() ([2]Stamp, error) {
	var s [2]Stamp
	for i, f := range []string{k.certFile, k.keyFile} {
		st, err := StampOf(f)
		if err != nil {
			return s, err
		}
		s[i] = st
	}
	return s, nil
}

// load reads the pair; called with mu held (or before the pair is shared).
func (k *KeyPair) load(s [2]Stamp) error {
	cert, err := tls.LoadX509KeyPair(k.certFile, k.keyFile)
	if err != nil {
		return err
	}
	k.cert, k.stamp = &cert, s
	return nil
}

// current is the certificate to present: a stat of both files, a reload when they changed.
func (k *KeyPair) current() *tls.Certificate {
	s, err := k.stamps()
	k.mu.Lock()
	defer k.mu.Unlock()
	if err != nil || s == k.stamp || s == k.failed {
		return k.cert
	}
	if err := k.load(s); err != nil {
		k.failed = s
		k.log.Warn("the changed "+k.what+" could not be loaded; presenting the previous one",
			zap.String("certFile", k.certFile), zap.String("keyFile", k.keyFile), zap.Error(err))
		return k.cert
	}
	k.log.Info(k.what+" reloaded", zap.String("certFile", k.certFile))
	return k.cert
}

// GetCertificate is the server's tls.Config hook.
func (k *KeyPair) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return k.current(), nil
}

// GetClientCertificate is the client's tls.Config hook.
func (k *KeyPair) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return k.current(), nil
}
