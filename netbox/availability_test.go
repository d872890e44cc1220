package netbox_test

import (
	"context"
	"crypto/x509"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"

	"github.com/o2ims-operator/o2ims-operator/netbox"
	"github.com/o2ims-operator/o2ims-operator/tests/promtest"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
)

// usable reads o2ims_netbox_usable.
func (e *env) usable() float64 {
	e.t.Helper()
	v, found := promtest.Gather(e.t, e.reg).Value("o2ims_netbox_usable", nil)
	require.True(e.t, found, "o2ims_netbox_usable is exposed")
	return v
}

// started runs Start as the operator's startup activity does, with a context that lives for the test.
func (e *env) started() error {
	e.t.Helper()
	netbox.SetCheckIntervalsForTest(e.client, 20*time.Millisecond, 50*time.Millisecond)
	c, cancel := context.WithCancel(context.Background())
	e.t.Cleanup(cancel)
	return e.client.Gate.Start(c)
}

// NetBox answering 503 at start: Start returns nil (the operator goes on), the client sends NetBox nothing
// but the check and refuses every other call at once, saying since when NetBox is unreachable; once
// NetBox answers, the background check passes and the same client works — no restart.
func TestNetBoxDownAtStartGatesTheClientUntilItsCheckPasses(t *testing.T) {
	e := newEnv(t)
	e.addHost("h1", nil)
	e.sim.SetOutage(http.StatusServiceUnavailable)
	before := time.Now()
	require.NoError(t, e.started(), "an outage at start does not stop the operator")

	_, err := e.client.Search.FindFreeHosts(ctx(t), nil, nil, 1)
	require.True(t, netbox.IsKind(err, netbox.KindUnavailable), "refused before the check passed: %v", err)
	assert.True(t, netbox.IsOutage(err))
	_, err = e.client.Search.ListInventoryDevices(ctx(t), time.Time{}, true)
	require.True(t, netbox.IsKind(err, netbox.KindUnavailable), "the inventory's listings too: %v", err)
	_, err = e.client.Claims.GetDevice(ctx(t), 1)
	require.True(t, netbox.IsKind(err, netbox.KindUnavailable), "%v", err)
	assert.Zero(t, e.sim.Calls(http.MethodGet, netboxsim.RouteDevices)+e.sim.Calls(http.MethodGet, netboxsim.RouteDevice),
		"nothing but the check reached NetBox")
	assert.Positive(t, e.sim.Calls(http.MethodGet, netboxsim.RouteStatus))

	msg, ok := e.client.Gate.Unavailability(err)
	require.True(t, ok)
	since := e.client.Gate.DownSince()
	require.False(t, since.IsZero())
	assert.False(t, since.Before(before.Truncate(time.Second)), "since the first failed check")
	assert.Equal(t, "NetBox unreachable since "+since.UTC().Format(time.RFC3339)+" (HTTP 503)", msg)
	assert.Equal(t, msg+"; requests with hosts wait", e.client.Gate.Degraded())
	assert.Zero(t, e.usable())
	up, _ := e.up()
	assert.Zero(t, up)

	// Later checks fail the same way: the message a request shows does not change from pass to pass.
	checks := e.sim.Calls(http.MethodGet, netboxsim.RouteStatus)
	require.Eventually(t, func() bool { return e.sim.Calls(http.MethodGet, netboxsim.RouteStatus) > checks+2 }, 10*time.Second, 10*time.Millisecond,
		"the check is retried in the background")
	_, err = e.client.Search.FindFreeHosts(ctx(t), nil, nil, 1)
	again, _ := e.client.Gate.Unavailability(err)
	assert.Equal(t, msg, again)

	e.sim.SetOutage(0)
	require.Eventually(t, func() bool { return e.client.Gate.Degraded() == "" }, 10*time.Second, 10*time.Millisecond,
		"NetBox answers again, but the client still says it is unusable: %s", e.client.Gate.Degraded())
	found, err := e.client.Search.FindFreeHosts(ctx(t), nil, nil, 1)
	require.NoError(t, err)
	assert.Len(t, found, 1)
	assert.Equal(t, 1.0, e.usable())
	assert.True(t, e.client.Gate.DownSince().IsZero())
	assert.NotEmpty(t, e.logs.FilterMessageSnippet("passed its check").All(), "the recovery is logged")
}

// A configuration error while NetBox answers at start stops the operator, as it always did: Start returns
// it and the client is not gated (nothing will use it).
func TestAConfigurationErrorAtStartStillStopsTheOperator(t *testing.T) {
	for name, tc := range map[string]struct {
		opts  []envOption
		setup func(*env)
		kind  netbox.Kind
	}{
		"version too old":      {setup: func(e *env) { e.sim.SetVersion("4.5.10") }, kind: netbox.KindUnsupported},
		"token refused":        {opts: []envOption{withSim(netboxsim.Options{Tokens: []string{"another"}})}, kind: netbox.KindForbidden},
		"custom field missing": {opts: []envOption{withoutStandardFields()}, kind: netbox.KindSchema},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, tc.opts...)
			if tc.setup != nil {
				tc.setup(e)
			}
			err := e.started()
			require.Error(t, err)
			var nbErr *netbox.Error
			require.ErrorAs(t, err, &nbErr)
			assert.Equal(t, tc.kind, nbErr.Kind, "%v", err)
			assert.False(t, netbox.IsOutage(err))
		})
	}
}

