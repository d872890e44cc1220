package inventoryapi

import (
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
)

// fill is a reference path template with its ids replaced by ones the inventory holds (or, for kinds it
// has none of, a well-formed id that answers 404).
func fill(tmpl string, ids map[string]string) string {
	parts := strings.Split(tmpl, "/")
	for i, p := range parts {
		if strings.HasPrefix(p, "{") {
			parts[i] = ids[strings.Trim(p, "{}")]
		}
	}
	return strings.Join(parts, "/")
}

// Every route of oran-o2ims's current (v2) document, under every spelling and major: each answers as the
// reference of its major describes (v2: HEAD, v1: 7fdeb278), and every alias answers what
// /o2ims-infrastructureInventory/v1 answers, byte for byte — one implementation, routed.
func TestEveryInventoryRouteIsServedUnderEveryRootAndAlias(t *testing.T) {
	ie := newSubsEnv(t).invEnv
	snap := ie.view.Snapshot()
	pool := snap.Pools[0].ID
	ids := map[string]string{
		"resourceTypeId": snap.Types[0].ID, "resourcePoolId": pool, "resourceId": snap.Resources[pool][0].ID,
		"alarmDictionaryId": snap.Types[0].Attrs["alarmDictionaryId"].(string), "oCloudSiteId": snap.Sites[0].ID,
		"deploymentManagerId": uuid.NewString(), "subscriptionId": uuid.NewString(), "globalLocationId": "nowhere",
	}
	paths := nbitest.LoadInventoryV2Reference(t).ReferencePaths()
	templates := make([]string, 0, len(paths))
	for tmpl, methods := range paths {
		if strings.Contains(strings.Join(methods, ","), http.MethodGet) {
			templates = append(templates, strings.TrimPrefix(tmpl, Root+"/v2"))
		}
	}
	sort.Strings(templates)
	require.Len(t, templates, 20, "the routes of oran-o2ims's v2 document: %v", templates)
	for _, rest := range templates {
		if rest == "/api_versions" || strings.HasPrefix(rest, "/o2ims-infrastructureInventory/api_versions") {
			continue // checked below: its uriPrefix names the root asked
		}
		want := ie.get(invV1 + fill(rest, ids))
		for _, root := range nbitest.InventoryRoots {
			got := ie.get(root + fill(rest, ids)) // validated against the reference of its major
			require.Equal(t, want.Code(), got.Code(), "%s%s", root, rest)
			if want.Code() == http.StatusOK {
				require.JSONEq(t, string(want.Body), string(got.Body), "%s%s answers as %s%s", root, rest, invV1, rest)
			}
		}
	}
	for _, root := range nbitest.InventoryRoots {
		x := ie.get(root + "/api_versions")
		require.Equal(t, http.StatusOK, x.Code())
		require.Equal(t, root, x.Object(t)["uriPrefix"], "api_versions names the root it is asked at")
	}
	x := ie.get(RootSpec + "/api_versions")
	require.JSONEq(t, `{"uriPrefix":"/O2ims_infrastructureInventory/v2","apiVersions":[{"version":"2.0.0"}]}`, string(x.Body))
}

// The Version header (SOL 013 clause 9.4, which O2IMS clause 3.1.8.2 adopts): a version the major serves
// is answered in it, and said so in the answer's Version; one it does not serve is 406 Not Acceptable with
// a ProblemDetails naming what is served; without the header the major's newest is used (lenient).
func TestTheVersionHeaderIsAnsweredPerSOL013(t *testing.T) {
	ie := newInvEnv(t, seedSix)
	for _, c := range []struct {
		path, asked, used string
		code              int
	}{
		{invV1, "", "1.2.0", http.StatusOK},
		{invV1, "1.0.0", "1.0.0", http.StatusOK},
		{invV1, "1.1.0", "1.1.0", http.StatusOK},
		{Root + "/v2/resourceTypes", "2.0.0", "2.0.0", http.StatusOK},
		{RootSpec + "/v2/resourceTypes", "2.0.0-impl:example.com:smo:4", "2.0.0", http.StatusOK},
		{RootSpec + "/v2/resourceTypes", "", "2.0.0", http.StatusOK},
		{Root + "/api_versions", "2.0.0", "2.0.0", http.StatusOK},
		{invV1 + "/resourcePools", "2.0.0", "", http.StatusNotAcceptable},
		{RootSpec + "/v2", "1.0.0", "", http.StatusNotAcceptable},
		{Root + "/v2/nothing", "3.0.0", "", http.StatusNotAcceptable},
	} {
		var x *nbitest.Exchange
		if c.asked == "" {
			x = ie.get(c.path)
		} else {
			x = ie.get(c.path, "Version", c.asked)
		}
		require.Equal(t, c.code, x.Code(), "%s Version %q: %s", c.path, c.asked, x.Body)
		if c.code != http.StatusOK {
			served := "1.0.0, 1.1.0, 1.2.0"
			if nbitest.MajorOf(c.path) == "v2" {
				served = "2.0.0"
			}
			nbitest.RequireCommonProblem(t, x, http.StatusNotAcceptable,
				`Version "`+c.asked+`" is not served under .../`+nbitest.MajorOf(c.path)+"; served: "+served, "")
			continue
		}
		require.Equal(t, c.used, x.Resp.Header.Get("Version"), "%s Version %q", c.path, c.asked)
	}
}

