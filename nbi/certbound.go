package nbi

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
)

// bind enforces RFC 8705 §3 for a token bound to a certificate (a cnf claim): its x5t#S256 must be the
// SHA-256 thumbprint of the client certificate presented on this connection (NBI_TLS_CLIENT_CA_FILE has
// verified it). With OAUTH_CERT_BOUND every OAuth token must be bound. Checked on every request, never
// cached: the token is the same on another connection, the certificate may not be.
func (a *authenticator) bind(r *http.Request, id identity) error {
	if id.Authenticator != AuthOAuth || (!id.bound && !a.certBound) {
		return nil
	}
	if id.x5t == "" {
		return invalidToken("the token is not bound to a client certificate (cnf x5t#S256)")
	}
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return invalidToken("the token is bound to a client certificate and none was presented")
	}
	sum := sha256.Sum256(r.TLS.PeerCertificates[0].Raw)
	got := base64.RawURLEncoding.EncodeToString(sum[:])
	if subtle.ConstantTimeCompare([]byte(got), []byte(id.x5t)) != 1 {
		return invalidToken("the token is bound to another client certificate")
	}
	return nil
}

// Thumbprint is a certificate's x5t#S256 (RFC 8705 §3.1): base64url of the SHA-256 of its DER.
func Thumbprint(der []byte) string {
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
