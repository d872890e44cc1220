package nbi_test

import (
	"testing"
	"time"

	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// The NBI's listener closes an idle keep-alive connection after its IdleTimeout (issue 35: one stayed
// open 200 s), measured on a raw TCP connection.
func TestTheNBIClosesAnIdleKeepAliveConnection(t *testing.T) {
	const idle = 300 * time.Millisecond
	e := newEnv(t, func(c *nbi.Config) { c.IdleTimeout = idle })
	kubeapi.RequireIdleConnectionClosed(t, e.Srv.Addr(), apiRoot+"/api_versions", idle)
}
