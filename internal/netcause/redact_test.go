package netcause

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// What Go's and the API server's errors say, with every address masked and the rest (times, versions,
// object names) left alone.
func TestRedactMasksAddressesAndKeepsTheRest(t *testing.T) {
	for in, want := range map[string]string{
		`Get "https://netbox.internal/api/status/": dial tcp 10.20.30.40:443: connect: connection refused`: `Get "[url]": dial tcp [address]: connect: connection refused`,
		`lookup netbox.internal on 10.96.0.10:53: no such host`:                                            `lookup [name] on [DNS server]: no such host`,
		`read udp 10.1.2.3:5353->10.96.0.10:53: i/o timeout`:                                               `read udp [address]: i/o timeout`,
		`Patch "https://[fd00::1]:6443/apis/x": EOF`:                                                       `Patch "[url]": EOF`,
		`reason: hosts[1].count must be at most 1000, got 2000000000`:                                      `reason: hosts[1].count must be at most 1000, got 2000000000`,
		`dial tcp [fd00::1]:443: i/o timeout`:                                                              `dial tcp [address]: i/o timeout`,
		`upstream fd00:10::5 refused`:                                                                      `upstream [address] refused`,
		`x509: certificate is valid for a.example, b.example, not netbox.internal`:                         `x509: certificate is valid for other names`,
		`proxy at proxy.corp.example:3128 said no`:                                                         `proxy at [address] said no`,
		`NetBox unreachable since 2026-12-02T08:05:45Z (HTTP 503); template v3.0.0`:                        `NetBox unreachable since 2026-12-02T08:05:45Z (HTTP 503); template v3.0.0`,
		`package variant default/pv-abc already exists`:                                                    `package variant default/pv-abc already exists`,
	} {
		assert.Equal(t, want, Redact(in), in)
	}
}
