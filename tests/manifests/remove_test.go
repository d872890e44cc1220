package manifests_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// What the site holds that is not the operator's: a request, a BareMetalHost and the BMC Secret the operator
// wrote for it, an administrator's BMC credentials Secret.
const siteObjects = `apiVersion: o2ims.provisioning.oran.org/v1alpha1
kind: ProvisioningRequest
metadata:
  name: edge-cluster-01
spec:
  name: Edge 01
  templateName: nephio-workload-cluster
  templateVersion: v3.0.0
  templateParameters: {clusterName: edge-01}
---
apiVersion: metal3.io/v1alpha1
kind: BareMetalHost
metadata:
  name: netbox-7
  namespace: metal3
spec:
  online: false
  bootMACAddress: "52:54:00:00:00:07"
  bmc:
    address: redfish-virtualmedia+https://10.20.0.7/redfish/v1/Systems/1
    credentialsName: netbox-7-bmc-secret
---
apiVersion: v1
kind: Secret
metadata:
  name: netbox-7-bmc-secret
  namespace: metal3
stringData: {username: admin, password: secret}
---
apiVersion: v1
kind: Secret
metadata:
  name: rack-7-bmc
  namespace: o2ims-bmc-credentials
  labels:
    o2ims.provisioning.oran.org/netbox-device-7: "true"
stringData: {username: admin, password: secret}
`

var shared = []string{
	"CustomResourceDefinition//provisioningrequests.o2ims.provisioning.oran.org",
	"ProvisioningRequest//edge-cluster-01",
	"BareMetalHost/metal3/netbox-7",
	"Secret/metal3/netbox-7-bmc-secret",
	"Secret/o2ims-bmc-credentials/rack-7-bmc",
	"Namespace//metal3",
	"Namespace//o2ims-bmc-credentials",
	"Namespace//default",
	"ClusterRole//o2ims-provisioningrequests-view",
	"ClusterRole//o2ims-provisioningrequests-edit",
}

