package smoclient

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync"

	"go.uber.org/zap"

	"github.com/o2ims-operator/o2ims-operator/internal/certfile"
)

// trust is the CAs the SMO's certificates are verified against: the system's roots and the CA files,
// read again when one changes. A tls.Config cannot change its roots once in use, so a change is a new
// transport (a clone of the first with the new roots): new connections verify against the new CAs.
type trust struct {
	files []string
	log   *zap.Logger

	mu     sync.Mutex
	pool   *x509.CertPool
	stamps []certfile.Stamp
	failed []certfile.Stamp
}

func newTrust(files []string, log *zap.Logger) (*trust, error) {
	t := &trust{files: files, log: log}
	s, err := t.stampsNow()
	if err == nil {
		err = t.load(s)
	}
	if err != nil {
		return nil, fmt.Errorf("SMO_CA_FILE: %w", err)
	}
	return t, nil
}

func (t *trust) stampsNow() ([]certfile.Stamp, error) {
	s := make([]certfile.Stamp, len(t.files))
	for i, f := range t.files {
		st, err := certfile.StampOf(f)
		if err != nil {
			return nil, err
		}
		s[i] = st
	}
	return s, nil
}

func (t *trust) load(s []certfile.Stamp) error {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	for _, f := range t.files {
		pem, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("%s holds no PEM certificate", f)
		}
	}
	t.pool, t.stamps = pool, s
	return nil
}

// current is the pool to verify with now, and the stamps it came from (a change of them: a new pool).
func (t *trust) current() (*x509.CertPool, []certfile.Stamp) {
	s, err := t.stampsNow()
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil || slices.Equal(s, t.stamps) || slices.Equal(s, t.failed) {
		return t.pool, t.stamps
	}
	if err := t.load(s); err != nil {
		t.failed = s
		t.log.Warn("the changed SMO CA file could not be loaded; trusting the previous CAs", zap.Error(err))
		return t.pool, t.stamps
	}
	t.log.Info("SMO CA file reloaded")
	return t.pool, t.stamps
}

// trusting sends through a clone of base whose roots are trust's current pool, renewed when it changes.
type trusting struct {
	base  *http.Transport
	trust *trust

	mu    sync.Mutex
	cur   *http.Transport
	stamp []certfile.Stamp
}

func (t *trusting) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.transport().RoundTrip(req)
}

func (t *trusting) transport() *http.Transport {
	pool, s := t.trust.current()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cur != nil && slices.Equal(s, t.stamp) {
		return t.cur
	}
	next := t.base.Clone()
	next.TLSClientConfig.RootCAs = pool
	if t.cur != nil {
		t.cur.CloseIdleConnections() // kept connections were verified against the old CAs
	}
	t.cur, t.stamp = next, s
	return next
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the transport in use.
func (t *trusting) CloseIdleConnections() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cur != nil {
		t.cur.CloseIdleConnections()
	}
}
