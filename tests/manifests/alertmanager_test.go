package manifests_test

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/alarmsapi"
	"github.com/o2ims-operator/o2ims-operator/tests/alerting"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// amConfig is what this test reads of manifests/monitoring/alertmanager.yml.
type amConfig struct {
	Route struct {
		Routes []struct {
			Receiver string   `json:"receiver"`
			Matchers []string `json:"matchers"`
			Continue bool     `json:"continue"`
		} `json:"routes"`
	} `json:"route"`
	Receivers []struct {
		Name           string      `json:"name"`
		WebhookConfigs []amWebhook `json:"webhook_configs"`
	} `json:"receivers"`
}

// amWebhook is a receiver's webhook_config.
type amWebhook struct {
	URL          string `json:"url"`
	SendResolved bool   `json:"send_resolved"`
	HTTPConfig   struct {
		Authorization struct {
			Type            string `json:"type"`
			CredentialsFile string `json:"credentials_file"`
		} `json:"authorization"`
		TLSConfig struct {
			CAFile string `json:"ca_file"`
		} `json:"tls_config"`
	} `json:"http_config"`
}

// The shipped Alertmanager route sends every alert of the shipped rules, resolutions too, to the NBI's
// webhook receiver — the nbi-tls Service's name, namespace and port, https, alarmsapi.AlertmanagerPath —
// with a bearer token; Debian's amtool accepts the file (where it is installed). The credentials it names
// are the monitoring component's ServiceAccount, which the API server allows exactly what the NBI's
// SubjectAccessReview asks of that route (post on its path as a non-resource URL), and nothing more: not
// even create on provisioningrequests.
func TestAlertmanagerRouteReachesTheNBIWebhookWithCredentialsItsAuthAccepts(t *testing.T) {
	root, err := kubeapi.RepoRoot()
	require.NoError(t, err)
	path := filepath.Join(root, "manifests", "monitoring", "alertmanager.yml")
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var cfg amConfig
	require.NoError(t, yaml.Unmarshal(raw, &cfg))

	require.Len(t, cfg.Route.Routes, 1)
	route := cfg.Route.Routes[0]
	assert.True(t, route.Continue, "the route leaves the administrator's other receivers their alerts")
	require.Len(t, route.Matchers, 1)
	m := regexp.MustCompile(`^alertname =~ "(.+)"$`).FindStringSubmatch(route.Matchers[0])
	require.NotNil(t, m, "matcher %q", route.Matchers[0])
	matches := regexp.MustCompile("^(?:" + m[1] + ")$")
	rules, err := alerting.LoadRules()
	require.NoError(t, err)
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				n++
				assert.True(t, matches.MatchString(r.Alert), "alert %s is not routed to the alarms", r.Alert)
			}
		}
	}
	require.NotZero(t, n)

	var hook *amWebhook
	for i := range cfg.Receivers {
		if cfg.Receivers[i].Name == route.Receiver {
			require.Len(t, cfg.Receivers[i].WebhookConfigs, 1)
			hook = &cfg.Receivers[i].WebhookConfigs[0]
		}
	}
	require.NotNil(t, hook, "no receiver %s", route.Receiver)
	assert.True(t, hook.SendResolved, "a resolved alert must reach the NBI to clear its alarm")
	assert.Equal(t, "Bearer", hook.HTTPConfig.Authorization.Type)
	assert.NotEmpty(t, hook.HTTPConfig.Authorization.CredentialsFile)
	assert.NotEmpty(t, hook.HTTPConfig.TLSConfig.CAFile)

	objs, _ := render(t, "monitoring", "nbi-auth", "nbi-tls")
	svc := objs["Service/o2ims/o2ims-operator-nbi"]
	require.NotNil(t, svc)
	ports, _, _ := unstructuredPorts(svc.Object)
	u, err := url.Parse(hook.URL)
	require.NoError(t, err)
	assert.Equal(t, "https", u.Scheme, "the NBI off loopback is TLS only")
	assert.Equal(t, svc.GetName()+"."+svc.GetNamespace()+".svc", u.Hostname())
	assert.Contains(t, ports, u.Port())
	assert.Equal(t, alarmsapi.AlertmanagerPath, u.Path)

	if amtool, err := exec.LookPath("amtool"); err == nil {
		out, err := exec.Command(amtool, "check-config", path).CombinedOutput()
		assert.NoError(t, err, "amtool check-config:\n%s", out)
	} else {
		t.Log("amtool not installed (Debian's prometheus-alertmanager has it): the file's syntax is not checked here")
	}

	// The credentials on the real API server, as rendered.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	api := kubeapi.Shared(t)
	require.NoError(t, api.EnsureNamespace(ctx, "o2ims"))
	out, err := kubectl(t, "apply", "-n", "o2ims", "-f", filepath.Join(root, "manifests", "monitoring", "objects", "alertmanager-credentials.yaml"))
	require.NoError(t, err, out)
	t.Cleanup(func() {
		_, _ = kubectl(t, "delete", "--ignore-not-found", "-n", "o2ims", "-f", filepath.Join(root, "manifests", "monitoring", "objects", "alertmanager-credentials.yaml"))
	})
	// As the NBI checks a caller (nbi/auth.go): a TokenReview of its bearer token, then a
	// SubjectAccessReview of post on the route's path as a non-resource URL (nbi.Mux.HandleURL).
	token, err := api.ServiceAccountToken(ctx, "o2ims", "o2ims-operator-alertmanager", "")
	require.NoError(t, err)
	cs := api.AdminClientset()
	review, err := cs.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.True(t, review.Status.Authenticated, review.Status.Error)
	user := review.Status.User
	allowed := func(verb, resource string) bool {
		sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
			User: user.Username, Groups: user.Groups, UID: user.UID,
			ResourceAttributes: &authzv1.ResourceAttributes{Group: v1alpha1.Group, Version: v1alpha1.Version, Resource: resource, Verb: verb},
		}}, metav1.CreateOptions{})
		require.NoError(t, err)
		return sar.Status.Allowed
	}
	allowedURL := func(verb, path string) bool {
		sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
			User: user.Username, Groups: user.Groups, UID: user.UID,
			NonResourceAttributes: &authzv1.NonResourceAttributes{Path: path, Verb: verb},
		}}, metav1.CreateOptions{})
		require.NoError(t, err)
		return sar.Status.Allowed
	}
	assert.True(t, allowedURL("post", alarmsapi.AlertmanagerPath), "the NBI would answer the webhook 403")
	assert.False(t, allowedURL("get", alarmsapi.Root+"/v1/alarms"), "Alertmanager's token may read the alarms")
	for _, verb := range []string{nbi.VerbCreate, nbi.VerbList, nbi.VerbUpdate, nbi.VerbDelete, nbi.VerbGet} {
		assert.False(t, allowed(verb, v1alpha1.Resource), "Alertmanager's token may %s provisioningrequests", verb)
	}
	out, err = kubectl(t, "auth", "can-i", "create", "secrets", "-n", "o2ims", "--as="+user.Username)
	assert.Error(t, err, "Alertmanager's token may create secrets: %s", out)
}

// unstructuredPorts answers a Service's port numbers as strings.
func unstructuredPorts(obj map[string]any) ([]string, bool, error) {
	spec, _ := obj["spec"].(map[string]any)
	list, _ := spec["ports"].([]any)
	var out []string
	for _, p := range list {
		pm, _ := p.(map[string]any)
		switch v := pm["port"].(type) {
		case int64:
			out = append(out, strconv.FormatInt(v, 10))
		case float64:
			out = append(out, strconv.Itoa(int(v)))
		case string:
			out = append(out, strings.TrimSpace(v))
		}
	}
	return out, len(out) > 0, nil
}
