package inventory

import (
	"encoding/json"
	"strconv"

	"github.com/o2ims-operator/o2ims-operator/netbox"
)

// Entry is one inventory object as answered: its id, its attributes as the generic tree filters and
// attribute selectors walk, and its complete JSON, encoded once when the object changes. Both are
// read-only once built.
type Entry struct {
	ID    string
	Attrs map[string]any
	JSON  []byte
}

// NewEntry makes an Entry of attrs (JSON-ready values only).
func NewEntry(id string, attrs map[string]any) *Entry {
	b, err := json.Marshal(attrs)
	if err != nil { // only strings, numbers, booleans, maps and slices of them: cannot happen
		panic(err)
	}
	return &Entry{ID: id, Attrs: attrs, JSON: b}
}

// Extension keys of a resource.
const (
	ExtNetBoxID      = "netboxId"
	ExtName          = "name"
	ExtStatus        = "status"
	ExtRequestUID    = "provisioningRequestReference" // the owning request's uid, as the provisioning API answers it
	ExtRequestID     = "provisioningRequestId"        // its name, when the operator knows the request
	ExtCapabilities  = "capabilities"
	ExtHostIdentity  = "hostIdentity" // netbox-<id>, the form the ProvisioningRequest CR records
	ExtNetBoxSiteID  = "netboxSiteId"
	ExtNetBoxTypeID  = "netboxDeviceTypeId"
	resourceKind     = "PHYSICAL"
	resourceClass    = "COMPUTE"
	globalLocationID = "" // assigned by the SMO; NetBox has no such id
)

// resourceEntry maps a pool device to its Resource. owner names the request of a uid ("" unknown).
func (c Config) resourceEntry(d *netbox.InventoryDevice, owner func(uid string) string) *Entry {
	asset := d.AssetTag
	if asset == "" {
		asset = d.Serial
	}
	desc := d.Description
	if desc == "" {
		desc = d.Name
	}
	tags := make([]any, len(d.Tags))
	for i, t := range d.Tags {
		tags[i] = t
	}
	caps := make(map[string]any, len(d.Capabilities))
	for k, v := range d.Capabilities {
		caps[k] = v
	}
	ext := map[string]any{
		ExtNetBoxID: strconv.FormatInt(int64(d.ID), 10), ExtHostIdentity: netbox.Identity(d.ID),
		ExtName: d.Name, ExtStatus: d.Status, ExtCapabilities: caps,
	}
	if d.RequestUID != "" {
		ext[ExtRequestUID] = d.RequestUID
		if owner != nil {
			if name := owner(d.RequestUID); name != "" {
				ext[ExtRequestID] = name
			}
		}
	}
	id := c.ResourceID(d.ID)
	return NewEntry(id, map[string]any{
		"resourceId":     id,
		"resourcePoolId": c.ResourcePoolID(d.Site.ID),
		"resourceTypeId": c.ResourceTypeID(d.Type.ID),
		"globalAssetId":  asset,
		"description":    desc,
		"elements":       []any{},
		"tags":           tags,
		"groups":         []any{},
		"extensions":     ext,
	})
}

func (c Config) poolEntry(s *netbox.InventorySite) *Entry {
	id := c.ResourcePoolID(s.ID)
	ext := map[string]any{ExtNetBoxSiteID: strconv.FormatInt(int64(s.ID), 10), "slug": s.Slug}
	if s.Region != "" {
		ext["region"] = s.Region
	}
	return NewEntry(id, map[string]any{
		"resourcePoolId": id, "name": s.Name, "oCloudSiteId": c.SiteID(s.ID), "description": s.Description,
		"extensions": ext,
	})
}

func (c Config) siteEntry(s *netbox.InventorySite) *Entry {
	id := c.SiteID(s.ID)
	return NewEntry(id, map[string]any{
		"oCloudSiteId": id, "globalLocationId": globalLocationID, "name": s.Name, "description": s.Description,
		"resourcePools": []any{c.ResourcePoolID(s.ID)},
		"extensions":    map[string]any{ExtNetBoxSiteID: strconv.FormatInt(int64(s.ID), 10), "slug": s.Slug},
	})
}

func (c Config) typeEntry(t *netbox.InventoryDeviceType) *Entry {
	id := c.ResourceTypeID(t.ID)
	ext := map[string]any{ExtNetBoxTypeID: strconv.FormatInt(int64(t.ID), 10)}
	if t.PartNumber != "" {
		ext["partNumber"] = t.PartNumber
	}
	return NewEntry(id, map[string]any{
		"resourceTypeId": id, "name": t.Model, "description": t.Description, "vendor": t.Manufacturer,
		"model": t.Model, "version": "", "resourceKind": resourceKind, "resourceClass": resourceClass,
		"alarmDictionaryId": c.AlarmDictionaryID(t.ID), "extensions": ext,
	})
}

// Cluster is what a deployment manager is made of: a fulfilled ProvisioningRequest's Cluster API
// Cluster.
type Cluster struct {
	UID, Namespace, Name string
	Endpoint             string   // https://host:port of spec.controlPlaneEndpoint, "" if none yet
	RequestID            string   // the ProvisioningRequest's name
	RequestUID           string   // its uid
	ResourceIDs          []string // the inventory resources of the hosts it holds
	APIVersion           string   // cluster.x-k8s.io version the operator reads
}

// DeploymentManagerEntry maps a Cluster to its DeploymentManager.
func (c Config) DeploymentManagerEntry(cl *Cluster) *Entry {
	id := c.DeploymentManagerID(cl.UID)
	res := make([]any, len(cl.ResourceIDs))
	for i, r := range cl.ResourceIDs {
		res[i] = r
	}
	return NewEntry(id, map[string]any{
		"deploymentManagerId": id,
		"name":                cl.Name,
		"description":         "Cluster API Cluster " + cl.Namespace + "/" + cl.Name + " of provisioning request " + cl.RequestID,
		"oCloudId":            c.OCloudID.String(),
		"serviceUri":          cl.Endpoint,
		"supportedLocations":  []any{},
		"capabilities":        map[string]any{"clusterAPIVersion": cl.APIVersion},
		"capacity":            map[string]any{"hosts": int64(len(cl.ResourceIDs))},
		"extensions": map[string]any{
			"clusterNamespace": cl.Namespace, "clusterUid": cl.UID,
			ExtRequestID: cl.RequestID, ExtRequestUID: cl.RequestUID, "infrastructureResourceIds": res,
		},
	})
}
