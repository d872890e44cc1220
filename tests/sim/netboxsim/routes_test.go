package netboxsim_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
)

// What NetBox's URL conf and API views answer outside the happy paths, as the simulator's routes must:
// an unknown or non-canonical path is a 404 that is not counted (no route); another method on a known
// path is a 405 that is counted, faulted and authenticated like any call; all with a {"detail"} body,
// never a ServeMux text or redirect.
func TestRoutesAnswerUnknownPathsAndMethodsLikeNetBox(t *testing.T) {
	s, base := start(t, netboxsim.Options{})
	id := s.AddDevice(netboxsim.Device{Name: "edge-0"})
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, path, tok string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, nil)
		require.NoError(t, err)
		if tok != "" {
			req.Header.Set("Authorization", "Token "+tok)
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var body map[string]any
		if method != http.MethodHead {
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&body), "%s %s", method, path)
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		}
		return resp.StatusCode, body
	}

	for _, path := range []string{"/api/nothing/", "/api/dcim/devices/x/", "/api/dcim/devices/0/", "/api/dcim/devices/-1/",
		"/api/dcim/devices/99999999999/", "/api/dcim/devices/1", "/api/status", "/api//status/", "/api/dcim/devices/1/../",
		"/api/dcim/devices/1/interfaces/", "/api/status/x"} {
		code, body := do(http.MethodGet, path, token)
		assert.Equal(t, http.StatusNotFound, code, path)
		assert.Equal(t, "Not found.", body["detail"], path)
	}
	for _, route := range []string{netboxsim.RouteStatus, netboxsim.RouteDevices, netboxsim.RouteDevice} {
		assert.Zero(t, s.Calls(http.MethodGet, route), "a path with no route is not counted as %s", route)
	}

	code, body := do(http.MethodDelete, "/api/dcim/devices/1/", token)
	assert.Equal(t, http.StatusMethodNotAllowed, code)
	assert.Equal(t, `Method "DELETE" not allowed.`, body["detail"])
	assert.Equal(t, 1, s.Calls(http.MethodDelete, netboxsim.RouteDevice))
	code, _ = do(http.MethodHead, "/api/status/", token)
	assert.Equal(t, http.StatusMethodNotAllowed, code, "HEAD is not GET")
	code, _ = do(http.MethodPost, "/api/dcim/devices/", "")
	assert.Equal(t, http.StatusForbidden, code, "the token is checked before the method")
	s.InjectFault(netboxsim.Fault{Method: http.MethodPut, Route: netboxsim.RouteStatus, Status: http.StatusBadGateway})
	code, _ = do(http.MethodPut, "/api/status/", token)
	assert.Equal(t, http.StatusBadGateway, code, "a fault comes before the method check")

	code, body = do(http.MethodGet, "/api/dcim/devices/1/", token)
	require.Equal(t, http.StatusOK, code)
	assert.EqualValues(t, id, body["id"])
	assert.Equal(t, 1, s.Calls(http.MethodGet, netboxsim.RouteDevice))
}
