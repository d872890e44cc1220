package provisioning

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
)

// Every page size from 1 to beyond the count, over names offered in random order (the store's map
// order), answers every request exactly once and in id order: the bounded selection keeps the right
// items at every page boundary, including one exactly full page and a last page of one.
func TestPagingEveryPageSizeAnswersEveryRequestOnceInOrder(t *testing.T) {
	const n = 23
	rng := rand.New(rand.NewPCG(1, 2))
	names := make([]string, n)
	for i := range names {
		// Ids of varied lengths, so byte order is neither insertion nor numeric order.
		names[i] = fmt.Sprintf("pr-%d", rng.IntN(100000))
	}
	slices.Sort(names)
	names = slices.Compact(names)
	store := nbitest.NewMemStore()
	for _, name := range names {
		store.Put(nbitest.PRObject(name, nbitest.SimpleSpec("c"), nil))
	}
	for _, st := range []nbi.Store{store, nbitest.PlainStore{Store: store}} {
		for size := 1; size <= len(names)+1; size++ {
			s := startStub(t, st, nil, nil, func(c *nbi.Config) { c.PageSize = size })
			do := func(p string) *nbitest.Exchange { return s.Do(t, http.MethodGet, p, nil) }
			require.Equal(t, names, walk(t, do, nbitest.CollectionPath, nil), "%T, page size %d", st, size)
		}
	}
}

// The id order kept between pages follows the store: a request created or deleted between two lists
// is in, or out of, the next one, and a changed one is answered as it is now.
func TestListFollowsTheStoreBetweenLists(t *testing.T) {
	store := nbitest.NewMemStore()
	for _, name := range namesN("pr-", 5) {
		store.Put(nbitest.PRObject(name, nbitest.SimpleSpec("c"), nil))
	}
	s := startStub(t, store, nil, nil, func(c *nbi.Config) { c.PageSize = 2 })
	do := func(p string) *nbitest.Exchange { return s.Do(t, http.MethodGet, p, nil) }
	require.Equal(t, namesN("pr-", 5), walk(t, do, nbitest.CollectionPath, nil))

	store.Put(nbitest.PRObject("pr-0025", nbitest.SimpleSpec("c"), nil))
	store.Remove("pr-003")
	require.Equal(t, []string{"pr-000", "pr-001", "pr-002", "pr-0025", "pr-004"}, walk(t, do, nbitest.CollectionPath, nil))

	byCluster := func(name string) []string {
		return walk(t, do, nbitest.CollectionPath+"?filter=(eq,provisioningRequestData/templateParameters/clusterName,"+name+")", nil)
	}
	require.Len(t, byCluster("c"), 5)
	store.Put(nbitest.PRObject("pr-001", nbitest.SimpleSpec("changed"), nil))
	x := do(nbitest.CollectionPath)
	require.Equal(t, http.StatusOK, x.Code())
	require.Equal(t, "changed", list(t, x).Items[1].ProvisioningRequestData.TemplateParameters["clusterName"])
	// A filter decides on the request as it is now, too.
	require.Equal(t, []string{"pr-001"}, byCluster("changed"))
	require.Equal(t, []string{"pr-000", "pr-002", "pr-0025", "pr-004"}, byCluster("c"))
}

// A change landing between the revision's read and List's snapshot is in the next list: the order
// kept is stored under the revision read before the snapshot, so the change's revision rebuilds it.
func TestAChangeDuringAListIsInTheNextOne(t *testing.T) {
	store := nbitest.NewMemStore(nbitest.PRObject("pr-1", nbitest.SimpleSpec("c"), nil))
	s := startStub(t, store, nil, nil)
	do := func(p string) *nbitest.Exchange { return s.Do(t, http.MethodGet, p, nil) }
	store.Mu.Lock()
	store.Listed = func() { store.Put(nbitest.PRObject("pr-2", nbitest.SimpleSpec("c"), nil)) }
	store.Mu.Unlock()
	require.Equal(t, []string{"pr-1"}, walk(t, do, nbitest.CollectionPath, nil), "the snapshot was taken before the change")
	require.Equal(t, []string{"pr-1", "pr-2"}, walk(t, do, nbitest.CollectionPath, nil))
}

