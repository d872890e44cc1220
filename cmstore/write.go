package cmstore

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

// write stores cm as the one ConfigMap of a model's state (State.Write): created when it is not stored
// yet, else updated on rv, the resourceVersion its state was read at, so that no writer overwrites
// another (a conflict is the caller's to read again). It answers what the API server stored.
func write(ctx context.Context, cms typedcorev1.ConfigMapInterface, cm *corev1.ConfigMap, v Version, fieldManager string) (*corev1.ConfigMap, error) {
	if !v.stored {
		return cms.Create(ctx, cm, metav1.CreateOptions{FieldManager: fieldManager})
	}
	cm.ResourceVersion = v.rv
	return cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: fieldManager})
}

// GzipJSON is v as gzip JSON: the large part of such a state, in BinaryData, so it stays well below a
// ConfigMap's 1 MiB.
func GzipJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(v); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// GunzipJSON decodes what GzipJSON wrote into v.
func GunzipJSON(raw []byte, v any) error {
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	return json.NewDecoder(zr).Decode(v)
}
