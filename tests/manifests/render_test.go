package manifests_test

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// part is what one add-on Component brings: its own objects and its settings of the Deployment.
type part struct {
	objects []string          // Kind/namespace/name
	env     map[string]string // container environment it sets ("" value: set, from a valueFrom or any value)
	volumes map[string]string // volume name → Secret name
	mounts  map[string]string // volume name → mount path
}

// parts is the expectation, written out by hand (not read from the files under test).
var parts = map[string]part{
	"inventory": {
		objects: []string{
			"Role/metal3/o2ims-operator-metal3", "RoleBinding/metal3/o2ims-operator-metal3",
			"Role/o2ims-bmc-credentials/o2ims-operator-bmc-credentials", "RoleBinding/o2ims-bmc-credentials/o2ims-operator-bmc-credentials",
			"Role/o2ims/o2ims-operator-inventory-subscriptions", "RoleBinding/o2ims/o2ims-operator-inventory-subscriptions",
		},
		env: map[string]string{
			"NETBOX_URL": "https://netbox.set-me.invalid", "NETBOX_TOKEN_FILE": "/var/run/secrets/o2ims/netbox/token",
			"METAL3_NAMESPACE": "metal3", "BMC_CREDENTIALS_NAMESPACE": "o2ims-bmc-credentials",
		},
		volumes: map[string]string{"netbox-token": "o2ims-netbox-token", "netbox-ca": "o2ims-netbox-ca"},
		mounts:  map[string]string{"netbox-token": "/var/run/secrets/o2ims/netbox", "netbox-ca": "/var/run/secrets/o2ims/netbox-ca"},
	},
	"nbi-auth": {
		objects: []string{"ClusterRole//o2ims-operator-nbi-auth", "ClusterRoleBinding//o2ims-operator-nbi-auth",
			// The O2IMS roles (issue 35), each bound to its group.
			"ClusterRole//o2ims-nbi-reader", "ClusterRoleBinding//o2ims-nbi-reader",
			"ClusterRole//o2ims-nbi-subscriber", "ClusterRoleBinding//o2ims-nbi-subscriber",
			"ClusterRole//o2ims-nbi-maintainer", "ClusterRoleBinding//o2ims-nbi-maintainer",
			"ClusterRole//o2ims-nbi-provisioner", "ClusterRoleBinding//o2ims-nbi-provisioner",
			"ClusterRole//o2ims-nbi-admin", "ClusterRoleBinding//o2ims-nbi-admin"},
		env: map[string]string{"NBI_AUTH": "kubernetes"},
	},
	"nbi-tls": {
		objects: []string{"Service/o2ims/o2ims-operator-nbi"},
		env: map[string]string{
			"NBI_TLS_CERT_FILE": "/var/run/secrets/o2ims/nbi-tls/tls.crt", "NBI_TLS_KEY_FILE": "/var/run/secrets/o2ims/nbi-tls/tls.key",
		},
		volumes: map[string]string{"nbi-tls": "o2ims-operator-nbi-tls"},
		mounts:  map[string]string{"nbi-tls": "/var/run/secrets/o2ims/nbi-tls"},
	},
	"ha": {
		objects: []string{"PodDisruptionBudget/o2ims/o2ims-operator"},
	},
	"monitoring": {
		objects: []string{"ServiceMonitor/o2ims/o2ims-operator", "PrometheusRule/o2ims/o2ims-operator", "ConfigMap/o2ims/o2ims-operator-dashboard",
			"ServiceAccount/o2ims/o2ims-operator-alertmanager",
			"ClusterRole//o2ims-operator-alertmanager", "ClusterRoleBinding//o2ims-operator-alertmanager"},
	},
}

// The base alone: what every combination starts from.
var baseArgs = []string{"--all-namespaces", "--liveness=http://0.0.0.0:8080/healthz"}

const shippedImage = "ghcr.io/o2ims-operator/o2ims-operator:v0.1.0"

func container(t *testing.T, d *appsv1.Deployment) corev1.Container {
	t.Helper()
	require.Len(t, d.Spec.Template.Spec.Containers, 1)
	return d.Spec.Template.Spec.Containers[0]
}

func envOf(c corev1.Container) map[string]string {
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	return env
}

