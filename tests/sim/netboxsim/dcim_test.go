package netboxsim_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/tests/sim/netboxsim"
)

// Sites and device types are real objects with ids that devices reference, each with its own
// last_updated; go-netbox's models decode all three lists.
func TestGoNetboxDecodesSitesDeviceTypesAndDevicesChangedSince(t *testing.T) {
	clock := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	now := func() time.Time { return clock }
	s, base := start(t, netboxsim.Options{Clock: now})
	seedStandard(s)
	north := s.AddSite(netboxsim.Site{Name: "North", Description: "the northern site", Region: "EU"})
	gpu := s.AddDeviceType(netboxsim.DeviceType{Model: "XE9680", Manufacturer: "Dell", PartNumber: "v2"})
	a := s.AddDevice(netboxsim.Device{Name: "a", Site: "North", Model: "XE9680", Serial: "SN-A", AssetTag: "AT-A",
		Description: "gpu host", Tags: []string{"gpu", "rack-7"}, Custom: map[string]any{"o2ims_managed": true}})
	b := s.AddDevice(netboxsim.Device{Name: "b"}) // default site and model
	c := apiClient(base)
	ctx := context.Background()

	sites, _, err := c.DcimAPI.DcimSitesList(ctx).Execute()
	require.NoError(t, err)
	require.EqualValues(t, 2, sites.Count)
	assert.Equal(t, north, sites.Results[0].Id)
	assert.Equal(t, "the northern site", sites.Results[0].GetDescription())
	assert.Equal(t, "EU", sites.Results[0].Region.Get().Name)
	assert.EqualValues(t, 1, sites.Results[0].GetDeviceCount())
	assert.Equal(t, netboxsim.DefaultSite, sites.Results[1].Name)

	types, _, err := c.DcimAPI.DcimDeviceTypesList(ctx).Execute()
	require.NoError(t, err)
	require.EqualValues(t, 2, types.Count)
	assert.Equal(t, gpu, types.Results[0].Id)
	assert.Equal(t, "Dell", types.Results[0].Manufacturer.Name)
	assert.Equal(t, "v2", types.Results[0].GetPartNumber())

	devs, _, err := c.DcimAPI.DcimDevicesList(ctx).Id([]int32{a}).Execute()
	require.NoError(t, err)
	require.Len(t, devs.Results, 1)
	d := devs.Results[0]
	assert.Equal(t, north, d.Site.Id)
	assert.Equal(t, gpu, d.DeviceType.Id)
	assert.Equal(t, "XE9680", d.DeviceType.Model)
	assert.Equal(t, "SN-A", d.GetSerial())
	assert.Equal(t, "AT-A", d.GetAssetTag())
	assert.Equal(t, "gpu host", d.GetDescription())
	require.Len(t, d.Tags, 2)
	assert.Equal(t, "rack-7", d.Tags[1].Name)

	// Only what changed at or after the mark is listed: devices, sites and types alike.
	clock = clock.Add(time.Minute)
	mark := clock
	require.NoError(t, s.SetStatus(b, "active"))
	require.NoError(t, s.SetSiteDescription(north, "renamed"))
	changed, _, err := c.DcimAPI.DcimDevicesList(ctx).LastUpdatedGte([]time.Time{mark}).Execute()
	require.NoError(t, err)
	require.Len(t, changed.Results, 1)
	assert.Equal(t, b, changed.Results[0].Id)
	none, _, err := c.DcimAPI.DcimDevicesList(ctx).LastUpdatedGte([]time.Time{mark.Add(time.Second)}).Execute()
	require.NoError(t, err)
	assert.Empty(t, none.Results)
	changedSites, _, err := c.DcimAPI.DcimSitesList(ctx).LastUpdatedGte([]time.Time{mark}).Execute()
	require.NoError(t, err)
	require.Len(t, changedSites.Results, 1)
	assert.Equal(t, "renamed", changedSites.Results[0].GetDescription())
	changedTypes, _, err := c.DcimAPI.DcimDeviceTypesList(ctx).LastUpdatedGte([]time.Time{mark}).Execute()
	require.NoError(t, err)
	assert.Empty(t, changedTypes.Results)

	bySite, _, err := c.DcimAPI.DcimDevicesList(ctx).SiteId([]int32{north}).Execute()
	require.NoError(t, err)
	require.Len(t, bySite.Results, 1)
	assert.Equal(t, a, bySite.Results[0].Id)
}

func TestBadLastUpdatedIsA400(t *testing.T) {
	_, base := start(t, netboxsim.Options{})
	r := raw{t, base}
	resp, body := r.do("GET", "/api/dcim/devices/?last_updated__gte=yesterday", nil, "")
	assert.Equal(t, 400, resp.StatusCode)
	assert.Contains(t, body, "last_updated__gte")
}
