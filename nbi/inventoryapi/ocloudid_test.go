package inventoryapi_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/o2ims-operator/o2ims-operator/internal/ocloud"
	"github.com/o2ims-operator/o2ims-operator/inventory"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
)

func ocloudNamespace(t *testing.T, srv *kubeapi.Server, name string) string {
	t.Helper()
	_, err := srv.AdminClientset().CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return name
}

// shippedConfigMapRole is a client of a service account bound in ns to the Role manifests/inventory
// ships for ConfigMaps, and to nothing else.
func shippedConfigMapRole(t *testing.T, srv *kubeapi.Server, ns string) kubernetes.Interface {
	t.Helper()
	ctx := context.Background()
	raw, err := os.ReadFile("../../manifests/inventory/objects/subscriptions-rbac.yaml")
	require.NoError(t, err)
	var role rbacv1.Role
	require.NoError(t, yaml.Unmarshal([]byte(strings.Split(string(raw), "\n---")[0]), &role))
	require.Equal(t, "Role", role.Kind)
	role.ObjectMeta = metav1.ObjectMeta{Name: "ocloud-id", Namespace: ns}
	_, err = srv.AdminClientset().RbacV1().Roles(ns).Create(ctx, &role, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = srv.AdminClientset().RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "ocloud-id", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "ocloud-id"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "ocloud-id", Namespace: ns}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	token, err := srv.ServiceAccountToken(ctx, ns, "ocloud-id", "")
	require.NoError(t, err)
	kube, err := kubernetes.NewForConfig(srv.ConfigForToken(token))
	require.NoError(t, err)
	return kube
}

func envOf(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

// Derived once and stored: a NETBOX_URL spelled differently at a later start re-keys nothing, OCLOUD_ID
// set to the stored id is accepted, and one set to another id is refused saying how to migrate.
func TestTheOCloudIDIsFixedOnceOnTheAPIServer(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	ctx := context.Background()
	ns := ocloudNamespace(t, srv, "ocloud-fixed")
	kube := srv.AdminClientset()
	const first, respelled = "https://netbox.example.org", "https://netbox.example.org:443/"
	require.NotEqual(t, ocloud.DefaultID(first), ocloud.DefaultID(respelled), "the two spellings must derive different ids")

	id, note, err := inventory.SettleOCloudID(ctx, kube, ns, envOf(nil), first)
	require.NoError(t, err)
	assert.Equal(t, ocloud.DefaultID(first), id, "the first start derives it as before (an upgrade keeps its ids)")
	assert.Empty(t, note)
	cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, inventory.OCloudIDConfigMap, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"oCloudId": id.String(), "derivedFrom": "NETBOX_URL"}, cm.Data, "the URL itself is not stored")

	again, note, err := inventory.SettleOCloudID(ctx, kube, ns, envOf(nil), respelled)
	require.NoError(t, err)
	assert.Equal(t, id, again, "a respelled NETBOX_URL re-keyed the ids")
	assert.Contains(t, note, "is kept")

	same, _, err := inventory.SettleOCloudID(ctx, kube, ns, envOf(map[string]string{"OCLOUD_ID": id.String()}), respelled)
	require.NoError(t, err)
	assert.Equal(t, id, same)

	other := uuid.MustParse("0b9d3c4e-1f2a-4b5c-8d6e-7f8091a2b3c4")
	_, _, err = inventory.SettleOCloudID(ctx, kube, ns, envOf(map[string]string{"OCLOUD_ID": other.String()}), first)
	require.Error(t, err)
	assert.Equal(t, "OCLOUD_ID="+other.String()+" differs from the O-Cloud id "+id.String()+" stored in ConfigMap ocloud-fixed/o2ims-operator-ocloud-id: "+
		"every inventory id, and the ids fulfilled requests recorded, would change. To keep them, set OCLOUD_ID="+id.String()+
		" or unset it; to re-key on purpose, delete that ConfigMap and start again (requests keep the ids they recorded until their spec changes)", err.Error())

	cm.Data["oCloudId"] = "not-a-uuid"
	_, err = kube.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	_, _, err = inventory.SettleOCloudID(ctx, kube, ns, envOf(nil), first)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is not a UUID")
}

// Replicas starting at once, each deriving its own id (NETBOX_URL spelled differently on each), with
// only the shipped Role's ConfigMap rights (manifests/inventory): all settle on one id.
func TestReplicasStartingAtOnceSettleOnOneOCloudID(t *testing.T) {
	t.Parallel()
	srv := kubeapi.Shared(t)
	ctx := context.Background()
	ns := ocloudNamespace(t, srv, "ocloud-race")
	kube := shippedConfigMapRole(t, srv, ns)
	const n = 6
	ids := make([]uuid.UUID, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			url := "https://netbox.example.org" + strings.Repeat("/", i)
			id, _, err := inventory.SettleOCloudID(ctx, kube, ns, envOf(nil), url+"#"+string(rune('a'+i)))
			assert.NoError(t, err)
			ids[i] = id
		}()
	}
	wg.Wait()
	for i := 1; i < n; i++ {
		assert.Equal(t, ids[0], ids[i], "replica %d settled on another id", i)
	}
}
