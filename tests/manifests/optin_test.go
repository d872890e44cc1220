package manifests_test

import (
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// The opt-in add-ons of issue 35 (SMO-grade access), kept out of manifests/production: the subsets of the
// five production Components are rendered in TestEveryCombinationOfComponentsCarriesItsPartsAndNothingElse;
// each of these is rendered on the base (with what it needs) and on all five, and the four together.
var optIn = map[string]part{
	"metrics-auth": {
		objects: []string{"ClusterRole//o2ims-operator-metrics-auth", "ClusterRoleBinding//o2ims-operator-metrics-auth",
			"ClusterRole//o2ims-operator-metrics-reader", "ClusterRoleBinding//o2ims-operator-metrics-reader",
			"ServiceAccount/o2ims/o2ims-operator-metrics-scraper", "Secret/o2ims/o2ims-operator-metrics-scraper-token"},
		env: map[string]string{"METRICS_AUTH": "kubernetes"},
	},
	"network-policy": {objects: []string{"NetworkPolicy/o2ims/o2ims-operator"}},
	"nbi-oauth": {
		env: map[string]string{"NBI_AUTH": "oauth,kubernetes", "OAUTH_ISSUER_URL": "https://oauth.set-me.invalid",
			"OAUTH_AUDIENCE": "o2ims-nbi", "OAUTH_CA_FILE": "/var/run/secrets/o2ims/oauth-ca/ca.crt"},
		volumes: map[string]string{"oauth-ca": "o2ims-oauth-ca"},
		mounts:  map[string]string{"oauth-ca": "/var/run/secrets/o2ims/oauth-ca"},
	},
	"smo-client": {
		env: map[string]string{
			"SMO_URL": "https://smo.set-me.invalid", "SMO_REGISTRATION_URL": "https://smo.set-me.invalid/register",
			"SMO_OAUTH_TOKEN_URL": "https://smo.set-me.invalid/oauth2/token", "SMO_OAUTH_CLIENT_ID": "o2ims-operator",
			"SMO_OAUTH_SCOPES": "", "SMO_OAUTH_AUDIENCE": "",
			"SMO_OAUTH_CLIENT_SECRET_FILE": "/var/run/secrets/o2ims/smo-oauth/client-secret",
			"SMO_TLS_CERT_FILE":            "/var/run/secrets/o2ims/smo-tls/tls.crt",
			"SMO_TLS_KEY_FILE":             "/var/run/secrets/o2ims/smo-tls/tls.key",
			"SMO_CA_FILE":                  "/var/run/secrets/o2ims/smo-ca/ca.crt",
		},
		volumes: map[string]string{"smo-oauth": "o2ims-smo-oauth-client", "smo-tls": "o2ims-smo-tls", "smo-ca": "o2ims-smo-ca"},
		mounts: map[string]string{"smo-oauth": "/var/run/secrets/o2ims/smo-oauth", "smo-tls": "/var/run/secrets/o2ims/smo-tls",
			"smo-ca": "/var/run/secrets/o2ims/smo-ca"},
	},
}

// needs are the Components an opt-in add-on must be stacked after.
var needs = map[string][]string{"nbi-oauth": {"nbi-auth"}}

// secretVolumes is a pod's volumes as name → Secret, each mounted read-only where mounts says.
func secretVolumes(t *testing.T, objs objects) (vols, mounts map[string]string) {
	t.Helper()
	d := deployment(t, objs)
	vols, mounts = map[string]string{}, map[string]string{}
	for _, v := range d.Spec.Template.Spec.Volumes {
		require.NotNil(t, v.Secret, v.Name)
		vols[v.Name] = v.Secret.SecretName
	}
	for _, m := range container(t, d).VolumeMounts {
		assert.True(t, m.ReadOnly, m.Name)
		mounts[m.Name] = m.MountPath
	}
	return vols, mounts
}

// Each opt-in add-on, stacked last on the base (after what it needs) and on all five production
// Components, adds exactly its own objects and its settings of the Deployment to what the stack renders
// without it, every object labelled; the four together add the four's. A Secret it ships holds no value.
func TestEachOptInComponentAddsItsPartsAndNothingElse(t *testing.T) {
	all := slices.Sorted(maps.Keys(optIn))
	stacks := map[string][]string{}
	for _, c := range all {
		stacks[c+" on the base"] = append(slices.Clone(needs[c]), c)
		stacks[c+" on every add-on"] = append(slices.Clone(kubeapi.Components), c)
	}
	stacks["all on every add-on"] = append(slices.Clone(kubeapi.Components), all...)
	for name, stack := range stacks {
		t.Run(name, func(t *testing.T) {
			var without, added []string
			for _, c := range stack {
				if _, ok := optIn[c]; ok {
					added = append(added, c)
				} else {
					without = append(without, c)
				}
			}
			before, _ := render(t, without...)
			after, _ := render(t, stack...)
			assertLabelsAndNamespace(t, after)
			assertNoDeadService(t, after)
			want := slices.Collect(maps.Keys(before))
			wantEnv := envOf(container(t, deployment(t, before)))
			wantVols, wantMounts := secretVolumes(t, before)
			for _, c := range added {
				want = append(want, optIn[c].objects...)
				maps.Copy(wantEnv, optIn[c].env)
				maps.Copy(wantVols, optIn[c].volumes)
				maps.Copy(wantMounts, optIn[c].mounts)
			}
			sort.Strings(want)
			assert.Equal(t, want, after.keys())
			assert.Equal(t, wantEnv, envOf(container(t, deployment(t, after))))
			vols, mounts := secretVolumes(t, after)
			assert.Equal(t, wantVols, vols)
			assert.Equal(t, wantMounts, mounts)
			for k, u := range after {
				if u.GetKind() == "Secret" {
					assert.Empty(t, u.Object["data"], "%s holds a value", k)
					assert.Empty(t, u.Object["stringData"], "%s holds a value", k)
				}
			}
		})
	}
}

// nbi-oauth needs nbi-auth's review role and O2IMS roles, stacked before it (whose NBI_AUTH=kubernetes
// would otherwise win): without it, or after it, kustomize refuses to render, naming the role it looked for.
func TestNBIOAuthRequiresNBIAuthStackedBeforeIt(t *testing.T) {
	for _, stack := range [][]string{{"nbi-oauth"}, {"nbi-oauth", "nbi-auth"}, {"inventory", "nbi-oauth", "metrics-auth"}} {
		out, err := renderOutput(t, stack...)
		require.Error(t, err, "%v renders:\n%s", stack, out)
		assert.Contains(t, out, "o2ims-nbi-reader", "%v: the refusal names what is missing", stack)
	}
	objs, _ := render(t, "nbi-auth", "nbi-tls", "nbi-oauth")
	assert.Equal(t, "oauth,kubernetes", envOf(container(t, deployment(t, objs)))["NBI_AUTH"])
}

// metrics-auth stacked after monitoring: the ServiceMonitor sends the scraper's token, from the Secret the
// cluster writes for the scraper ServiceAccount, which is bound to the reader ClusterRole — get on /metrics
// and nothing else.
func TestMetricsAuthHasTheServiceMonitorSendTheScrapersToken(t *testing.T) {
	objs, _ := render(t, "monitoring", "metrics-auth")
	sm := objs["ServiceMonitor/o2ims/o2ims-operator"]
	require.NotNil(t, sm)
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	require.Len(t, endpoints, 1)
	auth, _, _ := unstructured.NestedMap(endpoints[0].(map[string]any), "authorization")
	assert.Equal(t, map[string]any{"type": "Bearer", "credentials": map[string]any{"name": "o2ims-operator-metrics-scraper-token", "key": "token"}}, auth)

	var secret corev1.Secret
	convert(t, objs["Secret/o2ims/o2ims-operator-metrics-scraper-token"], &secret)
	assert.Equal(t, corev1.SecretTypeServiceAccountToken, secret.Type)
	assert.Equal(t, "o2ims-operator-metrics-scraper", secret.Annotations[corev1.ServiceAccountNameKey])
	require.Contains(t, objs, "ServiceAccount/o2ims/o2ims-operator-metrics-scraper")

	var role rbacv1.ClusterRole
	convert(t, objs["ClusterRole//o2ims-operator-metrics-reader"], &role)
	assert.Equal(t, []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}, role.Rules)
	var binding rbacv1.ClusterRoleBinding
	convert(t, objs["ClusterRoleBinding//o2ims-operator-metrics-reader"], &binding)
	assert.Equal(t, role.Name, binding.RoleRef.Name)
	assert.Equal(t, []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "o2ims-operator-metrics-scraper", Namespace: "o2ims"}}, binding.Subjects)
}

