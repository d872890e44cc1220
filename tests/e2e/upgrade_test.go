package e2e

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/pythonimage"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/world"
	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

// The objects of the Python install (testdata/reference/python-install/operator.yaml) the upgrade command
// deletes, and Porch's role its second binding names, which stays.
const (
	pythonDeployment   = "o2ims-operator"
	pythonBindingOwn   = "o2ims:provisioning"
	pythonBindingPorch = "o2ims:porch-controllers-packagevariants"
	pythonRole         = "o2ims:provisioning-role"
	porchRole          = "porch-controllers-packagevariants"
)

var (
	clusterRoleBindingsGVR = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}
	clusterRolesGVR        = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
	deploymentsGVR         = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	crdGVR                 = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// upgradeCommand is the command of docs/upgrading.md's "Upgrading from the Python image": the first sh
// block of that section, as a user copies it. The README's quick start repeats it, so it must be there
// word for word too.
func upgradeCommand(t *testing.T) string {
	t.Helper()
	path, err := kubeapi.RepoFile("docs/upgrading.md")
	require.NoError(t, err)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(b), "\n## Upgrading from the Python image\n")
	require.True(t, ok, "docs/upgrading.md has no section \"Upgrading from the Python image\"")
	section, _, _ = strings.Cut(section, "\n## ")
	m := regexp.MustCompile("(?s)\n```sh\n(.*?)\n```\n").FindStringSubmatch(section)
	require.NotNil(t, m, "the upgrade section gives no sh command")
	readme, err := kubeapi.RepoFile("README.md")
	require.NoError(t, err)
	front, err := os.ReadFile(readme)
	require.NoError(t, err)
	require.Contains(t, string(front), "```sh\n"+m[1]+"\n", "README's quick start gives another upgrade command")
	return m[1]
}

