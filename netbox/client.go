package netbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"

	nb "github.com/netbox-community/go-netbox/v4"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"k8s.io/utils/clock"

	"github.com/o2ims-operator/o2ims-operator/internal/netcause"
)

// Client is NetBox as the operator uses it, one part per concept, every part over one connection
// (conn: the configuration, the go-netbox client on transport.go's chain, the metrics and the state the
// parts share). A caller holds the Client, or only the part it needs, and names the part at each call —
// nb.Claims.Release, nb.Gate.Degraded — so a call says which of NetBox's jobs it is. See the package doc.
type Client struct {
	Gate   *Gate   // availability: the startup check, the outage, /readyz (availability.go)
	Search *Search // reads: free hosts, selectors, inventory listings (select.go, inventory.go)
	Claims *Claims // writes: claim, release, quarantine (claim.go, release.go, quarantine.go)
	Schema *Schema // custom fields: check, selector checks, bootstrap (check.go, schema.go, bootstrap.go)
}

// conn is what every part shares: one transport, one set of metrics, one view of NetBox's fields and
// of who hears of our writes. Its methods are the plumbing the parts have in common (device reads and
// PATCHes, error mapping, the gate every call passes).
type conn struct {
	cfg     Config
	log     *zap.Logger
	api     *nb.APIClient
	tokens  *tokenSource
	metrics *metrics
	retry   *retryPolicy

	devicePage int32 // device list page size (limit)
	fieldPage  int32 // custom field list page size
	maxPages   int   // bound on pages followed in one listing

	observers writeObservers // the inventory view hears of our own writes (observers.go)
	recent    recentFields   // the custom fields selector checks share (schema.go)
	clock     clock.PassiveClock
}