// The NetworkPolicy isolates the operator's pods for ingress and admits exactly two of the container's
// ports, each from the namespaces labelled for it; egress is not restricted.
func TestNetworkPolicyAdmitsOnlyTheNBIAndHealthPorts(t *testing.T) {
	objs, _ := render(t, append(slices.Clone(kubeapi.Components), "network-policy")...)
	var np networkingv1.NetworkPolicy
	convert(t, objs["NetworkPolicy/o2ims/o2ims-operator"], &np)
	d := deployment(t, objs)
	for k, v := range np.Spec.PodSelector.MatchLabels {
		assert.Equal(t, v, d.Spec.Template.Labels[k], "the policy selects the operator's pods")
	}
	assert.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, np.Spec.PolicyTypes)
	ports := map[string]bool{}
	for _, p := range container(t, d).Ports {
		ports[p.Name] = true
	}
	admitted := map[string]string{}
	for _, rule := range np.Spec.Ingress {
		require.Len(t, rule.Ports, 1)
		require.Len(t, rule.From, 1)
		require.Nil(t, rule.From[0].IPBlock)
		require.Nil(t, rule.From[0].PodSelector)
		port := rule.Ports[0].Port.String()
		assert.True(t, ports[port], "port %s is a named port of the container", port)
		labels := rule.From[0].NamespaceSelector.MatchLabels
		require.Len(t, labels, 1)
		for k, v := range labels {
			assert.Equal(t, "true", v)
			admitted[port] = strings.TrimPrefix(k, "o2ims.provisioning.oran.org/")
		}
	}
	assert.Equal(t, map[string]string{"nbi": "nbi-client", "health": "metrics-scraper"}, admitted)
}

// convert reads a rendered object into its typed form, refusing a field the type does not have.
func convert(t *testing.T, u *unstructured.Unstructured, into any) {
	t.Helper()
	require.NotNil(t, u)
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, into, true))
}
