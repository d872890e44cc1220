package nbitest

import (
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi/datamodel"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
	"github.com/stretchr/testify/require"
)

// The roots of the inventory and monitoring APIs as the O2IMS specification spells them (clauses 3.2.3,
// 3.3.3) and as oran-o2ims does (its references): each serves the other's routes.
var o2imsSpellings = map[string]string{
	"/O2ims_infrastructureInventory":  "/o2ims-infrastructureInventory",
	"/O2ims_infrastructureMonitoring": "/o2ims-infrastructureMonitoring",
}

// InventoryRoots and MonitoringRoots are every root spelling with every major served under it.
var (
	InventoryRoots = []string{
		"/o2ims-infrastructureInventory/v1", "/o2ims-infrastructureInventory/v2",
		"/O2ims_infrastructureInventory/v1", "/O2ims_infrastructureInventory/v2",
	}
	MonitoringRoots = []string{
		"/o2ims-infrastructureMonitoring/v1", "/o2ims-infrastructureMonitoring/v2",
		"/O2ims_infrastructureMonitoring/v1", "/O2ims_infrastructureMonitoring/v2",
	}
)

// MajorOf is the major version segment of an O2IMS path ("v1", "v2"; "" none).
func MajorOf(path string) string {
	parts := strings.SplitN(strings.TrimPrefix(path, "/"), "/", 3)
	if len(parts) >= 2 && len(parts[1]) == 2 && parts[1][0] == 'v' {
		return parts[1]
	}
	return ""
}

// canonicalO2IMS is u as oran-o2ims's references name it: the lowercase spelling of the root and, with
// major, that major version segment.
func canonicalO2IMS(u *url.URL, major string) *url.URL {
	c := *u
	c.RawPath = ""
	for spec, anchor := range o2imsSpellings {
		if c.Path == spec || strings.HasPrefix(c.Path, spec+"/") {
			c.Path = anchor + strings.TrimPrefix(c.Path, spec)
		}
	}
	if major != "" {
		if m := MajorOf(c.Path); m != "" {
			root, rest, _ := strings.Cut(strings.TrimPrefix(c.Path, "/"), "/"+m)
			c.Path = "/" + root + "/" + major + rest
		}
	}
	return &c
}

var (
	invV2Once sync.Once
	invV2     *reference
	invV2Err  error
)

// LoadInventoryV2Reference is oran-o2ims's current inventory document (paths under
// /o2ims-infrastructureInventory/v2, testdata/reference/o2ims-inventory-v2), with its common document.
func LoadInventoryV2Reference(t testing.TB) *reference {
	t.Helper()
	invV2Once.Do(func() {
		invV2, invV2Err = buildReference("o2ims-inventory-v2/resources/api/openapi.yaml", func(path string) *datamodel.DocumentConfiguration {
			return &datamodel.DocumentConfiguration{
				BasePath: filepath.Dir(path), SpecFilePath: filepath.Base(path), AllowFileReferences: true,
				IgnoreArrayCircularReferences: true,
			}
		}, func(m *v3.Document) (*base.Schema, error) {
			item := m.Paths.PathItems.GetOrZero("/o2ims-infrastructureInventory/v2/resourceTypes/{resourceTypeId}")
			return item.Get.Responses.Codes.GetOrZero("404").Content.GetOrZero("application/problem+json").Schema.Schema(), nil
		})
		if invV2Err == nil {
			invV2.notice, invV2Err = schema(invV2.model, "InventoryChangeNotification")
		}
	})
	require.NoError(t, invV2Err, "loading the O2IMS inventory v2 reference")
	return invV2
}

// ReferencePaths are the path templates of the reference for root ("/o2ims-infrastructureInventory/v2"
// …), with their methods: what a test proves is served under every alias.
func (r *reference) ReferencePaths() map[string][]string {
	out := map[string][]string{}
	for tmpl, item := range r.model.Paths.PathItems.FromOldest() {
		for m := range item.GetOperations().KeysFromOldest() {
			out[tmpl] = append(out[tmpl], strings.ToUpper(m))
		}
	}
	return out
}
