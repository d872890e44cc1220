package inventory

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/o2ims-operator/o2ims-operator/internal/ocloud"
)

// OCloudIDConfigMap holds the O-Cloud id once it is fixed, in the operator's namespace. Every inventory
// id (and the ids fulfilled requests recorded) is computed in it, so it is derived once and never again:
// a NETBOX_URL spelled differently (a trailing dot, another port form, a new DNS name for the same NetBox)
// must not re-key them.
const (
	OCloudIDConfigMap = "o2ims-operator-ocloud-id"
	oCloudIDKey       = "oCloudId"
	oCloudIDFromKey   = "derivedFrom" // OCLOUD_ID, or NETBOX_URL (the URL itself is not stored)
)

// SettleOCloudID fixes the O-Cloud id: the one stored in namespace's OCloudIDConfigMap when there is one,
// else OCLOUD_ID, else the one derived from netboxURL, stored with a create (never an update: when two
// replicas start at once, the first create wins and the other reads it back, so both use one id). An
// OCLOUD_ID that differs from the stored id would re-key every id: it is refused, with what to do. note
// is a line for the log when the stored id is kept over what NETBOX_URL would now derive.
func SettleOCloudID(ctx context.Context, kube kubernetes.Interface, namespace string, getenv func(string) string, netboxURL string) (id uuid.UUID, note string, err error) {
	configured, err := ocloud.IDFromEnv(getenv, netboxURL)
	if err != nil {
		return uuid.UUID{}, "", err
	}
	set := strings.TrimSpace(getenv("OCLOUD_ID")) != ""
	cms := kube.CoreV1().ConfigMaps(namespace)
	cm, err := cms.Get(ctx, OCloudIDConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		from := "NETBOX_URL"
		if set {
			from = "OCLOUD_ID"
		}
		cm, err = cms.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: OCloudIDConfigMap, Namespace: namespace,
				Labels: map[string]string{"app.kubernetes.io/name": "o2ims-operator"}},
			Data: map[string]string{oCloudIDKey: configured.String(), oCloudIDFromKey: from},
		}, metav1.CreateOptions{FieldManager: "o2ims-operator"})
		if apierrors.IsAlreadyExists(err) {
			cm, err = cms.Get(ctx, OCloudIDConfigMap, metav1.GetOptions{}) // another replica's: use it
		}
	}
	if err != nil {
		return uuid.UUID{}, "", fmt.Errorf("the O-Cloud id: reading or storing ConfigMap %s/%s: %w", namespace, OCloudIDConfigMap, err)
	}
	raw := cm.Data[oCloudIDKey]
	stored, perr := uuid.Parse(raw)
	if perr != nil || len(raw) != 36 {
		return uuid.UUID{}, "", fmt.Errorf("ConfigMap %s/%s: %s=%q is not a UUID: restore the id it held (what the inventory API answered as oCloudId), or delete it to derive a new one (every inventory id changes)",
			namespace, OCloudIDConfigMap, oCloudIDKey, raw)
	}
	switch {
	case set && stored != configured:
		return uuid.UUID{}, "", fmt.Errorf("OCLOUD_ID=%s differs from the O-Cloud id %s stored in ConfigMap %s/%s: every inventory id, and the ids fulfilled requests recorded, would change. "+
			"To keep them, set OCLOUD_ID=%s or unset it; to re-key on purpose, delete that ConfigMap and start again (requests keep the ids they recorded until their spec changes)",
			configured, stored, namespace, OCloudIDConfigMap, stored)
	case !set && stored != configured:
		note = fmt.Sprintf("the O-Cloud id %s stored in ConfigMap %s/%s is kept: NETBOX_URL now derives another one, and a derived id is fixed once (set OCLOUD_ID to change it on purpose)",
			stored, namespace, OCloudIDConfigMap)
	}
	return stored, note, nil
}
