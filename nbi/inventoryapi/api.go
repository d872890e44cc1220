package inventoryapi

import (
	"net/http"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/alarms"
	"github.com/o2ims-operator/o2ims-operator/inventory"
	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/netbox"
	"github.com/o2ims-operator/o2ims-operator/subscriptions"
)

// The O2IMS Infrastructure Inventory (reference: testdata/reference/o2ims-inventory), on the same
// listener, authentication, ProblemDetails, filters, attribute selectors and paging as the
// provisioning API. Everything is answered from memory: the inventory View (NetBox, refreshed in the
// background) and the operator's caches (requests and Clusters, for deployment managers).
const (
	// Root is the inventory API's root as oran-o2ims spells it (its v1 and, since 07b9aec0, v2).
	Root = "/o2ims-infrastructureInventory"
	// RootSpec is the root as the O2IMS specification spells it (clause 3.2.3: O2ims_infrastructureInventory).
	RootSpec = "/O2ims_infrastructureInventory"
)

// Roots are the spellings the inventory is served under; each is an alias of the other.
var Roots = []string{Root, RootSpec}

// Majors are the inventory's major versions and the versions each serves (O2IMS Table 3.2.2-1): v1 is
// oran-o2ims's v1 rendition with the 1.1.0 performance dictionaries and the 1.2.0 ResourceTypeInfo; v2
// is 2.0.0 (oran-o2ims moved to it unchanged but for its paths, commit 07b9aec0).
var Majors = []nbi.Major{
	{Segment: "v1", Versions: []string{"1.0.0", "1.1.0", "1.2.0"}},
	{Segment: "v2", Versions: []string{"2.0.0"}},
}

// ClusterGetter reads a Cluster API Cluster from the operator's cache by name (in CLUSTER_NAMESPACE).
// The NBI only reads what it answers, so it may answer the cache's own object.
type ClusterGetter func(name string) (*unstructured.Unstructured, bool, error)

// API is the inventory API: its routes answered from the view, the deployment managers and,
// when given, the subscriptions.
type API struct {
	view *inventory.View // nil: Unserved
	cfg  inventory.Config
	dms  *DeploymentManagers
	subs *subscriptionRoutes // nil: subscriptions not served
	mux  *nbi.Mux            // set by Register
}

// New is the inventory API answered from view and dms; subs (may be nil: not served) stores the
// subscriptions, and created (may be nil) is told of each new one, so that the notifier of this replica
// starts delivering at once. With it, a request's infrastructureResourceIds answer as inventory
// resource ids (ResourceIDs).
func New(view *inventory.View, dms *DeploymentManagers, subs *subscriptions.SubscriptionStore, created func()) *API {
	a := &API{view: view, cfg: view.Config(), dms: dms}
	if subs != nil {
		a.subs = &subscriptionRoutes{api: a, store: subs, created: created}
	}
	return a
}

// Unserved is the inventory API of an operator without an inventory: no route, but its root's errors
// (404, 405, 406) still answer in the inventory reference's ProblemDetails.
func Unserved() *API { return &API{} }

// ResourceIDs answers a ProvisioningRequest's ids as the inventory's resource ids, so that each
// infrastructureResourceIds entry resolves under resourcePools/…/resources. The chain records them so
// (internal/ocloud); a request fulfilled by an earlier version may still record netbox-<id> until its
// rewrite (handlers: rewriteResourceIDs), and those are mapped here, computed, never looked up. Other
// ids, and every id without an inventory (Unserved), pass through unchanged.
func (a *API) ResourceIDs(ids []string) []string {
	if a.view == nil {
		return ids
	}
	return resourceIDs(a.cfg, ids)
}

func resourceIDs(cfg inventory.Config, ids []string) []string {
	for i, id := range ids {
		if n, err := netbox.ParseIdentity(id); err == nil {
			ids[i] = cfg.ResourceID(n)
		}
	}
	return ids
}

// Register claims both spellings of the root (their errors in the inventory reference's shape) and adds
// the routes under each major version: one implementation behind every alias.
func (a *API) Register(m *nbi.Mux) {
	a.mux = m
	if a.view == nil {
		for _, r := range Roots {
			m.Root(r, nbi.WriteCommonProblem)
		}
		return
	}
	m.Versioned(Roots, nbi.WriteCommonProblem, Majors, a.routes)
}

