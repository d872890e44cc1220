package provisioning

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
)

// benchServer serves benchStore's 10 000 cached requests without authentication.
func benchServer(b *testing.B) (*nbi.Server, []string) {
	b.Helper()
	store, names := benchStore()
	srv, err := newServer(nbi.Config{}, store, nil, nil, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	return srv, names
}

// benchStore holds 10 000 cached requests, a third of them fulfilled.
func benchStore() (*nbitest.MemStore, []string) {
	store := nbitest.NewMemStore()
	var names []string
	for i := 0; i < 10000; i++ {
		name := fmt.Sprintf("edge-%05d.site-%d", i, i%50)
		var status map[string]any
		if i%3 == 0 {
			status = map[string]any{
				"provisioningStatus": map[string]any{"provisioningState": "fulfilled", "provisioningMessage": "Cluster resource created",
					"provisioningUpdateTime": "2026-11-30T10:00:00Z"},
				"provisionedResourceSet": map[string]any{"oCloudNodeClusterId": "uid", "oCloudInfrastructureResourceIds": []any{"h1", "h2"}},
			}
		}
		store.Put(nbitest.PRObject(name, map[string]any{
			"name": "edge " + name, "description": "bench", "templateName": "nephio-workload-cluster", "templateVersion": "v3.0.0",
			"templateParameters": map[string]any{"clusterName": name, "labels": map[string]any{"site": fmt.Sprint(i % 50)}},
		}, status))
		names = append(names, name)
	}
	return store, names
}

func serve(b *testing.B, h http.Handler, path string) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if rec.Code != http.StatusOK {
		b.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
	}
}

func BenchmarkGetNamed(b *testing.B) {
	srv, names := benchServer(b)
	h := srv.Handler()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		serve(b, h, nbitest.NamedPath(names[i%len(names)]))
	}
}

// BenchmarkList answers the first page (PageSize 1000) of 10 000.
func BenchmarkList(b *testing.B) {
	srv, _ := benchServer(b)
	h := srv.Handler()
	b.ReportAllocs()
	for b.Loop() {
		serve(b, h, nbitest.CollectionPath)
	}
}

// BenchmarkListFiltered walks all 10 000 through a filter (a fiftieth match).
func BenchmarkListFiltered(b *testing.B) {
	srv, _ := benchServer(b)
	h := srv.Handler()
	b.ReportAllocs()
	for b.Loop() {
		serve(b, h, nbitest.CollectionPath+"?filter=(eq,provisioningRequestData/templateParameters/labels/site,7)")
	}
}
