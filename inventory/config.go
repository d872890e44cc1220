package inventory

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/o2ims-operator/o2ims-operator/internal/ocloud"
)

// Defaults of the OCLOUD_* and INVENTORY_* environment.
const (
	DefaultName            = "o2ims-operator"
	DefaultDescription     = "O-Cloud whose bare-metal inventory o2ims-operator serves from NetBox"
	DefaultRefreshInterval = 10 * time.Second
	DefaultResyncInterval  = 10 * time.Minute
	// overlap is how far before the newest last_updated seen the next changes-only listing starts: a
	// NetBox transaction stamps last_updated before it commits, so a row may become visible with a
	// stamp slightly older than one already listed. Re-reading the last seconds is cheap.
	overlap = 5 * time.Second
)

// Config describes the O-Cloud and how its view of NetBox is kept.
type Config struct {
	OCloudID        uuid.UUID     // OCLOUD_ID; default UUIDv5(namespace, NETBOX_URL): internal/ocloud
	GlobalCloudID   uuid.UUID     // OCLOUD_GLOBAL_CLOUD_ID: assigned by the SMO; default the nil UUID (none yet)
	Name            string        // OCLOUD_NAME
	Description     string        // OCLOUD_DESCRIPTION
	ServiceURI      string        // OCLOUD_SERVICE_URI: the apiRoot SMOs reach; default: from each request's Host
	RefreshInterval time.Duration // INVENTORY_REFRESH_INTERVAL seconds: changes-only listing period
	ResyncInterval  time.Duration // INVENTORY_RESYNC_INTERVAL seconds: full listing period (finds deletions)
	// MaxSubscriptions bounds the stored subscriptions (INVENTORY_MAX_SUBSCRIPTIONS), and with them the
	// notifier's per-subscription metric series.
	MaxSubscriptions int
}

// ConfigFromEnv reads the configuration; netboxURL is NETBOX_URL (the default O-Cloud id's seed). A bad
// value is one line naming the variable.
func ConfigFromEnv(getenv func(string) string, netboxURL string) (Config, error) {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	oc, err := ocloud.IDFromEnv(getenv, netboxURL)
	if err != nil {
		return Config{}, err
	}
	cfg := Config{
		OCloudID:         oc,
		Name:             DefaultName,
		Description:      DefaultDescription,
		RefreshInterval:  DefaultRefreshInterval,
		ResyncInterval:   DefaultResyncInterval,
		MaxSubscriptions: DefaultMaxSubscriptions,
	}
	for _, u := range []struct {
		env string
		dst *uuid.UUID
	}{{"OCLOUD_GLOBAL_CLOUD_ID", &cfg.GlobalCloudID}} {
		if v := get(u.env); v != "" {
			id, err := uuid.Parse(v)
			if err != nil || len(v) != 36 {
				return Config{}, fmt.Errorf("%s=%q: want a UUID (8-4-4-4-12 hexadecimal digits)", u.env, v)
			}
			*u.dst = id
		}
	}
	if v := get("OCLOUD_NAME"); v != "" {
		cfg.Name = v
	}
	if v := get("OCLOUD_DESCRIPTION"); v != "" {
		cfg.Description = v
	}
	if v := get("OCLOUD_SERVICE_URI"); v != "" {
		if !strings.HasPrefix(v, "http://") && !strings.HasPrefix(v, "https://") {
			return Config{}, fmt.Errorf("OCLOUD_SERVICE_URI=%q: want an absolute http:// or https:// URI", v)
		}
		cfg.ServiceURI = strings.TrimRight(v, "/")
	}
	for _, d := range []struct {
		env string
		dst *time.Duration
	}{{"INVENTORY_REFRESH_INTERVAL", &cfg.RefreshInterval}, {"INVENTORY_RESYNC_INTERVAL", &cfg.ResyncInterval}} {
		if v := get(d.env); v != "" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f <= 0 || f > 86400 {
				return Config{}, fmt.Errorf("%s=%q: want a positive number of seconds (at most 86400)", d.env, v)
			}
			*d.dst = time.Duration(f * float64(time.Second))
		}
	}
	if v := get("INVENTORY_MAX_SUBSCRIPTIONS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			return Config{}, fmt.Errorf("INVENTORY_MAX_SUBSCRIPTIONS=%q: want a whole number from 1 to 10000", v)
		}
		cfg.MaxSubscriptions = n
	}
	return cfg, nil
}

// DefaultMaxSubscriptions is INVENTORY_MAX_SUBSCRIPTIONS's default.
const DefaultMaxSubscriptions = 100

// The ids of the inventory's objects: UUIDv5 in the O-Cloud's id of the NetBox (or Cluster API) object,
// so they are the same on every replica and after every restart, and differ between O-Clouds
// (internal/ocloud, shared with the chain).

// ResourceID is the id of the resource of NetBox device id: what the chain records in a request's
// oCloudInfrastructureResourceIds.
func (c Config) ResourceID(device int32) string { return ocloud.ResourceID(c.OCloudID, device) }

// ResourcePoolID is the id of the pool of NetBox site id.
func (c Config) ResourcePoolID(site int32) string { return c.id("netbox/dcim.site/%d/pool", site) }

// SiteID is the id of the O-Cloud site of NetBox site id.
func (c Config) SiteID(site int32) string { return c.id("netbox/dcim.site/%d", site) }

// ResourceTypeID is the id of the resource type of NetBox device type id.
func (c Config) ResourceTypeID(deviceType int32) string {
	return c.id("netbox/dcim.devicetype/%d", deviceType)
}

// AlarmDictionaryID is the id of the alarm dictionary of the resource type of NetBox device type id
// (package alarms serves it; a resource type names it as its alarmDictionaryId).
func (c Config) AlarmDictionaryID(deviceType int32) string {
	return c.id("netbox/dcim.devicetype/%d/alarmDictionary", deviceType)
}

// DeploymentManagerID is the id of the deployment manager of the Cluster API Cluster with uid.
func (c Config) DeploymentManagerID(clusterUID string) string {
	return c.id("cluster.x-k8s.io/Cluster/%s", clusterUID)
}

func (c Config) id(format string, args ...any) string { return ocloud.ID(c.OCloudID, format, args...) }
