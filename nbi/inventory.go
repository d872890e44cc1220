package nbi

import (
	"net/http"
	"slices"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/nbi/inventory"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
	"github.com/o2ims-operator/o2ims-operator/netbox"
)

// The O2IMS Infrastructure Inventory (reference: testdata/reference/o2ims-inventory), on the same
// listener, authentication, ProblemDetails, filters, attribute selectors and paging as the
// provisioning API. Everything is answered from memory: the inventory View (NetBox, refreshed in the
// background) and the operator's caches (requests and Clusters, for deployment managers).
const (
	inventoryRoot       = "/o2ims-infrastructureInventory"
	inventoryAPIVersion = "1.0.0"
)

// ClusterGetter reads a Cluster API Cluster from the operator's cache by name (in CLUSTER_NAMESPACE).
// The NBI only reads what it answers, so it may answer the cache's own object.
type ClusterGetter func(name string) (*unstructured.Unstructured, bool, error)

// inventoryAPI is what EnableInventory adds to a Server.
type inventoryAPI struct {
	view     *inventory.View
	cfg      inventory.Config
	clusters ClusterGetter
	dms      deploymentManagerMemo

	subs       *inventory.SubscriptionStore // nil: subscriptions not served (EnableSubscriptions)
	subCreated func()
}

// EnableInventory serves the inventory API from view; clusters (may be nil) resolves the Clusters of
// fulfilled requests into deployment managers. Call before Start. With it, a request's
// infrastructureResourceIds answer as inventory resource ids (see resourceIDs).
func (s *Server) EnableInventory(view *inventory.View, clusters ClusterGetter) {
	s.inventory = &inventoryAPI{view: view, cfg: view.Config(), clusters: clusters}
	root := inventoryRoot
	v1 := root + "/v1"
	read := func(op func(http.ResponseWriter, *http.Request) error) http.Handler { return s.route(verbList, op) }
	// fromView: routes answered from the NetBox view refuse (503) until its first full listing, rather
	// than answer an empty inventory.
	fromView := func(op func(http.ResponseWriter, *http.Request) error) http.Handler {
		return read(func(w http.ResponseWriter, r *http.Request) error {
			if synced, _ := view.Synced(); !synced {
				return newProblem(http.StatusServiceUnavailable, "the inventory has not been read from NetBox yet; retry later").
					withHeader("Retry-After", "5")
			}
			return op(w, r)
		})
	}
	s.mux.Handle("GET "+root+"/api_versions", s.route(verbNone, s.inventoryVersions))
	s.mux.Handle("GET "+v1+"/api_versions", s.route(verbNone, s.inventoryVersions))
	s.mux.Handle("GET "+v1, read(s.oCloudInfo))
	s.mux.Handle("GET "+v1+"/resourceTypes", fromView(s.listResourceTypes))
	s.mux.Handle("GET "+v1+"/resourceTypes/{resourceTypeId}", fromView(s.getResourceType))
	s.mux.Handle("GET "+v1+"/resourceTypes/{resourceTypeId}/alarmDictionary", fromView(s.getResourceTypeAlarmDictionary))
	s.mux.Handle("GET "+v1+"/resourcePools", fromView(s.listResourcePools))
	s.mux.Handle("GET "+v1+"/resourcePools/{resourcePoolId}", fromView(s.getResourcePool))
	s.mux.Handle("GET "+v1+"/resourcePools/{resourcePoolId}/resources", fromView(s.listResources))
	s.mux.Handle("GET "+v1+"/resourcePools/{resourcePoolId}/resources/{resourceId}", fromView(s.getResource))
	s.mux.Handle("GET "+v1+"/deploymentManagers", read(s.listDeploymentManagers))
	s.mux.Handle("GET "+v1+"/deploymentManagers/{deploymentManagerId}", read(s.getDeploymentManager))
	s.mux.Handle("GET "+v1+"/oCloudSites", fromView(s.listOCloudSites))
	s.mux.Handle("GET "+v1+"/oCloudSites/{oCloudSiteId}", fromView(s.getOCloudSite))
	s.mux.Handle("GET "+v1+"/locations", read(s.listLocations))
	s.mux.Handle("GET "+v1+"/locations/{globalLocationId}", read(s.getLocation))
	s.mux.Handle("GET "+v1+"/alarmDictionaries", read(s.listAlarmDictionaries))
	s.mux.Handle("GET "+v1+"/alarmDictionaries/{alarmDictionaryId}", read(s.getAlarmDictionary))
}

