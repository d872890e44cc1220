package nbitest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// ApplyO2IMSRoles creates the shipped O2IMS roles and their group bindings
// (manifests/nbi-auth/objects/o2ims-roles.yaml) in the shared API server, once: tests share them.
func ApplyO2IMSRoles(t testing.TB, kapi *kubeapi.Server) {
	t.Helper()
	root, err := kubeapi.RepoRoot()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, "manifests", "nbi-auth", "objects", "o2ims-roles.yaml"))
	require.NoError(t, err)
	cs, ctx := kapi.AdminClientset(), context.Background()
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var kind struct{ Kind string }
		require.NoError(t, yaml.Unmarshal([]byte(doc), &kind))
		switch kind.Kind {
		case "ClusterRole":
			var r rbacv1.ClusterRole
			require.NoError(t, yaml.Unmarshal([]byte(doc), &r))
			_, err = cs.RbacV1().ClusterRoles().Create(ctx, &r, metav1.CreateOptions{})
		case "ClusterRoleBinding":
			var b rbacv1.ClusterRoleBinding
			require.NoError(t, yaml.Unmarshal([]byte(doc), &b))
			_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &b, metav1.CreateOptions{})
		default:
			continue
		}
		if !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
	}
	// The API server's authorizer sees new bindings a moment later: wait until each group is granted.
	for _, r := range nbi.Roles() {
		verb, path := r.Rules[0].Verbs[0], r.Rules[0].Paths[0]
		if p, ok := strings.CutSuffix(path, "*"); ok {
			path = p + "x"
		}
		kubeapi.Eventually(t, 30*time.Second, func() bool {
			sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
				User: "roles-probe", Groups: []string{r.Name},
				NonResourceAttributes: &authzv1.NonResourceAttributes{Path: path, Verb: verb},
			}}, metav1.CreateOptions{})
			return err == nil && sar.Status.Allowed
		}, "the API server never granted group %s its role", r.Name)
	}
}

// NBIToken is a ServiceAccount token minted for the NBI's audience (nbi.DefaultTokenAudience), the
// only Kubernetes tokens NBI_AUTH=kubernetes accepts by default.
func NBIToken(t testing.TB, kapi *kubeapi.Server, namespace, name string) string {
	t.Helper()
	token, err := kapi.ServiceAccountTokenFor(context.Background(), namespace, name, "o2ims-nbi")
	require.NoError(t, err)
	return token
}