// New validates cfg (filling defaults for a zero Timeout and empty field
// names), reads the token file once to fail fast, loads the CA file and
// registers the metrics on reg (nil: not registered).
func New(cfg Config, logger *zap.Logger, reg prometheus.Registerer) (*Client, error) {
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	def := DefaultFieldNames()
	for _, p := range []struct {
		dst *string
		def string
	}{
		{&cfg.Fields.Managed, def.Managed}, {&cfg.Fields.RequestUID, def.RequestUID},
		{&cfg.Fields.BMCAddress, def.BMCAddress}, {&cfg.Fields.BootMAC, def.BootMAC},
	} {
		if *p.dst == "" {
			*p.dst = p.def
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	origin, err := cfg.origin()
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = zap.NewNop()
	}
	tokens := newTokenSource(cfg.TokenFile)
	if _, err := tokens.token(); err != nil {
		return nil, err
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	policy := defaultRetryPolicy()
	httpClient, err := newHTTPClient(cfg, tokens, m, &policy)
	if err != nil {
		return nil, err
	}
	nbCfg := nb.NewConfiguration()
	nbCfg.Servers = nb.ServerConfigurations{{URL: origin.String(), Description: "NetBox"}}
	nbCfg.HTTPClient = httpClient
	nbCfg.UserAgent = "o2ims-operator"
	c := &conn{
		cfg:        cfg,
		log:        logger.Named("netbox"),
		api:        nb.NewAPIClient(nbCfg),
		tokens:     tokens,
		metrics:    m,
		retry:      &policy,
		clock:      clock.RealClock{},
		devicePage: 100,
		fieldPage:  1000,
		maxPages:   10000,
	}
	schema := &Schema{conn: c}
	gate := &Gate{conn: c, schema: schema}
	m.up.setProbe(gate.probeStatus)
	c.log.Info("NetBox client configured", zap.Bool("customCA", cfg.CAFile != ""),
		zap.Bool("plainHTTP", origin.Scheme == "http"), zap.Duration("timeout", cfg.Timeout))
	return &Client{Gate: gate, Search: &Search{conn: c, schema: schema}, Claims: &Claims{conn: c}, Schema: schema}, nil
}

// devicePage is one page of the device list.
type devicePage struct {
	devices []*Device
	next    *string
}

func (c *conn) listDevices(ctx context.Context, op string, filters url.Values, offset int32) (*devicePage, error) {
	rctx := withRequestOptions(ctx, requestOptions{op: "list_devices", query: filters})
	res, resp, err := c.api.DcimAPI.DcimDevicesList(rctx).
		Status([]string{StatusStaged}).Limit(c.devicePage).Offset(offset).Execute()
	if err == nil {
		p := &devicePage{next: res.Next.Get()}
		for i := range res.Results {
			p.devices = append(p.devices, c.deviceFromModel(&res.Results[i]))
		}
		return p, nil
	}
	if body, ok := undecodedBody(resp, err); ok {
		var lp lenientPage[lenientDevice]
		if derr := decodeLenient(body, &lp); derr == nil && lp.Results != nil {
			c.log.Debug("go-netbox could not decode the device list; read it tolerantly", zap.Int("rows", len(lp.Results)))
			p := &devicePage{next: lp.Next}
			for i := range lp.Results {
				p.devices = append(p.devices, c.deviceFromLenient(&lp.Results[i]))
			}
			return p, nil
		}
	}
	return nil, c.toError(op, resp, err, false)
}

func (c *conn) getDevice(ctx context.Context, op string, id int32) (*Device, error) {
	if id <= 0 {
		return nil, newError(KindInvalid, op, "device id must be positive")
	}
	rctx := withRequestOptions(ctx, requestOptions{op: "get_device"})
	res, resp, err := c.api.DcimAPI.DcimDevicesRetrieve(rctx, id).Execute()
	d, derr := c.deviceResult(op, res, resp, err, false)
	if IsKind(derr, KindNotFound) {
		c.deleted(id)
	}
	if derr != nil {
		return nil, derr
	}
	if d.ID != id {
		c.metrics.apiError("protocol")
		return nil, newError(KindProtocol, op, "NetBox answered device %d for device %d", d.ID, id)
	}
	if d.ETag == "" {
		c.metrics.apiError("protocol")
		return nil, newError(KindProtocol, op, "NetBox sent no ETag for device %d (NetBox ≥ 4.6 required)", id)
	}
	// What NetBox answered is as good as a write's answer: the view learns at once of a host it thought
	// free that another request or an administrator took.
	c.written(id, res, resp, err)
	return d, nil
}

// devicePatch is what one PATCH of a device changes. status "" leaves the status alone; a nil value in
// custom clears that field; changelog is the message NetBox's change log records.
type devicePatch struct {
	status    string
	custom    map[string]any
	changelog string
}

// patchDevice sends one conditional PATCH. It is never retried.
func (c *conn) patchDevice(ctx context.Context, op string, id int32, etag string, p devicePatch) (*Device, error) {
	if etag == "" {
		return nil, newError(KindInvalid, op, "refusing an unconditional write: the device has no ETag (read it with GetDevice)")
	}
	var body nb.PatchedWritableDeviceWithConfigContextRequest
	if p.status != "" {
		s := nb.DeviceStatusValue(p.status)
		body.Status = &s
	}
	if p.custom != nil {
		body.CustomFields = p.custom
	}
	rctx := withRequestOptions(ctx, requestOptions{op: "patch_device", ifMatch: etag, changelog: p.changelog})
	res, resp, err := c.api.DcimAPI.DcimDevicesPartialUpdate(rctx, id).PatchedWritableDeviceWithConfigContextRequest(body).Execute()
	d, derr := c.deviceResult(op, res, resp, err, true)
	switch {
	case derr == nil:
		c.written(id, res, resp, err)
	case IsKind(derr, KindNotFound):
		c.deleted(id)
	}
	return d, derr
}

func (c *conn) deviceResult(op string, res *nb.DeviceWithConfigContext, resp *http.Response, err error, write bool) (*Device, error) {
	var d *Device
	switch {
	case err == nil && res != nil:
		d = c.deviceFromModel(res)
	case err == nil:
		c.metrics.apiError("protocol")
		return nil, &Error{Kind: KindProtocol, Op: op, MayHaveLanded: write, Err: errors.New("empty answer")}
	default:
		body, ok := undecodedBody(resp, err)
		if !ok {
			return nil, c.toError(op, resp, err, write)
		}
		var l lenientDevice
		if derr := decodeLenient(body, &l); derr != nil || l.ID == 0 {
			return nil, c.toError(op, resp, err, write)
		}
		d = c.deviceFromLenient(&l)
	}
	if resp != nil {
		d.ETag = resp.Header.Get("ETag")
	}
	return d, nil
}

// undecodedBody returns the body of a 2xx answer go-netbox failed to decode.
func undecodedBody(resp *http.Response, err error) ([]byte, bool) {
	var g *nb.GenericOpenAPIError
	if resp == nil || resp.StatusCode < 200 || resp.StatusCode > 299 || !errors.As(err, &g) {
		return nil, false
	}
	return g.Body(), true
}

// toError maps a go-netbox result to *Error and counts protocol failures (HTTP
// statuses, timeouts and transport failures are counted per attempt by the
// transport). write marks a PATCH: whether it may have landed is decided here.
func (c *conn) toError(op string, resp *http.Response, err error, write bool) *Error {
	var own *Error
	if errors.As(err, &own) { // token file problem raised inside the transport
		cp := *own
		return &cp
	}
	e := &Error{Op: op}
	if resp != nil {
		e.Status = resp.StatusCode
	}
	var ue *url.Error
	inner := err
	if errors.As(err, &ue) {
		inner = ue.Err
	}
	var at *attemptTimeoutError
	switch {
	case errors.Is(err, errRedirectRefused):
		c.metrics.apiError("protocol")
		e.Kind, e.Err = KindProtocol, errRedirectRefused
	case resp != nil && resp.StatusCode >= 300:
		e.Kind, e.Retryable = statusKind(resp.StatusCode)
		e.Err = c.statusDetail(resp.StatusCode, err)
		// A 5xx may come from a proxy after NetBox committed.
		e.MayHaveLanded = write && resp.StatusCode >= 500
	case resp != nil:
		c.metrics.apiError("protocol")
		var g *nb.GenericOpenAPIError
		if errors.As(err, &g) {
			e.Kind, e.Err = KindProtocol, fmt.Errorf("undecodable answer: %s", c.clean(g.Error(), 200))
		} else { // the body could not be read
			e.Kind, e.Retryable = KindTransport, true
			if errors.Is(err, context.DeadlineExceeded) {
				e.Kind = KindTimeout
			}
			e.Err = fmt.Errorf("reading the answer failed: %s", c.transportCause(op, err))
		}
		e.MayHaveLanded = write
	case errors.As(err, &at):
		e.Kind, e.Retryable, e.Err, e.MayHaveLanded = KindTimeout, true, at, write
	case errors.Is(err, context.DeadlineExceeded):
		e.Kind, e.Retryable, e.MayHaveLanded = KindTimeout, true, write
		e.Err = errors.New("the caller's deadline expired")
		if cause := netcause.Of(err); cause != netcause.Timeout { // net/http's own (response headers, TLS handshake)
			e.Err = errors.New(cause)
		}
	case errors.Is(err, context.Canceled):
		e.Kind, e.MayHaveLanded = KindCanceled, write
		e.Err = errors.New("the caller canceled the request")
	case tlsVerificationErr(err):
		e.Kind = KindTransport
		e.Err = fmt.Errorf("TLS verification failed (check %s): %s", EnvCAFile, c.transportCause(op, inner))
	default:
		e.Kind, e.Retryable = KindTransport, true
		e.Err = errors.New(c.transportCause(op, inner))
		var ne net.Error
		if errors.As(inner, &ne) && ne.Timeout() { // a dialer's or the TLS handshake's own timeout
			e.Kind = KindTimeout
		}
		// A connection that was never made carried no write.
		var opErr *net.OpError
		e.MayHaveLanded = write && !(errors.As(err, &opErr) && opErr.Op == "dial")
	}
	return e
}

func statusKind(code int) (Kind, bool) {
	switch {
	case code == http.StatusBadRequest:
		return KindBadRequest, false
	case code == http.StatusUnauthorized:
		return KindUnauthorized, false
	case code == http.StatusForbidden:
		return KindForbidden, false
	case code == http.StatusNotFound:
		return KindNotFound, false
	case code == http.StatusConflict:
		return KindConflict, true
	case code == http.StatusPreconditionFailed:
		return KindPrecondition, false
	case code == http.StatusTooManyRequests:
		return KindRateLimited, true
	case code >= 500:
		return KindServer, true
	}
	return KindProtocol, false
}

// statusDetail explains an HTTP error with NetBox's "detail" (or, for a 400,
// its field errors), cleaned; HTML error pages are not quoted.
func (c *conn) statusDetail(code int, err error) error {
	hint := ""
	switch code {
	case http.StatusUnauthorized, http.StatusForbidden:
		hint = "; check the token in " + EnvTokenFile + " and its permissions"
	}
	var g *nb.GenericOpenAPIError
	// A 5xx body is a proxy's or a crashed worker's, which may name upstream addresses: the status says it.
	if errors.As(err, &g) && code < 500 {
		var obj map[string]any
		if json.Unmarshal(g.Body(), &obj) == nil && len(obj) > 0 {
			if d, ok := obj["detail"].(string); ok {
				return fmt.Errorf("NetBox says %q%s", c.clean(d, 200), hint)
			}
			if code == http.StatusBadRequest {
				raw, _ := json.Marshal(obj)
				return fmt.Errorf("NetBox rejected the request: %s", c.clean(string(raw), 300))
			}
		}
	}
	return fmt.Errorf("%s%s", http.StatusText(code), hint)
}

// transportCause is the class of a transport failure (sanitize.go); what Go said, addresses included,
// goes to the DEBUG log only (with the token masked), as the outage's other details do.
func (c *conn) transportCause(op string, err error) string {
	c.log.Debug("NetBox call failed in transport", zap.String("op", op),
		zap.String("detail", sanitizeText(redactSecret(err.Error(), c.tokens.current()), 500)))
	return transportCause(err)
}

// clean makes server- or library-provided text safe for an error: the exact
// token, token-shaped fragments, URLs and user:password@ are masked.
func (c *conn) clean(s string, max int) string {
	return sanitizeMessage(redactSecret(s, c.tokens.current()), max)
}
