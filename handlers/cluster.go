package handlers

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"

	"github.com/o2ims-operator/o2ims-operator/api/external"
)

// clusterView is what the chain needs to know of a CAPI Cluster.
type clusterView struct {
	provisioned bool
	failed      bool
	// phase names the stage for the status message ("Provisioning", "Provisioned, not yet available").
	phase  string
	detail string
}

// viewCluster decides "provisioned" for the served version the operator reads:
//   - v1beta1 (the Python operator's view): status.phase == Provisioned.
//   - v1beta2 (CAPI ≥ 1.11 storage): the summary condition Available is True. v1beta2 has no Ready
//     condition, and upstream warns that phase Provisioned can precede any usable control plane.
//
// phase Failed is only set on objects converted from old versions; it still means failed.
func viewCluster(cl *unstructured.Unstructured, version string) clusterView {
	phase, _, _ := unstructured.NestedString(cl.Object, "status", "phase")
	v := clusterView{phase: phase}
	if v.phase == "" {
		v.phase = "no phase yet"
	}
	if cl.GetDeletionTimestamp() != nil {
		v.phase = "Deleting"
		return v
	}
	if phase == "Failed" {
		v.failed = true
		reason, _, _ := unstructured.NestedString(cl.Object, "status", "failureReason")
		msg, _, _ := unstructured.NestedString(cl.Object, "status", "failureMessage")
		if version == "v1beta2" {
			reason, _, _ = unstructured.NestedString(cl.Object, "status", "deprecated", "v1beta1", "failureReason")
			msg, _, _ = unstructured.NestedString(cl.Object, "status", "deprecated", "v1beta1", "failureMessage")
		}
		v.detail = strings.TrimSpace(strings.Trim(reason+": "+msg, ": "))
		return v
	}
	switch version {
	case "v1beta1":
		v.provisioned = phase == "Provisioned"
	default:
		cond, ok := condition(cl, "Available")
		switch {
		case !ok:
			v.detail = "Available not reported yet"
		case cond["status"] == "True":
			v.provisioned = true
		default:
			reason, _ := cond["reason"].(string)
			msg, _ := cond["message"].(string)
			v.detail = strings.Trim(fmt.Sprintf("Available=%v %s: %s", cond["status"], reason, msg), " :")
		}
	}
	return v
}

// DetectClusterVersion picks the Cluster API version to read: the configured one, else v1beta2 when served
// (CAPI ≥ 1.11), else v1beta1. No served Cluster API is a startup error: the chain cannot observe clusters.
func DetectClusterVersion(disc discovery.DiscoveryInterface, configured string) (string, error) {
	groups, err := disc.ServerGroups()
	if err != nil {
		return "", fmt.Errorf("discovering API groups: %w", err)
	}
	served := map[string]bool{}
	for _, g := range groups.Groups {
		if g.Name != external.ClusterGroup {
			continue
		}
		for _, v := range g.Versions {
			served[v.Version] = true
		}
	}
	if configured != "" {
		if !served[configured] {
			return "", fmt.Errorf("CLUSTER_API_VERSION %s: cluster.x-k8s.io/%s is not served by this cluster", configured, configured)
		}
		return configured, nil
	}
	for _, v := range []string{"v1beta2", "v1beta1"} {
		if served[v] {
			return v, nil
		}
	}
	return "", fmt.Errorf("cluster.x-k8s.io Cluster is not served by this cluster (install Cluster API, v1beta1 or v1beta2)")
}