// Removing each add-on as README's "Deploying" says — take the Component out of the kustomization and
// apply it, then `kubectl delete -k manifests/<add-on>/objects` — on a real API server holding everything
// (all five stacked) and what the site made: each step deletes that add-on's own objects and its settings
// of the Deployment, and leaves the CRD, the request, the BareMetalHost, both BMC Secrets and the namespaces
// the administrator created. Last, `kubectl delete -k manifests/base` removes the operator and still leaves
// them. Its own API server: without a controller-manager the deleted namespace o2ims stays Terminating.
func TestRemovingAnAddOnLeavesTheCRDRequestsHostsAndSecrets(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	api, err := kubeapi.Start(ctx, kubeapi.Options{})
	require.NoError(t, err)
	defer api.Stop()
	crds, err := upstreamCRDs()
	require.NoError(t, err)
	dir := t.TempDir()
	// The Prometheus Operator's own CRDs (testdata/reference/prometheus-operator, v0.93.0): the monitoring
	// Component's objects are applied and deleted as that API server validates them.
	for _, f := range []string{"monitoring.coreos.com_servicemonitors.yaml", "monitoring.coreos.com_prometheusrules.yaml"} {
		p, err := kubeapi.ReferenceFile(filepath.Join("prometheus-operator", f))
		require.NoError(t, err)
		crds = append(crds, p)
	}
	require.NoError(t, api.InstallCRDs(ctx, crds...))
	kc, err := api.WriteKubeconfig(filepath.Join(dir, "kubeconfig"), "", "")
	require.NoError(t, err)
	assets, err := kubeapi.Assets()
	require.NoError(t, err)
	root, err := kubeapi.RepoRoot()
	require.NoError(t, err)
	run := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, filepath.Join(assets, "kubectl"), append([]string{"--kubeconfig", kc}, args...)...)
		cmd.Dir = root // README's commands run from the checkout
		var b bytes.Buffer
		cmd.Stdout, cmd.Stderr = &b, &b
		err := cmd.Run()
		return b.String(), err
	}
	must := func(args ...string) {
		t.Helper()
		out, err := run(args...)
		require.NoError(t, err, "kubectl %s:\n%s", strings.Join(args, " "), out)
	}
	// present answers whether kubectl finds the object ("Kind/namespace/name").
	present := func(key string) bool {
		t.Helper()
		f := strings.SplitN(key, "/", 3)
		args := []string{"get", f[0], f[2], "-o", "name"}
		if f[1] != "" {
			args = append(args, "-n", f[1])
		}
		out, err := run(args...)
		if err != nil {
			require.Contains(t, out, "NotFound", "kubectl %s", strings.Join(args, " "))
			return false
		}
		return true
	}
	deploymentEnv := func() string {
		out, err := run("get", "deployment", "o2ims-operator", "-n", "o2ims", "-o", "jsonpath={.spec.template.spec.containers[0].env[*].name}")
		require.NoError(t, err, out)
		return out
	}

	// As the administrator: the namespaces the operator works in but does not own.
	must("create", "namespace", "metal3")
	must("create", "namespace", "o2ims-bmc-credentials")
	site := filepath.Join(dir, "site")
	require.NoError(t, kubeapi.WriteKustomization(site, true, kubeapi.Components...))
	must("apply", "-k", site)
	must("wait", "--for=condition=established", "crd/provisioningrequests.o2ims.provisioning.oran.org")
	objects := filepath.Join(dir, "site-objects.yaml")
	require.NoError(t, os.WriteFile(objects, []byte(siteObjects), 0o600))
	must("apply", "-f", objects)
	for _, k := range shared {
		require.True(t, present(k), k)
	}
	for _, p := range kubeapi.Components {
		for _, k := range parts[p].objects {
			require.True(t, present(k), "%s applied: %s", p, k)
		}
	}

	remaining := append([]string(nil), kubeapi.Components...)
	// nbi-tls requires nbi-auth (it renders only stacked after it): it is removed first.
	order := []string{"inventory", "nbi-tls", "nbi-auth", "ha", "monitoring"}
	require.ElementsMatch(t, kubeapi.Components, order)
	for _, addOn := range order {
		remaining = slices.DeleteFunc(remaining, func(c string) bool { return c == addOn })
		require.NoError(t, kubeapi.WriteKustomization(site, true, remaining...))
		must("apply", "-k", site)
		must("delete", "-k", "manifests/"+addOn+"/objects")

		for _, k := range parts[addOn].objects {
			assert.False(t, present(k), "removing %s left %s", addOn, k)
		}
		for _, p := range remaining {
			for _, k := range parts[p].objects {
				assert.True(t, present(k), "removing %s deleted %s's %s", addOn, p, k)
			}
		}
		for _, k := range shared {
			assert.True(t, present(k), "removing %s deleted %s", addOn, k)
		}
		assert.True(t, present("Deployment/o2ims/o2ims-operator"), "removing %s deleted the Deployment", addOn)
		env := deploymentEnv()
		for name := range parts[addOn].env {
			assert.NotContains(t, env, name, "removing %s left its setting", addOn)
		}
	}

	// The operator removed, its API kept: the requests stay, and with them what they hold.
	must("delete", "-k", "manifests/base", "--wait=false") // no namespace controller here to finish o2ims
	assert.False(t, present("Deployment/o2ims/o2ims-operator"))
	assert.False(t, present("ClusterRole//o2ims-operator"))
	for _, k := range shared {
		assert.True(t, present(k), "removing the operator deleted %s", k)
	}
	for _, ns := range []string{"metal3", "o2ims-bmc-credentials"} {
		out, err := run("get", "namespace", ns, "-o", "jsonpath={.status.phase}")
		require.NoError(t, err, out)
		assert.Equal(t, "Active", out, ns)
	}
}
