package netbox

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/o2ims-operator/o2ims-operator/netbox/selector"
)

// Environment variables read by ConfigFromEnv.
const (
	EnvURL             = "NETBOX_URL"
	EnvTokenFile       = "NETBOX_TOKEN_FILE"
	EnvCAFile          = "NETBOX_CA_FILE"
	EnvAllowHTTP       = "NETBOX_ALLOW_HTTP"
	EnvTimeout         = "NETBOX_TIMEOUT"
	EnvFieldManaged    = "NETBOX_FIELD_MANAGED"
	EnvFieldRequestUID = "NETBOX_FIELD_REQUEST_UID"
	EnvFieldBMCAddress = "NETBOX_FIELD_BMC_ADDRESS"
	EnvFieldBootMAC    = "NETBOX_FIELD_BOOT_MAC"
)

// DefaultTimeout bounds each HTTP attempt against NetBox.
const DefaultTimeout = 10 * time.Second

// maxTimeout keeps a typo (NETBOX_TIMEOUT=6000) from hanging reconciles.
const maxTimeout = 5 * time.Minute

// FieldNames are the fixed NetBox custom fields on dcim.device. The provider
// creates them; the client only checks them.
type FieldNames struct {
	Managed    string // boolean pool flag; only JSON true counts
	RequestUID string // text; empty/null/absent = unowned
	BMCAddress string // text or URL; Metal3 BMC address
	BootMAC    string // text; boot NIC MAC
}

// DefaultFieldNames returns o2ims_managed, o2ims_request_uid, o2ims_bmc_address, o2ims_boot_mac.
func DefaultFieldNames() FieldNames {
	return FieldNames{
		Managed:    "o2ims_managed",
		RequestUID: "o2ims_request_uid",
		BMCAddress: "o2ims_bmc_address",
		BootMAC:    "o2ims_boot_mac",
	}
}

// reserved lists the four fixed names; they can never be selector keys.
func (f FieldNames) reserved() map[string]bool {
	return map[string]bool{f.Managed: true, f.RequestUID: true, f.BMCAddress: true, f.BootMAC: true}
}

// Config is the client configuration.
type Config struct {
	URL       string        // NETBOX_URL: origin only (scheme://host[:port]); https unless AllowHTTP
	TokenFile string        // NETBOX_TOKEN_FILE: read on every request, so a rotated token is picked up
	CAFile    string        // NETBOX_CA_FILE: optional PEM bundle added to the system roots
	AllowHTTP bool          // NETBOX_ALLOW_HTTP=true: plain http for tests / local runs only
	Timeout   time.Duration // NETBOX_TIMEOUT (seconds): per HTTP attempt, default 10s
	Fields    FieldNames    // NETBOX_FIELD_*: fixed custom field names
	// WriteFence, when set, is asked before every write (POST, PUT, PATCH, DELETE): an error keeps it
	// unsent (KindFenced). The operator sets it to its leader fence, so a replica that is not (or no
	// longer) the leader changes nothing in NetBox; nil (the bootstrap command) writes freely.
	WriteFence func() error
}

// ConfigFromEnv reads the NETBOX_* variables. ok is false when NETBOX_URL is
// unset or blank (NetBox not configured). A bad value gives a one-line error
// naming the variable.
func ConfigFromEnv(getenv func(string) string) (cfg Config, ok bool, err error) {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	if get(EnvURL) == "" {
		return Config{}, false, nil
	}
	cfg = Config{
		URL:       get(EnvURL),
		TokenFile: get(EnvTokenFile),
		CAFile:    get(EnvCAFile),
		Timeout:   DefaultTimeout,
		Fields:    DefaultFieldNames(),
	}
	if v := get(EnvAllowHTTP); v != "" {
		b, perr := strconv.ParseBool(v)
		if perr != nil {
			return Config{}, true, configErr("%s must be true or false", EnvAllowHTTP)
		}
		cfg.AllowHTTP = b
	}
	if v := get(EnvTimeout); v != "" {
		n, perr := strconv.Atoi(v)
		if perr != nil || n <= 0 {
			return Config{}, true, configErr("%s must be a positive whole number of seconds", EnvTimeout)
		}
		cfg.Timeout = time.Duration(n) * time.Second
	}
	for env, dst := range map[string]*string{
		EnvFieldManaged:    &cfg.Fields.Managed,
		EnvFieldRequestUID: &cfg.Fields.RequestUID,
		EnvFieldBMCAddress: &cfg.Fields.BMCAddress,
		EnvFieldBootMAC:    &cfg.Fields.BootMAC,
	} {
		if v := get(env); v != "" {
			*dst = v
		}
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, true, err
	}
	return cfg, true, nil
}

// Validate checks the configuration; errors name the environment variable.
func (c Config) Validate() error {
	if _, err := c.origin(); err != nil {
		return err
	}
	if strings.TrimSpace(c.TokenFile) == "" {
		return configErr("%s must name the file holding the NetBox API token", EnvTokenFile)
	}
	if c.Timeout < 0 || c.Timeout > maxTimeout {
		return configErr("%s must be between 1 and %d seconds", EnvTimeout, int(maxTimeout/time.Second))
	}
	names := []struct{ env, v string }{
		{EnvFieldManaged, c.Fields.Managed},
		{EnvFieldRequestUID, c.Fields.RequestUID},
		{EnvFieldBMCAddress, c.Fields.BMCAddress},
		{EnvFieldBootMAC, c.Fields.BootMAC},
	}
	seen := map[string]string{}
	for _, n := range names {
		if !selector.IsFieldName(n.v) {
			return configErr("%s must be a NetBox custom field name (lowercase letters, digits, underscores; at most 50)", n.env)
		}
		if other, dup := seen[n.v]; dup {
			return configErr("%s and %s name the same custom field", other, n.env)
		}
		seen[n.v] = n.env
	}
	return nil
}

// origin parses URL: scheme://host[:port] with nothing else, https unless AllowHTTP.
// The value itself is never echoed: it could carry user:password@.
func (c Config) origin() (*url.URL, error) {
	raw := strings.TrimSpace(c.URL)
	if raw == "" {
		return nil, configErr("%s is empty", EnvURL)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return nil, configErr("%s must look like https://netbox.example.com[:port]", EnvURL)
	}
	if u.User != nil {
		return nil, configErr("%s must not contain credentials; use %s", EnvURL, EnvTokenFile)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return nil, configErr("%s must be an origin only (scheme://host[:port]), without path, query or fragment", EnvURL)
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		if !c.AllowHTTP {
			return nil, configErr("%s must use https (set %s=true only for tests or a local run)", EnvURL, EnvAllowHTTP)
		}
	default:
		return nil, configErr("%s must use https", EnvURL)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, configErr("%s has an invalid port", EnvURL)
		}
	}
	if h := strings.TrimSuffix(strings.ToLower(u.Hostname()), "."); h == "invalid" || strings.HasSuffix(h, ".invalid") {
		// RFC 6761: never resolves. The shipped manifests' placeholder is one, so that forgetting to set it
		// is this line at start, not an outage that never ends.
		return nil, configErr("%s names a host under .invalid, which never resolves (the manifests' placeholder?): set it to your NetBox", EnvURL)
	}
	return &url.URL{Scheme: strings.ToLower(u.Scheme), Host: u.Host}, nil
}

func configErr(format string, args ...any) *Error {
	return &Error{Kind: KindConfig, Op: "config", Err: fmt.Errorf(format, args...)}
}
