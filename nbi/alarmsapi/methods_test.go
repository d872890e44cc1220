package alarmsapi

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
)

// O2IMS Table 3.3.3-1, every resource and its methods: each mandatory ("M") method is served under every
// root and major (never 405), each other method of the five is 405 with Allow. Table 3.7.3-1 (the
// Infrastructure Performance API) is nbi/performanceapi's TestEveryMandatoryPerformanceMethodIsServed.
func TestEveryMandatoryMonitoringMethodIsServed(t *testing.T) {
	e := newEnv(t)
	table := []struct {
		uri       string
		mandatory []string
	}{
		{"/alarms", []string{"GET"}},
		{"/alarms/{id}", []string{"GET", "PATCH"}},
		{"/alarms/purge", []string{"POST"}},
		{"/alarmSubscriptions", []string{"POST", "GET"}},
		{"/alarmSubscriptions/{id}", []string{"GET", "DELETE"}},
		{"/alarmServiceConfiguration", []string{"GET", "PUT", "PATCH"}},
		{"/taskOperations", []string{"GET"}},
		{"/taskOperations/{id}", []string{"GET"}},
	}
	for _, root := range nbitest.MonitoringRoots {
		for _, row := range table {
			path := root + strings.ReplaceAll(row.uri, "{id}", uuid.NewString())
			for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
				media := "application/json"
				if m == http.MethodPatch {
					media = mediaMergePatch // RFC 7396, as the reference's PATCHes take
				}
				x := e.send(m, path, []byte(`{}`), media)
				if !slices.Contains(row.mandatory, m) {
					require.Equal(t, http.StatusMethodNotAllowed, x.Code(), "%s %s: %s", m, path, x.Body)
					require.NotEmpty(t, x.Resp.Header.Get("Allow"))
					continue
				}
				require.NotEqual(t, http.StatusMethodNotAllowed, x.Code(), "%s %s is mandatory", m, path)
				if !strings.Contains(row.uri, "{id}") {
					require.NotEqual(t, http.StatusNotFound, x.Code(), "%s %s", m, path)
				}
			}
		}
	}
}
