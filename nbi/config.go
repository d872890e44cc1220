package nbi

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Auth modes of the northbound API.
const (
	// AuthNone serves every caller with the operator's own permissions; safe only on loopback, which is
	// why NBI_HOST defaults to 127.0.0.1 (kubectl port-forward then applies the caller's own RBAC).
	AuthNone = "none"
	// AuthKubernetes checks each bearer token with a TokenReview and each operation with a
	// SubjectAccessReview, so a caller acts under its own RBAC.
	AuthKubernetes = "kubernetes"
	// AuthOAuth validates OAuth 2.0 JWT access tokens (RFC 9068) locally against the issuer's keys
	// (OAUTH_* variables); each operation is authorised with the same SubjectAccessReview model.
	AuthOAuth = "oauth"
)

// Defaults of the NBI_* environment.
const (
	DefaultHost            = "127.0.0.1"
	DefaultPort            = 5000
	DefaultShutdownTimeout = 3 * time.Second
	DefaultAPITimeout      = 10 * time.Second
	DefaultPageSize        = 1000
	DefaultAuthRate        = 10
	DefaultAuthBurst       = 50
	DefaultUsernameClaim   = "sub"
	DefaultGroupsClaim     = "groups"
	DefaultJWKSRefresh     = 5 * time.Minute
	DefaultIdleTimeout     = 2 * time.Minute
)

// Config is the northbound API's configuration; ConfigFromEnv reads it from NBI_* variables.
type Config struct {
	Host            string        // NBI_HOST, default "127.0.0.1" (loopback: it acts with the operator's SA)
	Port            int           // NBI_PORT, default 5000 (0 = any free port, for tests)
	ShutdownTimeout time.Duration // NBI_SHUTDOWN_TIMEOUT seconds, default 3
	APITimeout      time.Duration // NBI_API_TIMEOUT seconds, default 10: bound of each API-server call
	// NBI_AUTH: "" / "none" (default), or a comma list of "kubernetes" and "oauth": the first that
	// recognises a token decides.
	Auth        string
	TLSCertFile string // NBI_TLS_CERT_FILE; with TLSKeyFile, reloaded when the files change
	TLSKeyFile  string // NBI_TLS_KEY_FILE
	// NBI_TLS_CLIENT_CA_FILE: client certificates required and verified against it (reloaded on change).
	ClientCAFile string
	// NBI_TOKEN_AUDIENCES: the audiences a Kubernetes token must be minted for (default o2ims-nbi).
	TokenAudiences []string
	// NBI_AUTH_RATE / NBI_AUTH_BURST: authentication attempts per second per client address (0: no
	// limit), and the burst; tokens answered from the cache are not counted.
	AuthRate  float64
	AuthBurst int
	OAuth     OAuthConfig
	PageSize  int // NBI_PAGE_SIZE, default 1000: most items in one list answer
	// IdleTimeout closes a keep-alive connection idle this long (not read from the environment: default
	// DefaultIdleTimeout; tests shorten it).
	IdleTimeout time.Duration
	// Chain is what the provisioning chain accepts beyond a body's shape; the operator sets it (it is not
	// read from the environment) so the NBI refuses with 400 what the chain would fail.
	Chain ChainRules
}

// ChainRules are the provisioning chain's rules that depend on how the operator runs (the provisioning
// API refuses with them what the chain would fail).
type ChainRules struct {
	// Reserved are the selector keys the inventory owns (the chain refuses them in hosts[].selector).
	Reserved map[string]bool
	// Inventory tells whether hosts may be requested at all (NETBOX_URL is set).
	Inventory bool
}

// DefaultConfig is the configuration with no NBI_* variable set.
func DefaultConfig() Config {
	return Config{
		Host:            DefaultHost,
		Port:            DefaultPort,
		ShutdownTimeout: DefaultShutdownTimeout,
		APITimeout:      DefaultAPITimeout,
		Auth:            AuthNone,
		PageSize:        DefaultPageSize,
		TokenAudiences:  []string{DefaultTokenAudience},
		AuthRate:        DefaultAuthRate,
		AuthBurst:       DefaultAuthBurst,
		OAuth: OAuthConfig{UsernameClaim: DefaultUsernameClaim, GroupsClaim: DefaultGroupsClaim,
			Algorithms: DefaultSigningAlgorithms, JWKSRefresh: DefaultJWKSRefresh},
	}
}

