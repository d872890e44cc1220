package framework

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

// lastAppliedAnnotation is where client-side `kubectl apply` keeps the whole applied object.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// stripUnread is the informers' transform: it drops from each cached object what nothing in the
// operator reads, before the object is stored. As served, managedFields and the last-applied
// annotation are 40–65 % of a request's JSON, and decoded into maps they were most of the operator's
// memory.
//
//   - metadata.managedFields, always: nothing reads them, and an update (PUT) of a cached copy without
//     them keeps the server's (an absent list is not a reset; only an explicitly empty one would be).
//   - kubectl's last-applied-configuration, on watched objects only (dropLastApplied): the diff-base and
//     the cause detection ignore it (kopf does), progress and ownership live in our own annotations,
//     and watched objects are only ever written by merge patches of the keys that change, so the
//     server's copy keeps it. Related objects keep it: a handler may update one from its cached copy
//     (the PackageVariant adoption does), and that update must not drop a user's annotation.
//
// It mutates in place (client-go hands the transform the freshly decoded object) and is idempotent.
func stripUnread(dropLastApplied bool) cache.TransformFunc {
	return func(obj any) (any, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obj, nil
		}
		md, ok := u.Object["metadata"].(map[string]any)
		if !ok {
			return obj, nil
		}
		delete(md, "managedFields")
		if dropLastApplied {
			if ann, ok := md["annotations"].(map[string]any); ok {
				delete(ann, lastAppliedAnnotation)
				if len(ann) == 0 {
					delete(md, "annotations")
				}
			}
		}
		return obj, nil
	}
}