// resourceIDs answers a ProvisioningRequest's ids as the inventory's resource ids, so that each
// infrastructureResourceIds entry resolves under resourcePools/…/resources. The chain records them so
// (internal/ocloud); a request fulfilled by an earlier version may still record netbox-<id> until its
// rewrite (handlers: rewriteResourceIDs), and those are mapped here, computed, never looked up. Other
// ids pass through unchanged.
func (s *Server) resourceIDs(ids []string) []string {
	if s.inventory == nil {
		return ids
	}
	for i, id := range ids {
		if n, err := netbox.ParseIdentity(id); err == nil {
			ids[i] = s.inventory.cfg.ResourceID(n)
		}
	}
	return ids
}

func (s *Server) inventoryVersions(w http.ResponseWriter, r *http.Request) error {
	s.write(w, r, http.StatusOK, apiVersionInformation{
		URIPrefix:   inventoryRoot + "/v1",
		APIVersions: []apiVersionEntry{{Version: inventoryAPIVersion}},
	})
	return nil
}

// oCloudInfo answers the O-Cloud: ids, name and description from configuration, serviceUri the
// configured one or, by default, this API's root as the caller reached it.
func (s *Server) oCloudInfo(w http.ResponseWriter, r *http.Request) error {
	params, _, err := parseListQuery(r.URL.RawQuery)
	if err != nil {
		return newProblem(http.StatusBadRequest, "%v", err)
	}
	for _, p := range []string{"filter", "nextpage_opaque_marker"} {
		if _, ok := params[p]; ok {
			return newProblem(http.StatusBadRequest, "%s applies to lists; the O-Cloud is one object", p)
		}
	}
	sel, err := parseSelectionWith(params, inventoryFieldList(inventory.OCloudInfoSchema), true)
	if err != nil {
		return newProblem(http.StatusBadRequest, "invalid attribute selector: %v", err)
	}
	cfg := s.inventory.cfg
	uri := cfg.ServiceURI
	if uri == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		uri = scheme + "://" + r.Host
	}
	synced, last := s.inventory.view.Synced()
	ext := map[string]any{"inventorySource": "netbox", "inventorySynced": synced}
	if !last.IsZero() {
		ext["inventoryLastRefresh"] = last.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	info := map[string]any{
		"oCloudId": cfg.OCloudID.String(), "globalCloudId": cfg.GlobalCloudID.String(),
		"name": cfg.Name, "description": cfg.Description, "serviceUri": uri, "extensions": ext,
	}
	s.write(w, r, http.StatusOK, sel.applyMap(inventory.OCloudInfoSchema, info))
	return nil
}

func (s *Server) listResourceTypes(w http.ResponseWriter, r *http.Request) error {
	return s.inventoryList(w, r, inventory.ResourceTypeSchema, s.inventory.view.Snapshot().Types)
}

func (s *Server) listResourcePools(w http.ResponseWriter, r *http.Request) error {
	return s.inventoryList(w, r, inventory.ResourcePoolSchema, s.inventory.view.Snapshot().Pools)
}

func (s *Server) listOCloudSites(w http.ResponseWriter, r *http.Request) error {
	return s.inventoryList(w, r, inventory.OCloudSiteSchema, s.inventory.view.Snapshot().Sites)
}

// listLocations: NetBox has no SMO-defined globalLocationId, so there is no location this O-Cloud can
// name truthfully; the list is empty (and the query is still checked).
func (s *Server) listLocations(w http.ResponseWriter, r *http.Request) error {
	return s.inventoryList(w, r, inventory.LocationSchema, nil)
}

// listAlarmDictionaries: the operator raises no O2IMS alarms, so it has no dictionary.
func (s *Server) listAlarmDictionaries(w http.ResponseWriter, r *http.Request) error {
	return s.inventoryList(w, r, inventory.AlarmDictionarySchema, nil)
}

func (s *Server) listResources(w http.ResponseWriter, r *http.Request) error {
	pool, err := pathUUID(r, "resourcePoolId", "resource pool")
	if err != nil {
		return err
	}
	if _, ok := s.inventory.view.Pool(pool); !ok {
		return newProblem(http.StatusNotFound, "resource pool %q not found", pool)
	}
	return s.inventoryList(w, r, inventory.ResourceSchema, s.inventory.view.Snapshot().Resources[pool])
}