// O2IMS Table 3.2.3-1, every resource and its methods: each mandatory ("M") method is served under every
// root and major (never 404 or 405), and each other method of the five is 405 with Allow, as the
// resources' clauses say ("This method is not supported").
func TestEveryMandatoryInventoryMethodIsServed(t *testing.T) {
	ie := newSubsEnv(t).invEnv
	snap := ie.view.Snapshot()
	pool := snap.Pools[0].ID
	sub := ie.get(invV1 + "/subscriptions")
	require.Equal(t, http.StatusOK, sub.Code())
	perf := ie.get(invV1 + "/performanceDictionaries").Items(t)
	require.Len(t, perf, len(snap.Types), "one performance dictionary per resource type")
	id := map[string]string{
		"resourceTypeId": snap.Types[0].ID, "resourcePoolId": pool, "resourceId": snap.Resources[pool][0].ID,
		"alarmDictionaryId": snap.Types[0].Attrs["alarmDictionaryId"].(string), "oCloudSiteId": snap.Sites[0].ID,
		"performanceDictionaryId": perf[0]["performanceDictionaryId"].(string),
		"deploymentManagerId":     uuid.NewString(), "subscriptionId": uuid.NewString(), "globalLocationId": "nowhere",
	}
	table := []struct {
		uri       string
		mandatory []string
	}{
		{"", []string{"GET"}},
		{"/resourceTypes", []string{"GET"}},
		{"/resourceTypes/{resourceTypeId}", []string{"GET"}},
		{"/resourceTypes/{resourceTypeId}/performanceDictionary", []string{"GET"}},
		{"/performanceDictionaries/{performanceDictionaryId}", []string{"GET"}},
		{"/resourceTypes/{resourceTypeId}/alarmDictionary", []string{"GET"}},
		{"/alarmDictionaries/{alarmDictionaryId}", []string{"GET"}},
		{"/resourcePools", []string{"GET"}},
		{"/resourcePools/{resourcePoolId}", []string{"GET"}},
		{"/resourcePools/{resourcePoolId}/resources", []string{"GET"}},
		{"/resourcePools/{resourcePoolId}/resources/{resourceId}", []string{"GET"}},
		{"/deploymentManagers", []string{"GET"}},
		{"/deploymentManagers/{deploymentManagerId}", []string{"GET"}},
		{"/subscriptions", []string{"GET", "POST"}},
		{"/subscriptions/{subscriptionId}", []string{"GET", "DELETE"}},
		{"/alarmDictionaries", []string{"GET"}},
		{"/performanceDictionaries", []string{"GET"}},
		{"/locations", []string{"GET"}},
		{"/locations/{globalLocationId}", []string{"GET"}},
		{"/oCloudSites", []string{"GET"}},
		{"/oCloudSites/{oCloudSiteId}", []string{"GET"}},
	}
	for _, root := range nbitest.InventoryRoots {
		for _, row := range table {
			path := root + fill(row.uri, id)
			for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
				var body []byte
				if m == http.MethodPost || m == http.MethodPut || m == http.MethodPatch {
					body = []byte(`{}`)
				}
				x := ie.send(m, path, body)
				if !slices.Contains(row.mandatory, m) {
					require.Equal(t, http.StatusMethodNotAllowed, x.Code(), "%s %s", m, path)
					require.NotEmpty(t, x.Resp.Header.Get("Allow"))
					continue
				}
				require.NotEqual(t, http.StatusMethodNotAllowed, x.Code(), "%s %s is mandatory", m, path)
				if !strings.Contains(row.uri, "deploymentManagerId") && !strings.Contains(row.uri, "subscriptionId") &&
					!strings.Contains(row.uri, "globalLocationId") && m == http.MethodGet {
					require.Equal(t, http.StatusOK, x.Code(), "%s %s: %s", m, path, x.Body)
				}
			}
		}
	}
}
