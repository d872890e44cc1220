package main

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The annotations the operator keeps on a handled request for kopf, as the Python image's kopf 1.40.1
// writes them (docs/upgrading.md; framework/kopf/keys.go): the managed marker, and the diff-base (the
// spec and labels last handled) under kopf's two keys, the whole key cut to 63 characters (V1) and the
// name part cut (V2). The bench's control run of the peer carries them, so that the only difference
// from the operator at deletion is the code, not the size of what the API server reads and writes.
const (
	annKopfManaged  = "provisioningrequests.o2ims.provisioning.oran.org/kopf-managed"
	annDiffBaseV1   = "provisioningrequests.o2ims.provisioning.oran.org/last-ha-a.A3qw"
	annDiffBaseV2   = "provisioningrequests.o2ims.provisioning.oran.org/last-handled-configuration"
	kopfManagedTrue = "yes"
)

// addKopfAnnotations sets them on pr, its diff-base encoded as kopf encodes it: compact JSON, "spec"
// before "metadata", keys sorted inside, a newline at the end.
func addKopfAnnotations(pr *unstructured.Unstructured) error {
	spec, err := json.Marshal(pr.Object["spec"])
	if err != nil {
		return err
	}
	labels, err := json.Marshal(pr.GetLabels())
	if err != nil {
		return err
	}
	base := `{"spec":` + string(spec) + `,"metadata":{"labels":` + string(labels) + "}}\n"
	a := pr.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[annKopfManaged], a[annDiffBaseV1], a[annDiffBaseV2] = kopfManagedTrue, base, base
	pr.SetAnnotations(a)
	return nil
}
