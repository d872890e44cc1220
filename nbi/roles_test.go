package nbi_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

// The shipped O2IMS roles grant exactly what nbi.Roles says (the table a 403 names roles from), and each
// ClusterRole is bound to the group of its role.
func TestShippedRolesAreTheTable(t *testing.T) {
	root, err := kubeapi.RepoRoot()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, "manifests", "nbi-auth", "objects", "o2ims-roles.yaml"))
	require.NoError(t, err)
	roles, bindings := map[string][]rbacv1.PolicyRule{}, map[string]rbacv1.ClusterRoleBinding{}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var kind struct{ Kind string }
		require.NoError(t, yaml.Unmarshal([]byte(doc), &kind))
		switch kind.Kind {
		case "ClusterRole":
			var r rbacv1.ClusterRole
			require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &r))
			roles[r.Name] = r.Rules
		case "ClusterRoleBinding":
			var b rbacv1.ClusterRoleBinding
			require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &b))
			bindings[b.Name] = b
		}
	}
	require.Len(t, roles, len(nbi.Roles()))
	for _, r := range nbi.Roles() {
		var want []rbacv1.PolicyRule
		for _, rule := range r.Rules {
			want = append(want, rbacv1.PolicyRule{NonResourceURLs: rule.Paths, Verbs: rule.Verbs})
		}
		require.Equal(t, want, roles[r.ClusterRole()], r.Name)
		b := bindings[r.ClusterRole()]
		require.Equal(t, r.ClusterRole(), b.RoleRef.Name)
		require.Equal(t, []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: r.Name}}, b.Subjects)
	}
}