func (s *Server) getResource(w http.ResponseWriter, r *http.Request) error {
	pool, err := pathUUID(r, "resourcePoolId", "resource pool")
	if err != nil {
		return err
	}
	id, err := pathUUID(r, "resourceId", "resource")
	if err != nil {
		return err
	}
	e, ok := s.inventory.view.Resource(pool, id)
	if !ok {
		if _, found := s.inventory.view.Pool(pool); !found {
			return newProblem(http.StatusNotFound, "resource pool %q not found", pool)
		}
		return newProblem(http.StatusNotFound, "resource %q not found in resource pool %q", id, pool)
	}
	s.writeEntry(w, r, e)
	return nil
}

func (s *Server) getResourcePool(w http.ResponseWriter, r *http.Request) error {
	return s.getNamed(w, r, "resourcePoolId", "resource pool", s.inventory.view.Pool)
}

func (s *Server) getResourceType(w http.ResponseWriter, r *http.Request) error {
	return s.getNamed(w, r, "resourceTypeId", "resource type", s.inventory.view.Type)
}

func (s *Server) getOCloudSite(w http.ResponseWriter, r *http.Request) error {
	return s.getNamed(w, r, "oCloudSiteId", "O-Cloud site", s.inventory.view.Site)
}

func (s *Server) getResourceTypeAlarmDictionary(w http.ResponseWriter, r *http.Request) error {
	id, err := pathUUID(r, "resourceTypeId", "resource type")
	if err != nil {
		return err
	}
	if _, ok := s.inventory.view.Type(id); !ok {
		return newProblem(http.StatusNotFound, "resource type %q not found", id)
	}
	return newProblem(http.StatusNotFound, "resource type %q has no alarm dictionary: the operator raises no O2IMS alarms", id)
}

func (s *Server) getLocation(_ http.ResponseWriter, r *http.Request) error {
	return newProblem(http.StatusNotFound, "location %q not found: this O-Cloud defines no locations", truncate(r.PathValue("globalLocationId"), 100))
}

func (s *Server) getAlarmDictionary(_ http.ResponseWriter, r *http.Request) error {
	return newProblem(http.StatusNotFound, "alarm dictionary %q not found: the operator raises no O2IMS alarms", truncate(r.PathValue("alarmDictionaryId"), 100))
}

func (s *Server) getNamed(w http.ResponseWriter, r *http.Request, param, what string, find func(string) (*inventory.Entry, bool)) error {
	id, err := pathUUID(r, param, what)
	if err != nil {
		return err
	}
	e, ok := find(id)
	if !ok {
		return newProblem(http.StatusNotFound, "%s %q not found", what, id)
	}
	s.writeEntry(w, r, e)
	return nil
}

// pathUUID is the id of a named route; one that is not a UUID in its canonical lowercase form cannot
// exist (every id this API hands out is one), so it is a 404.
func pathUUID(r *http.Request, param, what string) (string, error) {
	id := r.PathValue(param)
	if u, err := uuid.Parse(id); err != nil || u.String() != id {
		return "", newProblem(http.StatusNotFound, "%s %q not found: ids are lowercase UUIDs", what, truncate(id, 100))
	}
	return id, nil
}

// writeEntry answers one object: JSON as encoded when it changed, YAML from its attributes.
func (s *Server) writeEntry(w http.ResponseWriter, r *http.Request, e *inventory.Entry) {
	if media, _ := negotiate(r.Header.Get("Accept")); media == mediaJSON {
		body := make([]byte, 0, len(e.JSON)+1)
		writeEncoded(w, http.StatusOK, mediaJSON, append(append(body, e.JSON...), '\n'))
		return
	}
	s.write(w, r, http.StatusOK, e.Attrs)
}

