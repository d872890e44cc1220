package netbox

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"go.uber.org/zap"

	"github.com/o2ims-operator/o2ims-operator/internal/quote"
)

// minVersion is the oldest NetBox the client accepts: ETag/If-Match on the
// REST API exist from 4.6.0, and claims are only safe as conditional writes.
var minVersion = [3]int{4, 6, 0}

// Check is the startup check: NetBox reachable with our token, version ≥ 4.6.0,
// and the fixed custom fields present on dcim.device with the right types.
func (c *Schema) Check(ctx context.Context) error {
	v, err := c.netboxVersion(ctx)
	if err != nil {
		return err
	}
	got, ok := parseVersion(v)
	if !ok {
		return &Error{Kind: KindProtocol, Op: "check", Err: fmt.Errorf("cannot read netbox-version %q", quote.Truncate(v, 40))}
	}
	if compareVersion(got, minVersion) < 0 {
		return &Error{Kind: KindUnsupported, Op: "check", Err: fmt.Errorf(
			"NetBox %d.%d.%d is older than %d.%d.%d, the first release with ETag/If-Match (needed for safe claims)",
			got[0], got[1], got[2], minVersion[0], minVersion[1], minVersion[2])}
	}
	if err := c.CheckSchema(ctx, nil); err != nil {
		return err
	}
	c.log.Info("NetBox check passed", zap.String("netboxVersion", fmt.Sprintf("%d.%d.%d", got[0], got[1], got[2])))
	return nil
}

var versionRE = regexp.MustCompile(`^v?(\d+)\.(\d+)(?:\.(\d+))?`)

// parseVersion reads major.minor[.patch] and ignores suffixes such as -beta1
// or -Docker-3.3.0. (Not apimachinery's util/version: netbox depends on no
// k8s.io module. Not golang.org/x/mod/semver either: it reads "-Docker-3.3.0"
// as a pre-release, so netbox-docker's "4.6.0-Docker-3.3.0" would sort below
// the 4.6.0 it is.)
func parseVersion(s string) ([3]int, bool) {
	m := versionRE.FindStringSubmatch(s)
	if m == nil {
		return [3]int{}, false
	}
	var v [3]int
	for i := 0; i < 3; i++ {
		if m[i+1] == "" {
			continue
		}
		n, err := strconv.Atoi(m[i+1])
		if err != nil {
			return [3]int{}, false
		}
		v[i] = n
	}
	return v, true
}

func compareVersion(a, b [3]int) int {
	for i := range a {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

func (c *Schema) netboxVersion(ctx context.Context) (string, error) {
	rctx := withRequestOptions(ctx, requestOptions{op: "status"})
	res, resp, err := c.api.StatusAPI.StatusRetrieve(rctx).Execute()
	if err != nil {
		return "", c.toError("check", resp, err, false)
	}
	v, ok := res["netbox-version"].(string)
	if !ok {
		c.metrics.apiError("protocol")
		return "", &Error{Kind: KindProtocol, Op: "check", Err: errors.New("/api/status/ has no netbox-version")}
	}
	return v, nil
}