// The Python install upgraded in place, as an SRE does it. A real API server holds what the Python image's
// install manifests made (applied with the real kubectl, its ProvisioningRequest CRD created as its README
// says) and the objects the released image left (tests/pythonimage: fulfilled, two in flight with kopf's
// records, one in flight without). The upgrade command is read from the README and run as it stands. Then:
// the Deployment is ours (the Python one deleted first, so its selector is no obstacle), the ServiceAccount
// can do what the shipped roles grant and nothing the Python bindings did, and the binary, run as that
// ServiceAccount with only what is left bound, carries every request in flight to FULFILLED on the Python
// image's PackageVariant (same uid; the API server's audit log shows no create of a PackageVariant) and
// writes neither the fulfilled request's status nor its PackageVariant.
//
// There is no controller-manager on the test's API server: a Deployment is only stored, and the garbage
// collector that ends a foreground deletion (removing the foregroundDeletion finalizer once no dependent
// is left, here none) is played by the test, while it checks that kubectl waits for it.
func TestUpgradeFromThePythonInstall(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	api, err := kubeapi.Start(ctx, kubeapi.Options{Dir: filepath.Join(dir, "kube"), Audit: true})
	require.NoError(t, err)
	defer api.Stop()
	adminKubeconfig, err := api.WriteKubeconfig(filepath.Join(dir, "kubeconfig"), "", "")
	require.NoError(t, err)
	assets, err := kubeapi.Assets()
	require.NoError(t, err)
	root, err := kubeapi.RepoRoot()
	require.NoError(t, err)
	kubectlEnv := append(os.Environ(), "KUBECONFIG="+adminKubeconfig, "PATH="+assets+string(os.PathListSeparator)+os.Getenv("PATH"))
	kubectl := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, filepath.Join(assets, "kubectl"), args...)
		cmd.Dir, cmd.Env = root, kubectlEnv
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	dyn := api.AdminDynamic()
	sa := "system:serviceaccount:" + stack.OperatorNamespace + ":" + stack.ServiceAccount
	can := func(args ...string) string {
		out, _ := kubectl(append([]string{"auth", "can-i", "--as=" + sa}, args...)...)
		lines := strings.Split(strings.TrimSpace(out), "\n") // kubectl may warn before its answer
		return strings.TrimSpace(lines[len(lines)-1])
	}

	// The cluster as the Python image ran on it.
	var crds []string
	for _, n := range []string{kubeapi.PackageVariantCRD, kubeapi.ClusterCRD} {
		p, err := kubeapi.ReferenceCRD(n)
		require.NoError(t, err)
		crds = append(crds, p)
	}
	require.NoError(t, api.InstallCRDs(ctx, crds...))
	for _, args := range [][]string{
		{"create", "-f", filepath.Join(kubeapi.ReferenceDir, "crds", "o2ims.provisioning.oran.org_provisioningrequests.yaml")},
		{"wait", "--for=condition=Established", "crd/provisioningrequests.o2ims.provisioning.oran.org"},
		{"apply", "-f", filepath.Join(kubeapi.ReferenceDir, "porch", "packagevariants-role.yaml")},
		{"apply", "-f", filepath.Join(kubeapi.ReferenceDir, "python-install", "operator.yaml")},
	} {
		out, err := kubectl(args...)
		require.NoError(t, err, "kubectl %v:\n%s", args, out)
	}
	w, err := world.Start(ctx, world.Options{Dynamic: dyn, RenderDelay: 200 * time.Millisecond, ProvisionDelay: 400 * time.Millisecond})
	require.NoError(t, err)
	defer w.Stop()
	as := func(s pythonimage.Scenario) pythonimage.As {
		return pythonimage.As{Name: "upg-" + string(s), Label: "upgrade"}
	}
	python := map[pythonimage.Scenario]pythonimage.Objects{}
	for _, s := range pythonimage.All {
		o, err := pythonimage.Load(s, as(s))
		require.NoError(t, err)
		python[s], err = o.Install(ctx, dyn)
		require.NoError(t, err)
	}
	pvs := dyn.Resource(external.PackageVariantGVR).Namespace("default")
	prs := dyn.Resource(v1alpha1.GVR)
	for _, s := range pythonimage.All { // rendered, as they were while the Python image waited
		eventually(t, 15*time.Second, func() bool {
			pv, err := pvs.Get(ctx, as(s).Name, metav1.GetOptions{})
			require.NoError(t, err)
			conds, _, _ := unstructured.NestedSlice(pv.Object, "status", "conditions")
			for _, c := range conds {
				if c.(map[string]any)["type"] == "Ready" {
					p := python[s]
					p.PackageVariant = pv
					python[s] = p
					return true
				}
			}
			return false
		}, "the world never rendered %s", as(s).Name)
	}
	fulfilledBefore, err := prs.Get(ctx, as(pythonimage.Fulfilled).Name, metav1.GetOptions{})
	require.NoError(t, err)
	pythonDeploy, err := api.AdminClientset().AppsV1().Deployments(stack.OperatorNamespace).Get(ctx, pythonDeployment, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "nephio-o2ims", pythonDeploy.Spec.Selector.MatchLabels["app.kubernetes.io/name"])
	require.Len(t, pythonDeploy.Spec.Template.Spec.Containers, 1)
	pc := pythonDeploy.Spec.Template.Spec.Containers[0]
	require.Equal(t, "nephio-o2ims", pc.Name)
	require.Equal(t, int64(0), *pythonDeploy.Spec.Template.Spec.SecurityContext.RunAsUser)
	require.True(t, slices.ContainsFunc(pc.Env, func(e corev1.EnvVar) bool { return e.Name == "KUBERNETES_BASE_URL" }))
	require.Equal(t, "100m", pc.Resources.Requests.Cpu().String())
	require.Equal(t, "256Mi", pc.Resources.Requests.Memory().String())

	// What the Python bindings grant the ServiceAccount, which the upgrade must take away.
	broad := [][]string{
		{"create", "customresourcedefinitions.apiextensions.k8s.io"},
		{"delete", "clusters.cluster.x-k8s.io", "-n", "kube-system"},
		{"create", "clusters.cluster.x-k8s.io", "-n", "default"},
		{"create", "packagevariants.config.porch.kpt.dev", "-n", "kube-system"},
		{"update", "packagevariants.config.porch.kpt.dev", "-n", "default", "--subresource=status"},
		{"create", "events", "-n", "kube-system"},
	}
	for _, c := range broad {
		require.Equal(t, "yes", can(c...), "before the upgrade: can-i %v", c)
	}
	// The rules as the API server lists them (resources it does not serve here included: Porch's
	// PackageRevisions and Repositories), in a namespace that is none of the operator's.
	listRules := func() string {
		out, err := kubectl("auth", "can-i", "--list", "--as="+sa, "-n", "kube-system")
		require.NoError(t, err, out)
		return out
	}
	broadRules := []string{"customresourcedefinitions.apiextensions.k8s.io", "clusters.cluster.x-k8s.io",
		"packagevariants.config.porch.kpt.dev", "packagerevisions.porch.kpt.dev", "repositories.config.porch.kpt.dev", "events"}
	before := listRules()
	t.Logf("what the ServiceAccount may do in kube-system under the Python install:\n%s", before)
	for _, r := range broadRules {
		require.Contains(t, before, r)
	}

	// A plain apply is refused: the Deployment's selector is immutable.
	out, err := kubectl("apply", "-k", "manifests/", "--dry-run=server")
	require.Error(t, err, out)
	assert.Contains(t, out, "field is immutable")

	// The README's command, as it stands, playing the garbage collector for the foreground deletion.
	command := upgradeCommand(t)
	t.Logf("running the README's upgrade command:\n%s", command)
	cmdCtx, stopCmd := context.WithCancel(ctx) // a command left waiting is killed with the test
	defer stopCmd()
	cmd := exec.CommandContext(cmdCtx, "bash", "-euo", "pipefail", "-c", command)
	cmdOut := &lockedBuffer{}
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = root, kubectlEnv, cmdOut, cmdOut
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deleted := []struct {
		gvr  schema.GroupVersionResource
		ns   string
		name string
	}{
		{deploymentsGVR, stack.OperatorNamespace, pythonDeployment},
		{clusterRoleBindingsGVR, "", pythonBindingOwn},
		{clusterRoleBindingsGVR, "", pythonBindingPorch},
		{clusterRolesGVR, "", pythonRole},
	}
	for _, d := range deleted {
		ri := dyn.Resource(d.gvr).Namespace(d.ns)
		eventually(t, 30*time.Second, func() bool {
			u, err := ri.Get(ctx, d.name, metav1.GetOptions{})
			require.NoError(t, err, "%s %s went before the garbage collector let it go", d.gvr.Resource, d.name)
			return u.GetDeletionTimestamp() != nil && slices.Contains(u.GetFinalizers(), metav1.FinalizerDeleteDependents)
		}, "kubectl never deleted %s %s in the foreground:\n%s", d.gvr.Resource, d.name, cmdOut)
	}
	select {
	case err := <-done:
		t.Fatalf("the command ended (%v) before the Python Deployment was gone:\n%s", err, cmdOut)
	case <-time.After(time.Second):
	}
	live, err := api.AdminClientset().AppsV1().Deployments(stack.OperatorNamespace).Get(ctx, pythonDeployment, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, pythonDeploy.UID, live.UID, "the Python Deployment was replaced while it was being deleted")
	for _, d := range deleted { // no dependents here (no ReplicaSet was made): the collector lets each go
		_, err := dyn.Resource(d.gvr).Namespace(d.ns).Patch(ctx, d.name, types.MergePatchType,
			[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	select {
	case err := <-done:
		require.NoError(t, err, "the README's upgrade command failed:\n%s", cmdOut)
	case <-time.After(60 * time.Second):
		t.Fatalf("the README's upgrade command did not end:\n%s", cmdOut)
	}
	t.Logf("its output:\n%s", cmdOut)
	assert.Contains(t, cmdOut.String(), "Warning: deleting cluster-scoped resources, not scoped to the provided namespace", "the warning the README calls expected")
	assert.Contains(t, cmdOut.String(), "deployment.apps/o2ims-operator created", "a new Deployment, not a patched one")

	// The Deployment is the one of manifests/.
	rendered, err := kubectl("kustomize", "manifests/")
	require.NoError(t, err, rendered)
	var want appsv1.Deployment
	for _, doc := range strings.Split(rendered, "\n---\n") {
		var d appsv1.Deployment
		require.NoError(t, yaml.Unmarshal([]byte(doc), &d))
		if d.Kind == "Deployment" {
			want = d
		}
	}
	require.Equal(t, pythonDeployment, want.Name, "manifests/ renders the Deployment of the same name")
	ours, err := api.AdminClientset().AppsV1().Deployments(stack.OperatorNamespace).Get(ctx, pythonDeployment, metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotEqual(t, pythonDeploy.UID, ours.UID)
	assert.Equal(t, want.Spec.Selector, ours.Spec.Selector)
	assert.Equal(t, want.Spec.Template.Labels, ours.Spec.Template.Labels)
	assert.Equal(t, want.Spec.Template.Spec.SecurityContext, ours.Spec.Template.Spec.SecurityContext)
	assert.Equal(t, want.Spec.Template.Spec.ServiceAccountName, ours.Spec.Template.Spec.ServiceAccountName)
	require.Len(t, ours.Spec.Template.Spec.Containers, 1, "the Python container is gone")
	c, wc := ours.Spec.Template.Spec.Containers[0], want.Spec.Template.Spec.Containers[0]
	assert.Equal(t, wc.Name, c.Name)
	assert.Equal(t, wc.Image, c.Image)
	assert.Equal(t, wc.Args, c.Args)
	assert.Equal(t, wc.Resources, c.Resources)
	var envNames, wantEnv []string
	for _, e := range c.Env {
		envNames = append(envNames, e.Name)
	}
	for _, e := range wc.Env {
		wantEnv = append(wantEnv, e.Name)
	}
	assert.Equal(t, wantEnv, envNames, "KUBERNETES_BASE_URL and the rest of the Python container are gone")
	crd, err := dyn.Resource(crdGVR).Get(ctx, "provisioningrequests.o2ims.provisioning.oran.org", metav1.GetOptions{})
	require.NoError(t, err)
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	require.NotEmpty(t, versions)
	assert.NotEmpty(t, versions[0].(map[string]any)["additionalPrinterColumns"], "the CRD is manifests/'")

	// The Python RBAC is gone but Porch's role; the ServiceAccount has exactly the shipped roles.
	for _, d := range deleted[1:] {
		_, err := dyn.Resource(d.gvr).Get(ctx, d.name, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "%s %s is left: %v", d.gvr.Resource, d.name, err)
	}
	_, err = dyn.Resource(clusterRolesGVR).Get(ctx, porchRole, metav1.GetOptions{})
	assert.NoError(t, err, "Porch's own role was deleted")
	for _, c := range broad {
		assert.Equal(t, "no", can(c...), "after the upgrade: can-i %v", c)
	}
	for _, c := range [][]string{
		{"create", "packagevariants.config.porch.kpt.dev", "-n", "default"},
		{"update", "packagevariants.config.porch.kpt.dev", "-n", "default"},
		{"watch", "clusters.cluster.x-k8s.io", "-n", "default"},
		{"create", "events", "-n", "default"},
		{"patch", "provisioningrequests.o2ims.provisioning.oran.org"},
		{"patch", "provisioningrequests.o2ims.provisioning.oran.org", "--subresource=status"},
		{"update", "leases.coordination.k8s.io", "-n", stack.OperatorNamespace},
	} {
		assert.Equal(t, "yes", can(c...), "after the upgrade: can-i %v", c)
	}
	after := listRules()
	t.Logf("what the ServiceAccount may do in kube-system after the upgrade:\n%s", after)
	for _, r := range broadRules {
		assert.NotContains(t, after, r)
	}

	// The binary as that ServiceAccount, with only what is left bound.
	p := launch(t, launchOptions{Name: "upgrade", API: api, NetBoxURL: "-",
		Env: map[string]string{"PROVISIONING_REQUEST_SELECTOR": as(pythonimage.Fulfilled).Selector()}})
	inFlight := []pythonimage.Scenario{pythonimage.Labels, pythonimage.NoLabels, pythonimage.Early}
	for _, s := range inFlight {
		var last v1alpha1.ProvisioningStatus
		eventually(t, 90*time.Second, func() bool {
			u, err := prs.Get(ctx, as(s).Name, metav1.GetOptions{})
			require.NoError(t, err)
			last = v1alpha1.StatusOf(u)
			return last.State == v1alpha1.StateFulfilled
		}, "%s never reached fulfilled; last status %+v; operator log:\n%s", as(s).Name, &last, lazy(p.log))
		pv, err := pvs.Get(ctx, as(s).Name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, python[s].PackageVariant.GetUID(), pv.GetUID(), "%s: the Python image's PackageVariant was replaced", s)
		assert.Equal(t, python[s].PackageVariant.Object["spec"], pv.Object["spec"], "%s: its spec was changed", s)
		require.Len(t, pv.GetOwnerReferences(), 1, "%s: adopted", s)
		assert.Equal(t, python[s].Request.GetUID(), pv.GetOwnerReferences()[0].UID, s)
		pr, err := prs.Get(ctx, as(s).Name, metav1.GetOptions{})
		require.NoError(t, err)
		cl, err := dyn.Resource(external.ClusterGVR("v1beta2")).Namespace("default").Get(ctx, as(s).ClusterName(), metav1.GetOptions{})
		require.NoError(t, err)
		id, _, _ := unstructured.NestedString(pr.Object, "status", "provisionedResourceSet", "oCloudNodeClusterId")
		assert.Equal(t, string(cl.GetUID()), id, s)
		if python[s].Cluster != nil {
			assert.Equal(t, python[s].Cluster.GetUID(), cl.GetUID(), "%s: the Python image's Cluster was replaced", s)
		}
	}
	fulfilled, err := prs.Get(ctx, as(pythonimage.Fulfilled).Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, fulfilledBefore.Object["status"], fulfilled.Object["status"], "the fulfilled request's status was rewritten")
	pv, err := pvs.Get(ctx, as(pythonimage.Fulfilled).Name, metav1.GetOptions{})
	require.NoError(t, err)
	pvBefore := python[pythonimage.Fulfilled].PackageVariant
	assert.Equal(t, pvBefore.Object["spec"], pv.Object["spec"], "the fulfilled request's PackageVariant was written")
	assert.Equal(t, pvBefore.GetAnnotations(), pv.GetAnnotations(), "the fulfilled request's PackageVariant was adopted")
	assert.Empty(t, pv.GetOwnerReferences(), "the fulfilled request's PackageVariant was adopted")

	// What the API server saw the ServiceAccount do.
	took, err := p.sigterm(t, 10*time.Second)
	require.NoError(t, err, "a clean stop")
	t.Logf("stopped %s after SIGTERM", took.Round(time.Millisecond))
	events, err := api.AuditEvents()
	require.NoError(t, err)
	var adoptions, installed int
	writes := []string{"create", "update", "patch", "delete"}
	for _, e := range events {
		if e.User.Username == kubeapi.AdminUser && e.Verb == "create" && e.ObjectRef.Resource == "packagevariants" {
			installed++ // tests/pythonimage putting the Python image's in place
		}
		if e.User.Username != sa || !slices.Contains(writes, e.Verb) {
			continue
		}
		ref := e.ObjectRef
		switch {
		case ref.Resource == "packagevariants" && e.Verb == "create":
			t.Errorf("the operator created a PackageVariant beside the Python image's: %s %s (%d)", e.Verb, e.RequestURI, e.ResponseStatus.Code)
		case ref.Resource == "packagevariants" && ref.Name == as(pythonimage.Fulfilled).Name:
			t.Errorf("the operator wrote the fulfilled request's PackageVariant: %s %s", e.Verb, e.RequestURI)
		case ref.Resource == "provisioningrequests" && ref.Subresource == "status" && ref.Name == as(pythonimage.Fulfilled).Name:
			t.Errorf("the operator wrote the fulfilled request's status: %s %s", e.Verb, e.RequestURI)
		case ref.Resource == "packagevariants":
			adoptions++
		}
		assert.NotEqual(t, http.StatusForbidden, e.ResponseStatus.Code, "refused: %s %s", e.Verb, e.RequestURI)
	}
	assert.Equal(t, len(pythonimage.All), installed, "the audit log saw the Python image's PackageVariants created")
	assert.Equal(t, len(inFlight), adoptions, "one write per adopted PackageVariant (the audit log saw the operator's writes)")
	assert.NotContains(t, strings.ToLower(p.log()), "forbidden", "the roles left after the upgrade lacked a permission")
}

// lockedBuffer collects a command's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