// routes adds the inventory's routes under prefix ({root}/v1 or {root}/v2).
func (a *API) routes(prefix string, _ nbi.Major) {
	m, v := a.mux, prefix
	m.Handle("GET "+v, nbi.VerbList, a.oCloudInfo)
	m.Handle("GET "+v+"/resourceTypes", nbi.VerbList, a.fromView(a.listResourceTypes))
	m.Handle("GET "+v+"/resourceTypes/{resourceTypeId}", nbi.VerbList, a.fromView(a.getResourceType))
	m.Handle("GET "+v+"/resourceTypes/{resourceTypeId}/alarmDictionary", nbi.VerbList, a.fromView(a.getResourceTypeAlarmDictionary))
	m.Handle("GET "+v+"/resourcePools", nbi.VerbList, a.fromView(a.listResourcePools))
	m.Handle("GET "+v+"/resourcePools/{resourcePoolId}", nbi.VerbList, a.fromView(a.getResourcePool))
	m.Handle("GET "+v+"/resourcePools/{resourcePoolId}/resources", nbi.VerbList, a.fromView(a.listResources))
	m.Handle("GET "+v+"/resourcePools/{resourcePoolId}/resources/{resourceId}", nbi.VerbList, a.fromView(a.getResource))
	m.Handle("GET "+v+"/deploymentManagers", nbi.VerbList, a.listDeploymentManagers)
	m.Handle("GET "+v+"/deploymentManagers/{deploymentManagerId}", nbi.VerbList, a.getDeploymentManager)
	m.Handle("GET "+v+"/oCloudSites", nbi.VerbList, a.fromView(a.listOCloudSites))
	m.Handle("GET "+v+"/oCloudSites/{oCloudSiteId}", nbi.VerbList, a.fromView(a.getOCloudSite))
	m.Handle("GET "+v+"/locations", nbi.VerbList, a.listLocations)
	m.Handle("GET "+v+"/locations/{globalLocationId}", nbi.VerbList, a.getLocation)
	m.Handle("GET "+v+"/alarmDictionaries", nbi.VerbList, a.fromView(a.listAlarmDictionaries))
	m.Handle("GET "+v+"/alarmDictionaries/{alarmDictionaryId}", nbi.VerbList, a.fromView(a.getAlarmDictionary))
	a.performanceRoutes(v)
	if a.subs != nil {
		a.subs.register(m, v)
	}
}

// fromView: routes answered from the NetBox view refuse (503) until its first full listing, rather
// than answer an empty inventory.
func (a *API) fromView(op nbi.Op) nbi.Op {
	return func(w http.ResponseWriter, r *http.Request) error {
		if synced, _ := a.view.Synced(); !synced {
			return nbi.NewProblem(http.StatusServiceUnavailable, "the inventory has not been read from NetBox yet; retry later").
				WithHeader("Retry-After", "5")
		}
		return op(w, r)
	}
}

// oCloudInfo answers the O-Cloud: ids, name and description from configuration, serviceUri the
// configured one or, by default, this API's root as the caller reached it.
func (a *API) oCloudInfo(w http.ResponseWriter, r *http.Request) error {
	params, _, err := nbi.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nbi.NewProblem(http.StatusBadRequest, "%v", err)
	}
	for _, p := range []string{"filter", "nextpage_opaque_marker"} {
		if _, ok := params[p]; ok {
			return nbi.NewProblem(http.StatusBadRequest, "%s applies to lists; the O-Cloud is one object", p)
		}
	}
	sel, err := nbi.ParseSelection(params, fieldList(OCloudInfoSchema), true)
	if err != nil {
		return nbi.NewProblem(http.StatusBadRequest, "invalid attribute selector: %v", err)
	}
	cfg := a.cfg
	uri := cfg.ServiceURI
	if uri == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		uri = scheme + "://" + r.Host
	}
	synced, last := a.view.Synced()
	ext := map[string]any{"inventorySource": "netbox", "inventorySynced": synced}
	if !last.IsZero() {
		ext["inventoryLastRefresh"] = last.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	info := map[string]any{
		"oCloudId": cfg.OCloudID.String(), "globalCloudId": cfg.GlobalCloudID.String(),
		"name": cfg.Name, "description": cfg.Description, "serviceUri": uri, "extensions": ext,
	}
	a.mux.Write(w, r, http.StatusOK, applyMap(sel, OCloudInfoSchema, info))
	return nil
}

func (a *API) listResourceTypes(w http.ResponseWriter, r *http.Request) error {
	return a.list(w, r, ResourceTypeSchema, a.view.Snapshot().Types)
}

func (a *API) listResourcePools(w http.ResponseWriter, r *http.Request) error {
	return a.list(w, r, ResourcePoolSchema, a.view.Snapshot().Pools)
}

func (a *API) listOCloudSites(w http.ResponseWriter, r *http.Request) error {
	return a.list(w, r, OCloudSiteSchema, a.view.Snapshot().Sites)
}