// A kept order is not answered once the store cannot be read: the list is 503 like a named GET.
func TestAKeptOrderIsNotAnsweredWhenTheStoreFails(t *testing.T) {
	store := nbitest.NewMemStore(nbitest.PRObject("pr-1", nbitest.SimpleSpec("c"), nil))
	s := startStub(t, store, nil, nil)
	require.Equal(t, http.StatusOK, s.Do(t, http.MethodGet, nbitest.CollectionPath, nil).Code())
	store.Mu.Lock()
	store.Err = errors.New("cache not synced")
	store.Mu.Unlock()
	require.Equal(t, http.StatusServiceUnavailable, s.Do(t, http.MethodGet, nbitest.CollectionPath, nil).Code())
}

// Attribute selectors apply to JSON lists too: only the complete Info takes the kept encodings.
func TestAttributeSelectorsTrimAJSONList(t *testing.T) {
	spec := nbitest.SimpleSpec("c")
	spec["templateParameters"].(map[string]any)["labels"] = map[string]any{"site": "lab"}
	store := nbitest.NewMemStore(nbitest.PRObject("pr-1", spec, nil))
	s := startStub(t, store, nil, nil)
	params := func(query string) map[string]any {
		x := s.Do(t, http.MethodGet, nbitest.CollectionPath+query, nil, "Accept", "application/json")
		require.Equal(t, http.StatusOK, x.Code(), "%s", x.Body)
		items := list(t, x).Items
		require.Len(t, items, 1)
		return items[0].ProvisioningRequestData.TemplateParameters
	}
	tp := "provisioningRequestData/templateParameters/"
	require.Equal(t, map[string]any{"clusterName": "c", "labels": map[string]any{"site": "lab"}}, params(""))
	require.Equal(t, map[string]any{"clusterName": "c"}, params("?exclude_fields="+tp+"labels"))
	require.Equal(t, map[string]any{"clusterName": "c"}, params("?fields=status"), "fields drops unlisted complex attributes")
	require.Equal(t, map[string]any{"clusterName": "c", "labels": map[string]any{"site": "lab"}}, params(""), "the kept encoding is the complete Info")
}

// The JSON page made of per-request encodings is byte for byte what encoding the page's Infos gives,
// for requests of every shape: with and without status, being deleted, characters JSON escapes, numbers
// of both kinds, nested parameters.
func TestJSONPageIsTheEncodedList(t *testing.T) {
	store := nbitest.NewMemStore()
	fulfilled := map[string]any{
		"provisioningStatus": map[string]any{"provisioningState": "fulfilled", "provisioningMessage": "Cluster resource created",
			"provisioningUpdateTime": "2026-11-30T10:00:00.123Z"},
		"provisionedResourceSet": map[string]any{"oCloudNodeClusterId": "c-1", "oCloudInfrastructureResourceIds": []any{"h-1", "h-2"}},
	}
	store.Put(nbitest.PRObject("pr-a", nbitest.SimpleSpec("a"), fulfilled))
	store.Put(nbitest.PRObject("pr-b", map[string]any{"name": "<b> & \"b\"", "description": "été \u2028 \x01",
		"templateName": "t", "templateVersion": "v1",
		"templateParameters": map[string]any{"clusterName": "b", "n": int64(3), "f": 2.5, "ok": true, "none": nil,
			"hosts": []any{map[string]any{"role": "worker", "count": int64(2)}}}}, nil))
	deleting := nbitest.PRObject("pr-c", nbitest.SimpleSpec("c"), map[string]any{"provisioningStatus": map[string]any{"provisioningState": "progressing"}})
	now := metav1.Now()
	deleting.SetDeletionTimestamp(&now)
	store.Put(deleting)
	store.Put(nbitest.PRObject("pr-d", map[string]any{}, nil))
	for size := 1; size <= 5; size++ {
		a := mustNew(t, store, nil)
		nbitest.StartStub(t, nil, []nbi.API{a}, func(c *nbi.Config) { c.PageSize = size })
		sorted, err := a.sorted()
		require.NoError(t, err)
		for _, marker := range []string{"", "pr-a", "pr-b", "pr-c", "pr-d"} {
			body, last, more, ok := a.jsonPage(sorted, marker)
			require.True(t, ok)
			items, wantMore := a.page(sorted, marker, nil, nbi.Selection{})
			want, err := json.Marshal(ProvisioningRequestList{Items: items})
			require.NoError(t, err)
			require.Equal(t, string(want)+"\n", string(body.bytes()), "page size %d after %q", size, marker)
			require.Equal(t, wantMore, more)
			if len(items) > 0 {
				require.Equal(t, items[len(items)-1].ProvisioningRequestData.ProvisioningRequestID, last)
			}
		}
	}
}
