package inventoryapi

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/inventory"
	"github.com/o2ims-operator/o2ims-operator/nbi"
)

// DeploymentManagers are the Cluster API Clusters of the fulfilled ProvisioningRequests, from the
// operator's caches, for the inventory API and the notifier (which diffs them).
type DeploymentManagers struct {
	cfg      inventory.Config
	store    nbi.Store
	clusters ClusterGetter // nil: none
	memo     deploymentManagerMemo
}

// NewDeploymentManagers reads the requests from store and their Clusters through clusters (may be nil:
// there are none); cfg names them.
func NewDeploymentManagers(cfg inventory.Config, store nbi.Store, clusters ClusterGetter) *DeploymentManagers {
	return &DeploymentManagers{cfg: cfg, store: store, clusters: clusters}
}

// List answers the deployment managers now: a request that is not fulfilled, is being deleted, or whose
// Cluster is not in the cache has none. Sorted by id.
func (d *DeploymentManagers) List() ([]*inventory.Entry, error) {
	if d == nil || d.clusters == nil {
		return nil, nil
	}
	objs, err := d.store.List()
	if err != nil {
		return nil, err
	}
	memo := &d.memo
	memo.mu.Lock()
	defer memo.mu.Unlock()
	next := make(map[string]dmMemo, len(memo.by))
	var out []*inventory.Entry
	for _, o := range objs {
		if v1alpha1.StatusOf(o).State != v1alpha1.StateFulfilled || o.GetDeletionTimestamp() != nil {
			continue
		}
		name := v1alpha1.ClusterName(o)
		if name == "" {
			continue
		}
		cl, found, err := d.clusters(name)
		if err != nil {
			return nil, err
		}
		if !found {
			continue
		}
		m, ok := memo.by[o.GetName()]
		if !ok || m.requestUID != o.GetUID() || m.requestRV != o.GetResourceVersion() ||
			m.clusterUID != cl.GetUID() || m.clusterRV != cl.GetResourceVersion() || m.clusterRV == "" {
			m = dmMemo{o.GetUID(), o.GetResourceVersion(), cl.GetUID(), cl.GetResourceVersion(), d.entry(o, cl)}
		}
		next[o.GetName()] = m
		out = append(out, m.entry)
	}
	memo.by = next
	slices.SortFunc(out, func(a, b *inventory.Entry) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// deploymentManagerMemo keeps each deployment manager's entry until its request or its Cluster
// changes (another resourceVersion): the notifier asks for all of them every ManagerPoll, and
// re-encoding thousands of unchanged entries each time was most of an idle operator's work.
type deploymentManagerMemo struct {
	mu sync.Mutex
	by map[string]dmMemo // by request name
}

// dmMemo is one entry and the versions it was made of (none kept when the Cluster has no version).
type dmMemo struct {
	requestUID types.UID
	requestRV  string
	clusterUID types.UID
	clusterRV  string
	entry      *inventory.Entry
}

// entry is the deployment manager of request o's Cluster cl (read only: it may be the cache's own).
func (d *DeploymentManagers) entry(o, cl *unstructured.Unstructured) *inventory.Entry {
	c := &inventory.Cluster{
		UID: string(cl.GetUID()), Namespace: cl.GetNamespace(), Name: cl.GetName(),
		RequestID: o.GetName(), RequestUID: string(o.GetUID()),
		ResourceIDs: resourceIDs(d.cfg, v1alpha1.ResourceSetOf(o).InfrastructureResourceIDs),
		APIVersion:  strings.TrimPrefix(cl.GetAPIVersion(), external.ClusterGroup+"/"),
	}
	spec, _ := cl.Object["spec"].(map[string]any) // a Cluster without a spec has no endpoint, and is no panic
	if ep, ok := spec["controlPlaneEndpoint"].(map[string]any); ok {
		if host, _ := ep["host"].(string); host != "" {
			c.Endpoint = fmt.Sprintf("https://%s:%v", host, portOf(ep["port"]))
		}
	}
	return d.cfg.DeploymentManagerEntry(c)
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

func (a *API) listDeploymentManagers(w http.ResponseWriter, r *http.Request) error {
	dms, err := a.dms.List()
	if err != nil {
		return nbi.StoreUnavailable(err)
	}
	return a.list(w, r, DeploymentManagerSchema, dms)
}

func (a *API) getDeploymentManager(w http.ResponseWriter, r *http.Request) error {
	id, err := pathUUID(r, "deploymentManagerId", "deployment manager")
	if err != nil {
		return err
	}
	dms, err := a.dms.List()
	if err != nil {
		return nbi.StoreUnavailable(err)
	}
	for _, e := range dms {
		if e.ID == id {
			a.writeEntry(w, r, e)
			return nil
		}
	}
	return nbi.NewProblem(http.StatusNotFound, "deployment manager %q not found", id)
}