// listLocations: NetBox has no SMO-defined globalLocationId, so there is no location this O-Cloud can
// name truthfully; the list is empty (and the query is still checked).
func (a *API) listLocations(w http.ResponseWriter, r *http.Request) error {
	return a.list(w, r, LocationSchema, nil)
}

// listAlarmDictionaries: the dictionaries of the alarms the operator raises (package alarms): one per
// resource type, one for deployment managers, one for the O-Cloud's pools and itself.
func (a *API) listAlarmDictionaries(w http.ResponseWriter, r *http.Request) error {
	return a.list(w, r, AlarmDictionarySchema, alarms.Dictionaries(a.cfg, a.view.Snapshot().Types))
}

func (a *API) listResources(w http.ResponseWriter, r *http.Request) error {
	pool, err := pathUUID(r, "resourcePoolId", "resource pool")
	if err != nil {
		return err
	}
	if _, ok := a.view.Pool(pool); !ok {
		return nbi.NewProblem(http.StatusNotFound, "resource pool %q not found", pool)
	}
	return a.list(w, r, ResourceSchema, a.view.Snapshot().Resources[pool])
}

func (a *API) getResource(w http.ResponseWriter, r *http.Request) error {
	pool, err := pathUUID(r, "resourcePoolId", "resource pool")
	if err != nil {
		return err
	}
	id, err := pathUUID(r, "resourceId", "resource")
	if err != nil {
		return err
	}
	e, ok := a.view.Resource(pool, id)
	if !ok {
		if _, found := a.view.Pool(pool); !found {
			return nbi.NewProblem(http.StatusNotFound, "resource pool %q not found", pool)
		}
		return nbi.NewProblem(http.StatusNotFound, "resource %q not found in resource pool %q", id, pool)
	}
	a.writeEntry(w, r, e)
	return nil
}

func (a *API) getResourcePool(w http.ResponseWriter, r *http.Request) error {
	return a.getNamed(w, r, "resourcePoolId", "resource pool", a.view.Pool)
}

func (a *API) getResourceType(w http.ResponseWriter, r *http.Request) error {
	return a.getNamed(w, r, "resourceTypeId", "resource type", a.view.Type)
}

func (a *API) getOCloudSite(w http.ResponseWriter, r *http.Request) error {
	return a.getNamed(w, r, "oCloudSiteId", "O-Cloud site", a.view.Site)
}

func (a *API) getResourceTypeAlarmDictionary(w http.ResponseWriter, r *http.Request) error {
	id, err := pathUUID(r, "resourceTypeId", "resource type")
	if err != nil {
		return err
	}
	t, ok := a.view.Type(id)
	if !ok {
		return nbi.NewProblem(http.StatusNotFound, "resource type %q not found", id)
	}
	d := alarms.TypeDictionary(t)
	if d == nil {
		return nbi.NewProblem(http.StatusNotFound, "resource type %q has no alarm dictionary", id)
	}
	a.writeEntry(w, r, d)
	return nil
}

func (a *API) getLocation(_ http.ResponseWriter, r *http.Request) error {
	return nbi.NewProblem(http.StatusNotFound, "location %q not found: this O-Cloud defines no locations", nbi.Truncate(r.PathValue("globalLocationId"), 100))
}

func (a *API) getAlarmDictionary(w http.ResponseWriter, r *http.Request) error {
	id, err := pathUUID(r, "alarmDictionaryId", "alarm dictionary")
	if err != nil {
		return err
	}
	for _, d := range alarms.Dictionaries(a.cfg, a.view.Snapshot().Types) {
		if d.ID == id {
			a.writeEntry(w, r, d)
			return nil
		}
	}
	return nbi.NewProblem(http.StatusNotFound, "alarm dictionary %q not found", id)
}

func (a *API) getNamed(w http.ResponseWriter, r *http.Request, param, what string, find func(string) (*inventory.Entry, bool)) error {
	id, err := pathUUID(r, param, what)
	if err != nil {
		return err
	}
	e, ok := find(id)
	if !ok {
		return nbi.NewProblem(http.StatusNotFound, "%s %q not found", what, id)
	}
	a.writeEntry(w, r, e)
	return nil
}

// pathUUID is the id of a named route; one that is not a UUID in its canonical lowercase form cannot
// exist (every id this API hands out is one), so it is a 404.
func pathUUID(r *http.Request, param, what string) (string, error) {
	id := r.PathValue(param)
	if u, err := uuid.Parse(id); err != nil || u.String() != id {
		return "", nbi.NewProblem(http.StatusNotFound, "%s %q not found: ids are lowercase UUIDs", what, nbi.Truncate(id, 100))
	}
	return id, nil
}
