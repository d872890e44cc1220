package manifests_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// The recommended labels (kubernetes.io/docs/concepts/overview/working-with-objects/common-labels), with
// the values every object of the operator carries; version and component are checked apart.
var recommendedLabels = map[string]string{
	"app.kubernetes.io/name":       "o2ims-operator",
	"app.kubernetes.io/instance":   "o2ims-operator",
	"app.kubernetes.io/part-of":    "o2ims",
	"app.kubernetes.io/managed-by": "kustomize",
}

// assertLabelsAndNamespace checks a rendering: every object, whatever part added it, carries the
// recommended labels with the release's version (the image's tag) and a component; the pods too; the
// operator's namespace enforces the restricted Pod Security Standard.
func assertLabelsAndNamespace(t *testing.T, objs objects) {
	t.Helper()
	image := container(t, deployment(t, objs)).Image
	_, tag, ok := strings.Cut(image, ":")
	require.True(t, ok, "the image %s has no tag", image)
	for k, u := range objs {
		labels := u.GetLabels()
		for name, value := range recommendedLabels {
			assert.Equal(t, value, labels[name], "%s: label %s", k, name)
		}
		assert.Equal(t, tag, labels["app.kubernetes.io/version"], "%s: the version is the image's tag", k)
		assert.NotEmpty(t, labels["app.kubernetes.io/component"], "%s: no component", k)
	}
	d := deployment(t, objs)
	for name := range recommendedLabels {
		assert.NotEmpty(t, d.Spec.Template.Labels[name], "the pods' label %s", name)
	}
	assert.Equal(t, map[string]string{"app.kubernetes.io/name": "o2ims-operator"}, d.Spec.Selector.MatchLabels,
		"the selector stays as released (a Deployment's selector cannot change)")
	ns := objs["Namespace//o2ims"]
	require.NotNil(t, ns, "no Namespace o2ims")
	assert.Equal(t, "restricted", ns.GetLabels()["pod-security.kubernetes.io/enforce"])
}

// The labels hold with the cert-manager Component too (the 32 subsets of the five are checked in
// TestEveryCombinationOfComponentsCarriesItsPartsAndNothingElse).
func TestCertManagerComponentCarriesTheLabels(t *testing.T) {
	objs, _ := render(t, "nbi-auth", "nbi-tls", "nbi-tls/cert-manager")
	assertLabelsAndNamespace(t, objs)
}

// The namespace's restricted Pod Security level admits the operator's pod: the real kube-apiserver's
// PodSecurity admission, in a namespace labelled as the rendered one, accepts the Deployment's pod as the
// base and as every add-on shape it (server-side dry run: nothing runs).
func TestRestrictedNamespaceAdmitsTheOperatorsPod(t *testing.T) {
	cs := kubeapi.Shared(t).AdminClientset()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, components := range [][]string{nil, kubeapi.Components} {
		objs, _ := render(t, components...)
		name := fmt.Sprintf("psa-%d", time.Now().UnixNano())
		labels := objs["Namespace//o2ims"].GetLabels()
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		d := deployment(t, objs)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "o2ims-operator", Namespace: name, Labels: d.Spec.Template.Labels}, Spec: d.Spec.Template.Spec}
		_, err = cs.CoreV1().ServiceAccounts(name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: pod.Spec.ServiceAccountName}}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = cs.CoreV1().Pods(name).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		require.NoError(t, err, "%v", components)

		// And the level bites: a pod that may escalate privileges is refused there.
		bad := pod.DeepCopy()
		escalate := true
		bad.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = &escalate
		_, err = cs.CoreV1().Pods(name).Create(ctx, bad, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "violates PodSecurity \"restricted")
	}
}
