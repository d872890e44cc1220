package performanceapi

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// O2IMS Table 3.7.3-1, every resource and its methods: each mandatory ("M") method is served under
// every root spelling (never 405, and never 404 where the path names no id), each other method of the
// five is 405 with Allow (clauses 3.7.4.2.3.3–5, 3.7.4.3.3.1/3/4, 3.7.4.4.3.1/5).
func TestEveryMandatoryPerformanceMethodIsServed(t *testing.T) {
	e := newEnv(t)
	table := []struct {
		uri       string
		mandatory []string
	}{
		{"/measurementJobs", []string{"POST", "GET"}},
		{"/measurementJobs/{id}", []string{"GET", "DELETE"}},
		{"/performanceServiceConfiguration", []string{"GET", "PUT", "PATCH"}},
	}
	for _, root := range []string{RootSpec + "/v2", Root + "/v2"} {
		for _, row := range table {
			path := root + strings.ReplaceAll(row.uri, "{id}", uuid.NewString())
			for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
				media := "application/json"
				if m == http.MethodPatch {
					media = mediaMergePatch
				}
				x := e.send(m, path, `{}`, media)
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

// api_versions at each spelling: 2.0.0 under v2 only (Table 3.7.2-1); there is no v1.
func TestPerformanceAPIVersions(t *testing.T) {
	e := newEnv(t)
	for _, root := range Roots {
		for _, p := range []string{root + "/api_versions", root + "/v2/api_versions"} {
			x := e.get(p)
			require.Equal(t, http.StatusOK, x.Code(), p)
			require.JSONEq(t, `{"uriPrefix":"`+root+`/v2","apiVersions":[{"version":"2.0.0"}]}`, string(x.Body), p)
		}
		require.Equal(t, http.StatusNotFound, e.get(root+"/v1/measurementJobs").Code())
	}
}
