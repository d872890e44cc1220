package netboxsim

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"
)

// Site is a NetBox site (dcim.site). Devices name theirs by Name; a name no site has yet creates one.
type Site struct {
	ID          int32     `json:"id,omitempty"`
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	Region      string    `json:"region,omitempty"`
	LastUpdated time.Time `json:"-"`
}

type site struct {
	Site
	created time.Time
}

// AddSite stores a site and returns its id (the existing one when a site of that name exists).
func (s *Server) AddSite(st Site) int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.siteLocked(st).ID
}

func (s *Server) siteLocked(st Site) *site {
	if st.Name == "" {
		st.Name = DefaultSite
	}
	for _, x := range s.sites {
		if x.Name == st.Name {
			return x
		}
	}
	s.nextSite++
	now := s.opts.Clock().UTC().Truncate(time.Microsecond) // not a device stamp: device ETags stay as they were
	st.ID, st.LastUpdated = s.nextSite, now
	x := &site{Site: st, created: now}
	s.sites[st.ID] = x
	return x
}

// SetSiteDescription is an administrator edit of a site (bumps its last_updated, not its devices').
func (s *Server) SetSiteDescription(id int32, description string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	x, ok := s.sites[id]
	if !ok {
		return fmt.Errorf("netboxsim: no site %d", id)
	}
	x.Description = description
	x.LastUpdated = s.opts.Clock().UTC().Truncate(time.Microsecond)
	return nil
}

// Sites returns every site ordered by id.
func (s *Server) Sites() []Site {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []Site{}
	for _, x := range s.sortedSitesLocked() {
		out = append(out, x.Site)
	}
	return out
}

func (s *Server) handleSiteList(w http.ResponseWriter, r *http.Request) {
	listDCIM(s, w, r, s.sortedSitesLocked, func(x *site) (int32, time.Time) { return x.ID, x.LastUpdated }, s.renderSiteLocked)
}

func (s *Server) sortedSitesLocked() []*site {
	return slices.SortedFunc(maps.Values(s.sites), func(a, b *site) int { return cmp.Compare(a.ID, b.ID) })
}

// briefSite is the nested site NetBox renders inside a device.
func briefSite(x *site, base string) map[string]any {
	return map[string]any{
		"id": x.ID, "url": fmt.Sprintf("%s/api/dcim/sites/%d/", base, x.ID), "display": x.Name,
		"name": x.Name, "slug": slug(x.Name), "description": x.Description,
	}
}

func (s *Server) renderSiteLocked(x *site, base string) map[string]any {
	var region any
	if x.Region != "" {
		region = map[string]any{
			"id": 1, "url": base + "/api/dcim/regions/1/", "display": x.Region, "name": x.Region,
			"slug": slug(x.Region), "description": "", "site_count": 0, "_depth": 0,
		}
	}
	return map[string]any{
		"id": x.ID, "url": fmt.Sprintf("%s/api/dcim/sites/%d/", base, x.ID),
		"display_url": fmt.Sprintf("%s/dcim/sites/%d/", base, x.ID), "display": x.Name,
		"name": x.Name, "slug": slug(x.Name),
		"status": map[string]any{"value": "active", "label": "Active"},
		"region": region, "group": nil, "tenant": nil, "facility": "", "time_zone": nil,
		"description": x.Description, "physical_address": "", "shipping_address": "",
		"latitude": nil, "longitude": nil, "owner": nil, "comments": "", "asns": []any{}, "tags": []any{},
		"custom_fields": map[string]any{},
		"created":       pyISO(x.created, "Z"), "last_updated": pyISO(x.LastUpdated, "Z"),
		"circuit_count": 0, "device_count": s.deviceCountLocked(func(d *device) bool { return d.siteID == x.ID }),
		"prefix_count": 0, "rack_count": 0, "virtualmachine_count": 0, "vlan_count": 0,
	}
}
