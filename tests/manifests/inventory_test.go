package manifests_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
)

const simToken = "0123456789abcdef0123456789abcdef01234567"

// The inventory Component with NETBOX_URL set by the site's own patch (docs/deploying.md, step 2) and
// run as rendered, first before the NetBox token Secret exists: its volume is optional, so the container
// starts (no ContainerCreating) and the operator stops with one line naming NETBOX_TOKEN_FILE (the pod
// restarts until the Secret is there). After `kubectl create secret generic o2ims-netbox-token
// --from-file=token=…` the next start becomes ready against NetBox.
func TestInventoryComponentWithoutItsTokenSecretSaysSoThenRuns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	api := kubeapi.Shared(t)
	binary := operatorBinary(t)
	dir := t.TempDir()
	sim := netboxsim.New(netboxsim.Options{Tokens: []string{simToken}})
	for _, f := range netboxsim.StandardFields() {
		sim.AddCustomField(f)
	}
	ts := sim.Start()
	defer sim.Close()
	for _, ns := range []string{"metal3", "o2ims-bmc-credentials"} { // the administrator's
		require.NoError(t, api.EnsureNamespace(ctx, ns))
	}

	site := filepath.Join(dir, "site")
	require.NoError(t, kubeapi.WriteKustomization(site, true, "inventory"))
	k, err := os.ReadFile(filepath.Join(site, "kustomization.yaml"))
	require.NoError(t, err)
	patch := `patches:
  - patch: |-
      apiVersion: apps/v1
      kind: Deployment
      metadata:
        name: o2ims-operator
        namespace: o2ims
      spec:
        template:
          spec:
            containers:
              - name: operator
                env:
                  - name: NETBOX_URL
                    value: ` + ts.URL + `
                  - name: NETBOX_ALLOW_HTTP
                    value: "true"
`
	require.NoError(t, os.WriteFile(filepath.Join(site, "kustomization.yaml"), append(k, patch...), 0o644))
	out, err := kubectl(t, "apply", "-k", site)
	require.NoError(t, err, out)
	out, err = kubectl(t, "wait", "--for=condition=established", "crd/provisioningrequests.o2ims.provisioning.oran.org")
	require.NoError(t, err, out)
	rendered, err := kubectl(t, "kustomize", site)
	require.NoError(t, err, rendered)
	dep := deployment(t, parse(t, rendered))
	assert.Equal(t, ts.URL, envOf(container(t, dep))["NETBOX_URL"], "the site's patch wins over the placeholder")

	token, err := api.ServiceAccountToken(ctx, "o2ims", dep.Spec.Template.Spec.ServiceAccountName, "")
	require.NoError(t, err)
	tokenFile := filepath.Join(dir, "sa-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(token), 0o600))
	kc, err := api.WriteKubeconfig(filepath.Join(dir, "operator.kubeconfig"), "", tokenFile)
	require.NoError(t, err)
	start := func(name string) (*operator, int) {
		env := kubelet(t, ctx, api, dep.Spec.Template.Spec, dep.Namespace, filepath.Join(dir, name))
		ports, err := kubeapi.FreePorts(2)
		require.NoError(t, err)
		env["NBI_PORT"] = strconv.Itoa(ports[0])
		args := []string{"--kubeconfig=" + kc}
		for _, a := range container(t, dep).Args {
			args = append(args, strings.Replace(a, ":8080/", ":"+strconv.Itoa(ports[1])+"/", 1))
		}
		return startOperator(t, binary, env, args, filepath.Join(dir, name+".log")), ports[1]
	}

	p, _ := start("without-secret")
	select {
	case err := <-p.done:
		require.Error(t, err)
		log := p.logText()
		assert.Equal(t, 1, strings.Count(log, "\n"), "one line:\n%s", log)
		assert.Contains(t, log, "NETBOX_TOKEN_FILE cannot be read")
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		t.Fatalf("still running without its NetBox token:\n%s", p.logText())
	}

	tf := filepath.Join(dir, "netbox-token")
	require.NoError(t, os.WriteFile(tf, []byte(simToken), 0o600))
	out, err = kubectl(t, "-n", "o2ims", "create", "secret", "generic", "o2ims-netbox-token", "--from-file=token="+tf)
	require.NoError(t, err, out)
	p, health := start("with-secret")
	defer p.stop(t)
	p.waitReady(t, health)
}
