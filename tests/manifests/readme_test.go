package manifests_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// siteKustomization is the kustomization docs/deploying.md's "Deploying" shows, read from that page.
func siteKustomization(t *testing.T) string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(mustRoot(t), "docs", "deploying.md"))
	require.NoError(t, err)
	text := string(readme)
	start := strings.Index(text, "\n## Deploying\n")
	require.GreaterOrEqual(t, start, 0, "docs/deploying.md has no Deploying section")
	section := text[start:]
	if end := strings.Index(section[1:], "\n## "); end >= 0 {
		section = section[:end+1]
	}
	const marker = "# manifests/site/kustomization.yaml\n"
	i := strings.Index(section, marker)
	require.GreaterOrEqual(t, i, 0, "no %q block in Deploying", strings.TrimSpace(marker))
	block := section[i:]
	block = block[:strings.Index(block, "```")]
	// The block is indented in a list item: take the indentation of its first line off every line.
	lineStart := strings.LastIndex(section[:i], "\n") + 1
	indent := section[lineStart:i]
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		lines = append(lines, strings.TrimPrefix(l, indent))
	}
	return strings.Join(lines, "\n")
}

func mustRoot(t *testing.T) string {
	t.Helper()
	root, err := kubeapi.RepoRoot()
	require.NoError(t, err)
	return root
}

// docs/deploying.md's site kustomization, as written there, renders with the real kubectl: it stacks what
// manifests/production stacks, the site's NETBOX_URL replaces the placeholder, its image overrides the
// base's, and the
// monitoring objects carry kube-prometheus-stack's release label.
func TestTheDeployingSiteKustomizationRenders(t *testing.T) {
	block := siteKustomization(t)
	var site, prod struct {
		Resources  []string `json:"resources"`
		Components []string `json:"components"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(block), &site))
	raw, err := os.ReadFile(filepath.Join(mustRoot(t), "manifests", "production", "kustomization.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(raw, &prod))
	assert.Equal(t, prod.Resources, site.Resources, "deploying.md's site and manifests/production differ")
	assert.Equal(t, prod.Components, site.Components, "deploying.md's site and manifests/production differ")

	// As manifests/site/ of the checkout: "../" is manifests/, seen from a temporary directory.
	dir := t.TempDir()
	rel, err := filepath.Rel(dir, filepath.Join(mustRoot(t), "manifests"))
	require.NoError(t, err)
	body := strings.ReplaceAll(block, "  - ../", "  - "+filepath.ToSlash(rel)+"/")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(body), 0o644))
	out, err := kubectl(t, "kustomize", dir)
	require.NoError(t, err, "docs/deploying.md's site kustomization:\n%s\n%s", body, out)
	objs := parse(t, out)
	all, _ := render(t, kubeapi.Components...)
	assert.Equal(t, all.keys(), objs.keys())

	c := container(t, deployment(t, objs))
	assert.Equal(t, "https://netbox.example.com", envOf(c)["NETBOX_URL"])
	assert.Equal(t, "registry.example.com/o2ims-operator:v0.1.0", c.Image, "the site's images: entry overrides the base's")
	for _, k := range []string{"ServiceMonitor/o2ims/o2ims-operator", "PrometheusRule/o2ims/o2ims-operator"} {
		require.Contains(t, objs, k)
		assert.Equal(t, "kube-prometheus-stack", objs[k].GetLabels()["release"], k)
	}
	assert.Empty(t, objs["Deployment/o2ims/o2ims-operator"].GetLabels()["release"], "the label patch reaches beyond monitoring")
}
