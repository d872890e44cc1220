package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

// linesWith are the log lines containing every one of parts.
func linesWith(log string, parts ...string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			out = append(out, l)
		}
	}
	return out
}

// bindBaseRolesOnly gives a new ServiceAccount exactly the bindings of manifests/base (no overlay), as the
// real kubectl renders them, and answers its token.
func bindBaseRolesOnly(t *testing.T, sa string) string {
	t.Helper()
	ctx := context.Background()
	base, err := kubeapi.RepoFile("manifests/base")
	require.NoError(t, err)
	rendered, err := st.KubectlRun(ctx, "kustomize", base)
	require.NoError(t, err, rendered)
	var bindings []string
	for _, doc := range strings.Split(rendered, "\n---\n") {
		var obj map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(doc), &obj))
		if kind, _ := obj["kind"].(string); kind != "RoleBinding" && kind != "ClusterRoleBinding" {
			continue
		}
		meta := obj["metadata"].(map[string]any)
		meta["name"] = meta["name"].(string) + "-" + sa
		obj["subjects"] = []any{map[string]any{"kind": "ServiceAccount", "name": sa, "namespace": stack.OperatorNamespace}}
		b, err := yaml.Marshal(obj)
		require.NoError(t, err)
		bindings = append(bindings, string(b))
	}
	require.NotEmpty(t, bindings, "manifests/base has bindings")
	file := filepath.Join(t.TempDir(), "bindings.yaml")
	require.NoError(t, os.WriteFile(file, []byte(strings.Join(bindings, "---\n")), 0o600))
	token, err := st.API.ServiceAccountToken(ctx, stack.OperatorNamespace, sa, "")
	require.NoError(t, err)
	out, err := st.KubectlRun(ctx, "apply", "-f", file)
	require.NoError(t, err, out)
	return token
}

// With the base manifests' roles only and NETBOX_URL set, the BareMetalHost watch is refused (403): the
// operator says so within 60 s in one log line naming the resource and what grants it, /readyz says the
// same, and it stays up not ready (liveness 200) rather than exiting — applying the inventory component
// mends it without a restart. It used to stay up silently, with client-go's reflector errors only.
func TestBaseRolesOnlyWithNetBoxSayWhatIsMissingAndStayNotReady(t *testing.T) {
	token := bindBaseRolesOnly(t, "o2ims-operator-base")
	started := time.Now()
	p := launch(t, launchOptions{Name: "base-rbac", Token: token})
	want := []string{`cannot watch baremetalhosts.v1alpha1.metal3.io in namespace "metal3": permission denied (403: `,
		`system:serviceaccount:o2ims:o2ims-operator-base`, "; apply with the manifests/inventory component"}
	eventually(t, 60*time.Second, func() bool { return len(linesWith(p.log(), want...)) > 0 },
		"no line named the refused watch and its remedy within 60 s:\n%s", lazy(p.log))
	t.Logf("reported %s after start: %s", time.Since(started).Round(100*time.Millisecond), linesWith(p.log(), want...)[0])
	assert.Contains(t, linesWith(p.log(), want...)[0], "ERROR")

	code, body := p.get("/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	for _, w := range want {
		assert.Contains(t, body, w)
	}
	code, _ = p.get("/healthz")
	assert.Equal(t, http.StatusOK, code, "not-ready, not a restart loop")
	time.Sleep(10 * time.Second) // the reflector retries meanwhile
	assert.True(t, p.running(), "it stays up")
	assert.Len(t, linesWith(p.log(), want...), 1, "reported once, not at every retry")
	assert.Empty(t, linesWith(p.log(), "Failed to watch"), "no reflector noise besides")
	code, _ = p.get("/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code)

	took, err := p.sigterm(t, 10*time.Second)
	require.NoError(t, err, "a stop while not ready is clean")
	t.Logf("stopped %s after SIGTERM", took.Round(time.Millisecond))
}

// Without Metal3's BareMetalHost CRD and with NETBOX_URL set, the watch is refused with 404: the same one
// line (naming the resource and what installs it) in the log and /readyz, not ready, alive; installing the
// CRD makes it ready without a restart. A separate API server, since the shared one has every CRD.
func TestAnAbsentCRDIsReportedAndTheOperatorBecomesReadyOnceItIsInstalled(t *testing.T) {
	ctx := context.Background()
	api, err := kubeapi.Start(ctx, kubeapi.Options{Dir: filepath.Join(t.TempDir(), "kube")})
	require.NoError(t, err)
	defer api.Stop()
	var crds []string
	own, err := kubeapi.RepoFile(kubeapi.ProvisioningRequestCRD)
	require.NoError(t, err)
	crds = append(crds, own)
	for _, n := range []string{kubeapi.PackageVariantCRD, kubeapi.ClusterCRD} {
		path, err := kubeapi.ReferenceCRD(n)
		require.NoError(t, err)
		crds = append(crds, path)
	}
	require.NoError(t, api.InstallCRDs(ctx, crds...))

	p := launch(t, launchOptions{Name: "absent-crd", API: api, Token: api.AdminToken})
	want := []string{`cannot watch baremetalhosts.v1alpha1.metal3.io in namespace "metal3": the API server does not serve it, its CustomResourceDefinition is absent (404: `,
		"; install Metal3's BareMetalHost CRD, or unset NETBOX_URL to run without the inventory"}
	eventually(t, 60*time.Second, func() bool { return len(linesWith(p.log(), want...)) > 0 },
		"no line named the absent CRD within 60 s:\n%s", lazy(p.log))
	code, body := p.get("/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	for _, w := range want {
		assert.Contains(t, body, w)
	}
	code, _ = p.get("/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.True(t, p.running())

	bmh, err := kubeapi.ReferenceCRD(kubeapi.BareMetalHostCRD)
	require.NoError(t, err)
	require.NoError(t, api.InstallCRDs(ctx, bmh))
	eventually(t, 90*time.Second, func() bool { c, _ := p.get("/readyz"); return c == http.StatusOK },
		"never ready after the CRD was installed:\n%s", lazy(p.log))
	assert.NotEmpty(t, linesWith(p.log(), "watch works again"))
	took, err := p.sigterm(t, 10*time.Second)
	require.NoError(t, err)
	t.Logf("stopped %s after SIGTERM", took.Round(time.Millisecond))
}