// ConfigFromEnv reads the NBI_* variables through getenv (os.Getenv in the operator). An empty variable
// takes its default; a bad value is an error of one line naming the variable.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	cfg := DefaultConfig()
	get := func(name string) string { return strings.TrimSpace(getenv(name)) }

	if v := get("NBI_HOST"); v != "" {
		cfg.Host = v
	}
	if v := get("NBI_PORT"); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p < 0 || p > 65535 {
			return Config{}, fmt.Errorf("NBI_PORT=%q: want a port number from 0 to 65535", v)
		}
		cfg.Port = p
	}
	var err error
	if cfg.ShutdownTimeout, err = seconds(get, "NBI_SHUTDOWN_TIMEOUT", cfg.ShutdownTimeout); err != nil {
		return Config{}, err
	}
	if cfg.APITimeout, err = seconds(get, "NBI_API_TIMEOUT", cfg.APITimeout); err != nil {
		return Config{}, err
	}
	if v := get("NBI_AUTH"); v != "" {
		cfg.Auth = strings.ToLower(v)
	}
	cfg.TLSCertFile, cfg.TLSKeyFile = get("NBI_TLS_CERT_FILE"), get("NBI_TLS_KEY_FILE")
	cfg.ClientCAFile = get("NBI_TLS_CLIENT_CA_FILE")
	if v := list(get("NBI_TOKEN_AUDIENCES")); v != nil {
		cfg.TokenAudiences = v
	}
	if err := cfg.authFromEnv(get); err != nil {
		return Config{}, err
	}
	if v := get("NBI_PAGE_SIZE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return Config{}, fmt.Errorf("NBI_PAGE_SIZE=%q: want a positive integer", v)
		}
		cfg.PageSize = n
	}
	if err := cfg.validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// seconds reads a positive number of seconds (fractions allowed, e.g. 0.5).
func seconds(get func(string) string, name string, def time.Duration) (time.Duration, error) {
	v := get(name)
	if v == "" {
		return def, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f > 0) || f > 86400 {
		return 0, fmt.Errorf("%s=%q: want a positive number of seconds (at most 86400)", name, v)
	}
	return time.Duration(f * float64(time.Second)), nil
}

// validate checks a Config however it was built (the operator may fill one in itself); each message
// names the variable the field comes from.
func (c Config) validate() error {
	if c.Host == "" {
		return fmt.Errorf("NBI_HOST is empty: want a host name or IP address to listen on")
	}
	if strings.ContainsAny(c.Host, " /") || (strings.Contains(c.Host, ":") && net.ParseIP(c.Host) == nil) {
		return fmt.Errorf("NBI_HOST=%q: want a host name or IP address, without a port", c.Host)
	}
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("NBI_PORT=%d: want a port number from 0 to 65535", c.Port)
	}
	if c.ShutdownTimeout <= 0 {
		return fmt.Errorf("NBI_SHUTDOWN_TIMEOUT=%s: want a positive number of seconds", c.ShutdownTimeout)
	}
	if c.APITimeout <= 0 {
		return fmt.Errorf("NBI_API_TIMEOUT=%s: want a positive number of seconds", c.APITimeout)
	}
	if err := c.validateAuth(); err != nil {
		return err
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return fmt.Errorf("NBI_TLS_CERT_FILE and NBI_TLS_KEY_FILE: set both or neither (cert %q, key %q)",
			c.TLSCertFile, c.TLSKeyFile)
	}
	if c.ClientCAFile != "" && c.TLSCertFile == "" {
		return fmt.Errorf("NBI_TLS_CLIENT_CA_FILE needs NBI_TLS_CERT_FILE and NBI_TLS_KEY_FILE (client certificates need TLS)")
	}
	if c.PageSize < 1 {
		return fmt.Errorf("NBI_PAGE_SIZE=%d: want a positive integer", c.PageSize)
	}
	return nil
}

// withDefaults fills the zero fields a caller left out (Port excepted: 0 asks for any free port).
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Host == "" {
		c.Host = d.Host
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = d.ShutdownTimeout
	}
	if c.APITimeout == 0 {
		c.APITimeout = d.APITimeout
	}
	if c.Auth == "" {
		c.Auth = AuthNone
	}
	if len(c.TokenAudiences) == 0 {
		c.TokenAudiences = d.TokenAudiences
	}
	if c.AuthRate == 0 && c.AuthBurst == 0 {
		c.AuthRate, c.AuthBurst = d.AuthRate, d.AuthBurst
	}
	c.OAuth = c.OAuth.withDefaults(d.OAuth)
	if c.PageSize == 0 {
		c.PageSize = d.PageSize
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	return c
}

// CallTimeout bounds one API-server call by APITimeout.
func (c Config) CallTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.APITimeout)
}

// authEnabled reports whether callers are authenticated and authorised against the API server.
func (c Config) authEnabled() bool { return len(c.authModes()) > 0 }
