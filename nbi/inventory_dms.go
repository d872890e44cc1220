package nbi

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/nbi/inventory"
)

// deploymentManagers are the Cluster API Clusters of the fulfilled ProvisioningRequests, from the
// operator's caches: a request that is not fulfilled, is being deleted, or whose Cluster is not in the
// cache has none. Sorted by id.
func (s *Server) deploymentManagers() ([]*inventory.Entry, error) {
	if s.inventory.clusters == nil {
		return nil, nil
	}
	objs, err := s.store.List()
	if err != nil {
		return nil, err
	}
	var out []*inventory.Entry
	for _, o := range objs {
		if v1alpha1.StatusOf(o).State != v1alpha1.StateFulfilled || o.GetDeletionTimestamp() != nil {
			continue
		}
		name := v1alpha1.ClusterName(o)
		if name == "" {
			continue
		}
		cl, found, err := s.inventory.clusters(name)
		if err != nil {
			return nil, err
		}
		if !found {
			continue
		}
		c := &inventory.Cluster{
			UID: string(cl.GetUID()), Namespace: cl.GetNamespace(), Name: cl.GetName(),
			RequestID: o.GetName(), RequestUID: string(o.GetUID()),
			ResourceIDs: s.resourceIDs(v1alpha1.ResourceSetOf(o).InfrastructureResourceIDs),
			APIVersion:  strings.TrimPrefix(cl.GetAPIVersion(), external.ClusterGroup+"/"),
		}
		if ep, ok := cl.Object["spec"].(map[string]any)["controlPlaneEndpoint"].(map[string]any); ok {
			if host, _ := ep["host"].(string); host != "" {
				c.Endpoint = fmt.Sprintf("https://%s:%v", host, portOf(ep["port"]))
			}
		}
		out = append(out, s.inventory.cfg.DeploymentManagerEntry(c))
	}
	slices.SortFunc(out, func(a, b *inventory.Entry) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// portOf reads the endpoint's port (6443 when the Cluster names none).
func portOf(v any) any {
	switch p := v.(type) {
	case int64:
		if p > 0 {
			return p
		}
	case float64:
		if p > 0 {
			return int64(p)
		}
	}
	return int64(6443)
}

func (s *Server) listDeploymentManagers(w http.ResponseWriter, r *http.Request) error {
	dms, err := s.deploymentManagers()
	if err != nil {
		return storeUnavailable(err)
	}
	return s.inventoryList(w, r, inventory.DeploymentManagerSchema, dms)
}

func (s *Server) getDeploymentManager(w http.ResponseWriter, r *http.Request) error {
	id, err := pathUUID(r, "deploymentManagerId", "deployment manager")
	if err != nil {
		return err
	}
	dms, err := s.deploymentManagers()
	if err != nil {
		return storeUnavailable(err)
	}
	for _, e := range dms {
		if e.ID == id {
			s.writeEntry(w, r, e)
			return nil
		}
	}
	return newProblem(http.StatusNotFound, "deployment manager %q not found", id)
}

// DeploymentManagers answers the deployment managers now, for the notifier (which diffs them).
func (s *Server) DeploymentManagers() ([]*inventory.Entry, error) {
	if s.inventory == nil {
		return nil, nil
	}
	return s.deploymentManagers()
}
