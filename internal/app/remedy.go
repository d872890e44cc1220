package app

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/framework"
)

// remedy says what grants a watch the API server refused, in the terms of the shipped manifests: the
// last words of the one line the log and /readyz show (see framework.RemedyFunc).
func remedy() framework.RemedyFunc {
	return func(gvr schema.GroupVersionResource, namespace string, why framework.Refusal) string {
		switch why {
		case framework.RefusalAbsent:
			switch gvr.Group {
			case v1alpha1.Group:
				return "apply manifests/ (its CRD is manifests/crd)"
			case external.PorchGroup:
				return "install Porch, which serves PackageVariants"
			case external.Metal3Group:
				return "install Metal3's BareMetalHost CRD, or unset NETBOX_URL to run without the inventory"
			case external.ClusterGroup:
				return "install Cluster API, which serves Clusters"
			}
			return "install the CustomResourceDefinition that serves it"
		case framework.RefusalForbidden:
			grant, shipped := "apply manifests/", "default"
			switch gvr.Group {
			case v1alpha1.Group:
				return "apply manifests/ (the ClusterRole o2ims-operator grants it)"
			case external.Metal3Group:
				grant, shipped = "apply with the manifests/inventory component", "metal3"
			}
			if namespace != shipped {
				return fmt.Sprintf("%s, its Role's namespace set to %q (it is shipped for %q)", grant, namespace, shipped)
			}
			return grant
		}
		return "check the service account token (or --kubeconfig) the operator runs with"
	}
}
