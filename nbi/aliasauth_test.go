package nbi_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/alarmsapi"
	"github.com/o2ims-operator/o2ims-operator/nbi/inventoryapi"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
)

// versionedStub serves, through Mux.Versioned with the inventory's and the monitoring API's own roots and
// majors, a few of their routes answering 200: what is under test is who reaches them.
type versionedStub struct{}

type answer struct {
	code int
	Body []byte
}

func (a *answer) Code() int { return a.code }

func (versionedStub) Register(m *nbi.Mux) {
	ok := func(w http.ResponseWriter, r *http.Request) error {
		m.Write(w, r, http.StatusOK, map[string]string{})
		return nil
	}
	m.Versioned(inventoryapi.Roots, nbi.WriteCommonProblem, inventoryapi.Majors, func(p string, _ nbi.Major) {
		m.Handle("GET "+p+"/resourcePools", nbi.VerbList, ok)
		m.Handle("GET "+p+"/subscriptions", nbi.VerbList, ok)
		m.Handle("POST "+p+"/subscriptions", nbi.VerbCreate, ok)
	})
	m.Versioned(alarmsapi.Roots, nbi.WriteCommonProblem, alarmsapi.Majors, func(p string, _ nbi.Major) {
		m.Handle("GET "+p+"/alarms", nbi.VerbList, ok)
		m.Handle("PATCH "+p+"/alarms/{id}", nbi.VerbUpdate, ok)
	})
}

// Issue 35: the O2IMS roles name only /o2ims-infrastructureX/v1/...; every spelling of the root and every
// major is authorised as that path, so the real API server's RBAC allows a reader under every alias and
// version, a subscriber's POST under every alias, and refuses a caller without the role under each of
// them, the 403 naming the role that would allow it.
func TestEveryAliasAndVersionIsAuthorisedAsTheCanonicalPath(t *testing.T) {
	e := nbitest.NewEnv(t, func(*nbitest.Env) []nbi.API { return []nbi.API{versionedStub{}} }, nbitest.WithKubernetesAuth)
	ctx := context.Background()
	nbitest.ApplyO2IMSRoles(t, e.Kapi)
	sa := func(name, role string) string {
		if role != "" {
			require.NoError(t, e.Kapi.BindClusterRole(ctx, "nbi-alias-"+name, role,
				rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "nbi-alias", Name: name}))
		}
		return nbitest.NBIToken(t, e.Kapi, "nbi-alias", name)
	}
	reader, subscriber, nobody := sa("reader", "o2ims-nbi-reader"), sa("subscriber", "o2ims-nbi-subscriber"), sa("nobody", "")

	// Sent as they are (e.Do holds answers to the provisioning reference, which these paths are not in).
	do := func(token, method, path string) *answer {
		req, err := http.NewRequest(method, e.Base+path, strings.NewReader("{}"))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := e.Client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return &answer{resp.StatusCode, body}
	}
	// Denials are not cached: wait until the API server's authorizer has the new bindings.
	kubeapi.Eventually(t, 30*time.Second, func() bool {
		return do(reader, http.MethodGet, nbitest.InventoryRoots[0]+"/resourcePools").Code() == http.StatusOK &&
			do(subscriber, http.MethodPost, nbitest.InventoryRoots[0]+"/subscriptions").Code() == http.StatusOK
	}, "the bindings never counted")
	for _, root := range nbitest.InventoryRoots {
		for _, path := range []string{root + "/resourcePools", root + "/subscriptions"} {
			require.Equal(t, http.StatusOK, do(reader, http.MethodGet, path).Code(), "reader GET %s", path)
			x := do(nobody, http.MethodGet, path)
			require.Equal(t, http.StatusForbidden, x.Code(), "nobody GET %s", path)
			require.Contains(t, string(x.Body), "o2ims-reader", "the 403 names the role")
		}
		path := root + "/subscriptions"
		require.Equal(t, http.StatusOK, do(subscriber, http.MethodPost, path).Code(), "subscriber POST %s", path)
		require.Equal(t, http.StatusForbidden, do(reader, http.MethodPost, path).Code(), "reader POST %s", path)
		require.Equal(t, http.StatusForbidden, do(nobody, http.MethodPost, path).Code(), "nobody POST %s", path)
	}
	for _, root := range nbitest.MonitoringRoots {
		path := root + "/alarms"
		require.Equal(t, http.StatusOK, do(reader, http.MethodGet, path).Code(), "reader GET %s", path)
		require.Equal(t, http.StatusForbidden, do(nobody, http.MethodGet, path).Code(), "nobody GET %s", path)
		require.Equal(t, http.StatusForbidden, do(reader, http.MethodPatch, path+"/a1").Code(), "reader PATCH %s", path)
	}
	e.RequireNoSecretsLogged(reader, subscriber, nobody)
}