// Every subset of the five add-on Components (2^5 = 32), stacked in one kustomization and rendered by the
// real kubectl: the objects are the base's plus exactly the chosen parts' own; the Deployment carries every
// chosen part's settings and none of the others'; the NBI leaves loopback only with nbi-tls, which refuses
// to render without nbi-auth, so no Service is dead; every object carries the recommended labels and the
// namespace enforces the restricted Pod Security level; no rendering holds a Namespace but o2ims (metal3,
// the credentials and Porch/CAPI namespaces are the administrator's), and monitoring leaves the
// Deployment as it is.
func TestEveryCombinationOfComponentsCarriesItsPartsAndNothingElse(t *testing.T) {
	require.Len(t, kubeapi.Components, len(parts))
	baseObjs, _ := render(t)
	baseDep := deployment(t, baseObjs)
	baseEnv := envOf(container(t, baseDep))
	assert.Equal(t, "127.0.0.1", baseEnv["NBI_HOST"])
	for _, p := range parts {
		for _, k := range p.objects {
			require.NotContains(t, baseObjs, k, "the base renders an add-on's object")
		}
	}
	deployments := map[string]*appsv1.Deployment{}
	for mask := 0; mask < 1<<len(kubeapi.Components); mask++ {
		var chosen []string
		on := map[string]bool{}
		for i, c := range kubeapi.Components {
			if mask&(1<<i) != 0 {
				chosen = append(chosen, c)
				on[c] = true
			}
		}
		name := strings.Join(chosen, "+")
		if name == "" {
			name = "base"
		}
		t.Run(name, func(t *testing.T) {
			if on["nbi-tls"] && !on["nbi-auth"] {
				out, err := renderOutput(t, chosen...)
				require.Error(t, err, "nbi-tls without nbi-auth renders:\n%s", out)
				return
			}
			objs, _ := render(t, chosen...)
			assertLabelsAndNamespace(t, objs)
			assertNoDeadService(t, objs)

			// Objects: the base's and the chosen parts' own, nothing else.
			want := map[string]bool{}
			for k := range baseObjs {
				want[k] = true
			}
			for _, c := range chosen {
				for _, k := range parts[c].objects {
					want[k] = true
				}
			}
			var got []string
			for k := range objs {
				got = append(got, k)
				if strings.HasPrefix(k, "Namespace/") {
					assert.Equal(t, "Namespace//o2ims", k, "a namespace the operator does not own")
				}
			}
			var wantKeys []string
			for k := range want {
				wantKeys = append(wantKeys, k)
			}
			sort.Strings(got)
			sort.Strings(wantKeys)
			assert.Equal(t, wantKeys, got)
			assert.Contains(t, objs, "CustomResourceDefinition//provisioningrequests.o2ims.provisioning.oran.org")

			d := deployment(t, objs)
			deployments[name] = d
			c := container(t, d)
			assert.Equal(t, shippedImage, c.Image)

			// Environment: the base's, plus the chosen parts', with their values.
			env := envOf(c)
			wantEnv := map[string]string{}
			for k, v := range baseEnv {
				wantEnv[k] = v
			}
			for _, p := range chosen {
				for k, v := range parts[p].env {
					wantEnv[k] = v
				}
			}
			wantEnv["NBI_HOST"] = "127.0.0.1"
			if on["nbi-tls"] {
				wantEnv["NBI_HOST"] = "0.0.0.0"
			}
			assert.Equal(t, wantEnv, env)

			// Volumes and mounts: the chosen parts', from their Secrets; the inventory's are optional (a missing
			// Secret must not hold the pod in ContainerCreating), the NBI certificate's is not.
			vols, mounts := map[string]string{}, map[string]string{}
			for _, v := range d.Spec.Template.Spec.Volumes {
				require.NotNil(t, v.Secret, v.Name)
				vols[v.Name] = v.Secret.SecretName
				optional := v.Secret.Optional != nil && *v.Secret.Optional
				assert.Equal(t, strings.HasPrefix(v.Name, "netbox-"), optional, "volume %s optional", v.Name)
			}
			for _, m := range c.VolumeMounts {
				mounts[m.Name] = m.MountPath
				assert.True(t, m.ReadOnly, m.Name)
			}
			wantVols, wantMounts := map[string]string{}, map[string]string{}
			for _, p := range chosen {
				for k, v := range parts[p].volumes {
					wantVols[k] = v
				}
				for k, v := range parts[p].mounts {
					wantMounts[k] = v
				}
			}
			assert.Equal(t, wantVols, vols)
			assert.Equal(t, wantMounts, mounts)

			// HA: two leader-elected replicas rolled one at a time, spread over nodes; else one, recreated.
			wantArgs := append([]string(nil), baseArgs...)
			if on["ha"] {
				wantArgs = append(wantArgs, "--leader-elect")
				require.NotNil(t, d.Spec.Replicas)
				assert.EqualValues(t, 2, *d.Spec.Replicas)
				assert.Equal(t, appsv1.RollingUpdateDeploymentStrategyType, d.Spec.Strategy.Type)
				require.NotNil(t, d.Spec.Strategy.RollingUpdate)
				assert.Equal(t, "0", d.Spec.Strategy.RollingUpdate.MaxUnavailable.String())
				require.NotNil(t, d.Spec.Template.Spec.Affinity)
				assert.NotEmpty(t, d.Spec.Template.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
			} else {
				assert.EqualValues(t, 1, *d.Spec.Replicas)
				assert.Equal(t, appsv1.RecreateDeploymentStrategyType, d.Spec.Strategy.Type)
				assert.Nil(t, d.Spec.Template.Spec.Affinity)
			}
			assert.Equal(t, wantArgs, c.Args)
		})
	}
	// monitoring touches no Deployment field: with or without it, the same Deployment.
	for name, d := range deployments {
		if strings.HasSuffix(name, "monitoring") {
			without := strings.TrimSuffix(strings.TrimSuffix(name, "monitoring"), "+")
			if without == "" {
				without = "base"
			}
			if other, ok := deployments[without]; ok {
				assert.True(t, reflect.DeepEqual(other, d), "monitoring changes the Deployment of %s", without)
			}
		}
	}
}

// manifests/production is the example with every Component: it renders as the five stacked, and
// `kubectl kustomize manifests/` as the base with the CRD (what the upgrade applies).
func TestProductionStacksEveryComponent(t *testing.T) {
	all, _ := render(t, kubeapi.Components...)
	prodDir, err := kubeapi.RepoFile("manifests/production")
	require.NoError(t, err)
	out, err := kubectl(t, "kustomize", prodDir)
	require.NoError(t, err, out)
	prod := parse(t, out)
	assert.Equal(t, all.keys(), prod.keys())
	for k, u := range all {
		assert.Equal(t, u.Object, prod[k].Object, k)
	}

	base, _ := render(t)
	topDir, err := kubeapi.RepoFile("manifests")
	require.NoError(t, err)
	out, err = kubectl(t, "kustomize", topDir)
	require.NoError(t, err, out)
	assert.Equal(t, base.keys(), parse(t, out).keys())

	// A Component cannot be applied on its own: kubectl refuses instead of applying half an add-on.
	invDir, err := kubeapi.RepoFile("manifests/inventory")
	require.NoError(t, err)
	out, err = kubectl(t, "kustomize", invDir)
	assert.Error(t, err, "manifests/inventory renders on its own:\n%s", out)
}

// The optional cert-manager Component issues the certificate into the Secret the nbi-tls volume mounts,
// for the name of the NBI Service.
func TestCertManagerComponentIssuesTheNBICertificate(t *testing.T) {
	objs, _ := render(t, "nbi-auth", "nbi-tls", "nbi-tls/cert-manager")
	cert := objs["Certificate/o2ims/o2ims-operator-nbi-tls"]
	require.NotNil(t, cert, "no Certificate: %v", objs.keys())
	secret, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	assert.Equal(t, parts["nbi-tls"].volumes["nbi-tls"], secret)
	dns, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	assert.Contains(t, dns, "o2ims-operator-nbi.o2ims.svc")
	require.Contains(t, objs, "Service/o2ims/o2ims-operator-nbi")
}

// nbi-tls puts the NBI on the pod network behind its Service, so it requires nbi-auth stacked before it:
// without (or after) it, kustomize refuses to render, naming the NBI_AUTH it looked for, instead of an
// NBI open to the pod network unauthenticated or a Service nothing answers behind (a loopback NBI).
// nbi-auth alone keeps the NBI on loopback.
func TestNBITLSRequiresAuthenticationStackedBeforeIt(t *testing.T) {
	for _, c := range []struct {
		components []string
		host       string // "" for refused
	}{
		{[]string{"nbi-auth"}, "127.0.0.1"},
		{[]string{"nbi-auth", "nbi-tls"}, "0.0.0.0"},
		{[]string{"nbi-auth", "ha", "nbi-tls"}, "0.0.0.0"},
		{[]string{"nbi-tls"}, ""},
		{[]string{"ha", "inventory", "nbi-tls"}, ""},
		{[]string{"nbi-tls", "nbi-auth"}, ""},
		{[]string{"nbi-tls", "nbi-tls/cert-manager"}, ""},
	} {
		out, err := renderOutput(t, c.components...)
		if c.host == "" {
			require.Error(t, err, "%v renders:\n%s", c.components, out)
			assert.Contains(t, out, "NBI_AUTH", "%v: the refusal names what is missing", c.components)
			continue
		}
		require.NoError(t, err, "%v:\n%s", c.components, out)
		objs := parse(t, out)
		assert.Equal(t, c.host, envOf(container(t, deployment(t, objs)))["NBI_HOST"], "%v", c.components)
	}
}

// No rendering holds a Service nothing answers behind: every Service's target port is a named port of the
// operator's container whose listener is beyond loopback (the NBI's NBI_HOST; the health port listens
// where --liveness says, 0.0.0.0 in the base).
func assertNoDeadService(t *testing.T, objs objects) {
	t.Helper()
	c := container(t, deployment(t, objs))
	for k, u := range objs {
		if u.GetKind() != "Service" {
			continue
		}
		ports, _, _ := unstructured.NestedSlice(u.Object, "spec", "ports")
		for _, p := range ports {
			target, _, _ := unstructured.NestedString(p.(map[string]any), "targetPort")
			switch target {
			case "nbi":
				assert.Equal(t, "0.0.0.0", envOf(c)["NBI_HOST"], "%s: the NBI behind it listens on loopback", k)
			case "health":
				assert.Contains(t, c.Args, "--liveness=http://0.0.0.0:8080/healthz", k)
			default:
				t.Errorf("%s: target port %q is not one this test knows", k, target)
			}
		}
	}
}

// The alerts' runbook links are set in one place, manifests/monitoring/runbook.yaml: in a copy of
// manifests/ with another URL there, every alert of the rendered PrometheusRule links to that URL and its
// own section, and the ConfigMap holding it is kustomize input only, never rendered.
func TestRunbookURLIsSetInOnePlace(t *testing.T) {
	src, err := kubeapi.RepoFile("manifests")
	require.NoError(t, err)
	dst := filepath.Join(t.TempDir(), "manifests")
	require.NoError(t, filepath.Walk(src, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	}))
	runbook := filepath.Join(dst, "monitoring", "runbook.yaml")
	b, err := os.ReadFile(runbook)
	require.NoError(t, err)
	const shipped = "url: https://github.com/o2ims-operator/o2ims-operator/blob/main/docs/runbook.md\n"
	require.Contains(t, string(b), shipped)
	const ours = "https://wiki.example.org/o2ims/runbook"
	require.NoError(t, os.WriteFile(runbook, []byte(strings.Replace(string(b), shipped, "url: "+ours+"\n", 1)), 0o644))

	out, err := kubectl(t, "kustomize", filepath.Join(dst, "production"))
	require.NoError(t, err, out)
	objs := parse(t, out)
	assert.NotContains(t, objs, "ConfigMap//o2ims-operator-runbook")
	for k := range objs {
		assert.NotContains(t, k, "runbook", "the runbook ConfigMap is rendered")
	}
	rule := objs["PrometheusRule/o2ims/o2ims-operator"]
	require.NotNil(t, rule)
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	alerts := 0
	for _, g := range groups {
		rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rules {
			alert, _, _ := unstructured.NestedString(r.(map[string]any), "alert")
			if alert == "" {
				continue
			}
			alerts++
			url, _, _ := unstructured.NestedString(r.(map[string]any), "annotations", "runbook_url")
			assert.Equal(t, ours+"#"+strings.ToLower(alert), url)
		}
	}
	assert.Greater(t, alerts, 10)
}
