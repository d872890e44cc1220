package subscriptions

import (
	"context"
	"encoding/json"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/o2ims-operator/o2ims-operator/cmstore"
	"github.com/o2ims-operator/o2ims-operator/inventory"
)

// progressKey holds, in a subscription's ConfigMap, its progress: every object as it was last told of
// it (gzip JSON).
const progressKey = "progress.json.gz"

type storedObject struct {
	Kind inventory.Kind  `json:"k"`
	JSON json.RawMessage `json:"j"`
}

// SaveProgress writes a subscription's progress (nothing when it was deleted meanwhile).
func (st *SubscriptionStore) SaveProgress(ctx context.Context, id string, objs map[string]storedObject) error {
	progress, err := encodeProgress(objs)
	if err != nil {
		return err
	}
	cms := st.kube.CoreV1().ConfigMaps(st.namespace)
	cm, err := cms.Get(ctx, st.kind.Prefix+id, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if cm.BinaryData == nil {
		cm.BinaryData = map[string][]byte{}
	}
	cm.BinaryData[progressKey] = progress
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "o2ims-notifier"})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func encodeProgress(objs map[string]storedObject) ([]byte, error) { return cmstore.GzipJSON(objs) }

// LoadProgress reads a subscription's progress; found is false when it has none (or it is unreadable,
// which is logged by the caller's absence of changes: it then starts from now).
func (st *SubscriptionStore) LoadProgress(ctx context.Context, id string) (map[string]inventory.Change, bool, error) {
	cm, err := st.kube.CoreV1().ConfigMaps(st.namespace).Get(ctx, st.kind.Prefix+id, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	raw, ok := cm.BinaryData[progressKey]
	if !ok {
		return nil, false, nil
	}
	var objs map[string]storedObject
	if err := cmstore.GunzipJSON(raw, &objs); err != nil {
		return nil, false, nil
	}
	out := make(map[string]inventory.Change, len(objs))
	for oid, o := range objs {
		var attrs map[string]any
		if json.Unmarshal(o.JSON, &attrs) != nil {
			continue
		}
		out[oid] = inventory.Change{Kind: o.Kind, ID: oid, Post: &inventory.Entry{ID: oid, Attrs: attrs, JSON: o.JSON}}
	}
	return out, true, nil
}
