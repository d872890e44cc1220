package smoclient

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Config is the O-Cloud's outgoing identity towards the SMO (SMO_OAUTH_*, SMO_TLS_*, SMO_CA_FILE). Every
// part is optional: without a token URL no token is sent, without a certificate none is presented.
type Config struct {
	TokenURL   string   // SMO_OAUTH_TOKEN_URL: the authorization server's token endpoint
	ClientID   string   // SMO_OAUTH_CLIENT_ID
	SecretFile string   // SMO_OAUTH_CLIENT_SECRET_FILE: re-read at each token request (a rotated Secret)
	Scopes     []string // SMO_OAUTH_SCOPES (space or comma separated)
	Audience   string   // SMO_OAUTH_AUDIENCE: sent as the token request's "audience" parameter

	CertFile, KeyFile string   // SMO_TLS_CERT_FILE, SMO_TLS_KEY_FILE: the client certificate, reloaded on change
	CAFiles           []string // SMO_CA_FILE (and CALLBACK_CA_FILE, internal/app adds it): trusted besides the system's roots, reloaded on change

	RegistrationURL string // SMO_REGISTRATION_URL: where the OCloud Available Notification goes (registration.go)
}

// OAuth says whether a token is sent.
func (c Config) OAuth() bool { return c.TokenURL != "" }

// ConfigFromEnv reads the configuration; a bad value is one line naming the variable.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	c := Config{
		TokenURL: get("SMO_OAUTH_TOKEN_URL"), ClientID: get("SMO_OAUTH_CLIENT_ID"),
		SecretFile: get("SMO_OAUTH_CLIENT_SECRET_FILE"), Audience: get("SMO_OAUTH_AUDIENCE"),
		Scopes:   strings.FieldsFunc(get("SMO_OAUTH_SCOPES"), func(r rune) bool { return r == ',' || r == ' ' }),
		CertFile: get("SMO_TLS_CERT_FILE"), KeyFile: get("SMO_TLS_KEY_FILE"),
		RegistrationURL: get("SMO_REGISTRATION_URL"),
	}
	if f := get("SMO_CA_FILE"); f != "" {
		c.CAFiles = []string{f}
	}
	return c, c.validate()
}

func (c Config) validate() error {
	if c.TokenURL == "" {
		if c.ClientID != "" || c.SecretFile != "" || len(c.Scopes) > 0 || c.Audience != "" {
			return fmt.Errorf("SMO_OAUTH_CLIENT_ID, _CLIENT_SECRET_FILE, _SCOPES and _AUDIENCE need SMO_OAUTH_TOKEN_URL")
		}
	} else {
		u, err := url.Parse(c.TokenURL)
		if err != nil || u.Host == "" || !(u.Scheme == "https" || u.Scheme == "http" && loopback(u.Hostname())) {
			return fmt.Errorf("SMO_OAUTH_TOKEN_URL=%q: want an https:// URL (http:// only on loopback)", c.TokenURL)
		}
		if c.ClientID == "" || c.SecretFile == "" {
			return fmt.Errorf("SMO_OAUTH_TOKEN_URL needs SMO_OAUTH_CLIENT_ID and SMO_OAUTH_CLIENT_SECRET_FILE")
		}
	}
	if c.RegistrationURL != "" {
		if u, err := url.Parse(c.RegistrationURL); err != nil || u.Host == "" || !(u.Scheme == "https" || u.Scheme == "http" && loopback(u.Hostname())) {
			return fmt.Errorf("SMO_REGISTRATION_URL=%q: want an https:// URL (http:// only on loopback)", c.RegistrationURL)
		}
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return fmt.Errorf("SMO_TLS_CERT_FILE and SMO_TLS_KEY_FILE go together")
	}
	return nil
}

// loopback: host is a loopback address or "localhost" (plain http stays on this machine).
func loopback(host string) bool {
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback()
	}
	return strings.EqualFold(host, "localhost")
}