// An outage at start, then a NetBox that answers but fails the check (too old): too late to stop a process
// that serves the NBI and the requests without hosts. It is an ERROR in the log, said by Degraded and
// o2ims_netbox_usable (though o2ims_netbox_up is 1) and by the calls' refusals; once fixed, the rechecks
// pick it up without a restart.
func TestAConfigurationErrorFoundAfterAnOutageAtStartDegradesAndMendsWithoutARestart(t *testing.T) {
	e := newEnv(t)
	e.addHost("h1", nil)
	e.sim.SetOutage(http.StatusBadGateway)
	require.NoError(t, e.started())
	e.sim.SetVersion("4.5.10")
	e.sim.SetOutage(0)

	require.Eventually(t, func() bool { return strings.Contains(e.client.Gate.Degraded(), "configuration") }, 10*time.Second, 10*time.Millisecond,
		"the failed check is never said: %q", e.client.Gate.Degraded())
	assert.Contains(t, e.client.Gate.Degraded(), "NetBox cannot be used until its configuration is fixed: netbox check: unsupported: NetBox 4.5.10 is older than 4.6.0")
	assert.True(t, strings.HasSuffix(e.client.Gate.Degraded(), "; requests with hosts wait"))
	_, err := e.client.Search.FindFreeHosts(ctx(t), nil, nil, 1)
	require.True(t, netbox.IsKind(err, netbox.KindUnavailable), "%v", err)
	assert.False(t, netbox.IsOutage(err), "not an outage: someone must fix it")
	msg, ok := e.client.Gate.Unavailability(err)
	require.True(t, ok)
	assert.True(t, strings.HasPrefix(msg, "NetBox cannot be used until its configuration is fixed: "), msg)
	assert.Zero(t, e.usable())
	up, _ := e.up()
	assert.Equal(t, 1.0, up, "NetBox answers")
	errorLines := func() int {
		return len(e.logs.FilterLevelExact(zapcore.ErrorLevel).FilterMessageSnippet("cannot be used").All())
	}
	// The state changes just before its error line is written: wait for the line, then count it.
	require.Eventually(t, func() bool { return errorLines() > 0 }, 10*time.Second, 10*time.Millisecond, "never logged as an error")
	require.Equal(t, 1, errorLines(), "logged once as an error, not at every recheck")

	e.sim.SetVersion("4.6.8")
	require.Eventually(t, func() bool { return e.client.Gate.Degraded() == "" }, 10*time.Second, 10*time.Millisecond, "never mended")
	_, err = e.client.Search.FindFreeHosts(ctx(t), nil, nil, 1)
	require.NoError(t, err)
	assert.Equal(t, 1.0, e.usable())
}

// Once the check passed, an outage is seen by the calls themselves (nothing is gated): their errors are
// outages, worded with the time the failures began, the same for every failure until NetBox answers.
func TestAnOutageAfterTheCheckIsWordedSinceItsFirstFailure(t *testing.T) {
	e := newEnv(t)
	id := e.addHost("h1", nil)
	require.NoError(t, e.started())
	assert.Equal(t, "", e.client.Gate.Degraded())
	assert.Equal(t, 1.0, e.usable())

	e.sim.SetOutage(http.StatusServiceUnavailable)
	_, err := e.client.Claims.GetDevice(ctx(t), id)
	require.True(t, netbox.IsKind(err, netbox.KindServer), "%v", err)
	first, ok := e.client.Gate.Unavailability(err)
	require.True(t, ok)
	assert.True(t, strings.HasPrefix(first, "NetBox unreachable since "), first)
	time.Sleep(1100 * time.Millisecond) // the time is worded to the second: a later failure must not move it
	_, err = e.client.Search.FindFreeHosts(ctx(t), nil, nil, 1)
	later, _ := e.client.Gate.Unavailability(err)
	assert.Equal(t, first, later)
	assert.Equal(t, first+"; requests with hosts wait", e.client.Gate.Degraded())
	assert.Zero(t, e.usable())

	e.sim.SetOutage(0)
	_, err = e.client.Claims.GetDevice(ctx(t), id)
	require.NoError(t, err)
	assert.Equal(t, "", e.client.Gate.Degraded())
	_, ok = e.client.Gate.Unavailability(&netbox.Error{Kind: netbox.KindNotFound, Status: 404})
	assert.False(t, ok, "a missing device is no outage")
}

func TestIsOutage(t *testing.T) {
	tls := &netbox.Error{Kind: netbox.KindTransport, Err: x509.UnknownAuthorityError{}} // not retryable
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&netbox.Error{Kind: netbox.KindServer, Status: 503, Retryable: true}, true},
		{&netbox.Error{Kind: netbox.KindRateLimited, Status: 429, Retryable: true}, true},
		{&netbox.Error{Kind: netbox.KindTimeout, Retryable: true}, true},
		{&netbox.Error{Kind: netbox.KindTransport, Retryable: true}, true},
		{tls, false},
		{&netbox.Error{Kind: netbox.KindUnauthorized, Status: 401}, false},
		{&netbox.Error{Kind: netbox.KindForbidden, Status: 403}, false},
		{&netbox.Error{Kind: netbox.KindConflict, Status: 409, Retryable: true}, false},
		{&netbox.Error{Kind: netbox.KindUnavailable, Retryable: true, Err: &netbox.Error{Kind: netbox.KindServer, Status: 502, Retryable: true}}, true},
		{&netbox.Error{Kind: netbox.KindUnavailable, Retryable: true, Err: &netbox.Error{Kind: netbox.KindSchema}}, false},
		{errors.New("netbox: 503"), false},
		{nil, false},
	} {
		assert.Equal(t, tc.want, netbox.IsOutage(tc.err), "%v", tc.err)
	}
}