// inventoryList answers a list as the provisioning list does — the same query parameters, filter
// operators, attribute selectors and paging (items in id order, a Link with nextpage_opaque_marker,
// the last id answered) — but as the JSON array the inventory reference declares. entries is sorted
// by id and shared: nothing here changes it.
func (s *Server) inventoryList(w http.ResponseWriter, r *http.Request, schema *query.Schema, entries []*inventory.Entry) error {
	params, order, err := parseListQuery(r.URL.RawQuery)
	if err != nil {
		return newProblem(http.StatusBadRequest, "%v", err)
	}
	var f query.Filter
	if expr, ok := params["filter"]; ok {
		if f, err = schema.ParseFilter(expr); err != nil {
			return newProblem(http.StatusBadRequest, "invalid attribute-based filtering expression: %v", err)
		}
	}
	sel, err := parseSelectionWith(params, inventoryFieldList(schema), true)
	if err != nil {
		return newProblem(http.StatusBadRequest, "invalid attribute selector: %v", err)
	}
	marker := ""
	if m, ok := params["nextpage_opaque_marker"]; ok {
		if marker, err = decodeMarker(m); err != nil {
			return newProblem(http.StatusBadRequest, "%v", err)
		}
	}
	i, _ := slices.BinarySearchFunc(entries, marker, func(e *inventory.Entry, m string) int {
		if e.ID <= m {
			return -1
		}
		return 1
	})
	candidates := entries[i:]
	page := make([]*inventory.Entry, 0, min(len(candidates), s.cfg.PageSize))
	more := false
	for _, e := range candidates {
		if f != nil && !f.Match(e.Attrs) {
			continue
		}
		if len(page) == s.cfg.PageSize {
			more = true
			break
		}
		page = append(page, e)
	}
	if more {
		w.Header().Set("Link", nextLink(r.URL, order, encodeMarker(page[len(page)-1].ID)))
	}
	if media, _ := negotiate(r.Header.Get("Accept")); media == mediaJSON && sel.complete() {
		size := 3
		for _, e := range page {
			size += len(e.JSON) + 1
		}
		body := make([]byte, 0, size)
		body = append(body, '[')
		for k, e := range page {
			if k > 0 {
				body = append(body, ',')
			}
			body = append(body, e.JSON...)
		}
		writeEncoded(w, http.StatusOK, mediaJSON, append(body, "]\n"...))
		return nil
	}
	items := make([]map[string]any, len(page))
	for k, e := range page {
		items[k] = sel.applyMap(schema, e.Attrs)
	}
	s.write(w, r, http.StatusOK, items)
	return nil
}

// inventoryFieldList reads a fields / exclude_fields list of an inventory type as its reference writes
// them (its example: fields=name,extensions/country): any attribute of the schema, simple or complex,
// at any depth, and anything inside its free-form objects (extensions, capabilities, capacity). A path
// the schema does not have is a 400; excluding an attribute the reference requires is not (it stays).
// The provisioning API keeps SOL 013's reading (parseFieldList).
func inventoryFieldList(schema *query.Schema) func(param, list string, excluding bool) (*pathTree, error) {
	rules := attrRules{
		resolve:  schema.Resolve,
		selected: func(path []string) ([]string, bool) { return path, true },
		simple:   true,
	}
	return func(param, list string, excluding bool) (*pathTree, error) {
		return parseAttrList(param, list, excluding, rules)
	}
}

// applyMap answers an inventory object as the selection wants it: with fields, the listed attributes
// and those the reference requires (a required object not listed keeps only its own required members:
// a free-form one is {}); with exclude_fields, everything but the listed attributes the reference does
// not require; both together, exclude_fields wins. Every answer stays valid against the reference. obj
// is shared and never modified.
func (sel selection) applyMap(schema *query.Schema, obj map[string]any) map[string]any {
	if sel.fields != nil {
		obj = keepListed(schema.Root(), obj, sel.fields)
	}
	if sel.exclude != nil {
		obj = dropListed(schema.Root(), obj, sel.exclude)
	}
	return obj
}

func keepListed(node query.Node, obj map[string]any, tree *pathTree) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		member, t := node.Member(k), tree.children[k]
		m, isMap := v.(map[string]any)
		switch {
		case t != nil && t.listed:
			out[k] = v
		case (t != nil || member.Required()) && isMap:
			if t == nil {
				t = &pathTree{}
			}
			out[k] = keepListed(member, m, t)
		case member.Required():
			out[k] = v
		}
	}
	return out
}

func dropListed(node query.Node, obj map[string]any, tree *pathTree) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		member, t := node.Member(k), tree.children[k]
		m, isMap := v.(map[string]any)
		switch {
		case t == nil:
			out[k] = v
		case t.listed && !member.Required():
		case !t.listed && isMap:
			out[k] = dropListed(member, m, t)
		default:
			out[k] = v
		}
	}
	return out
}
