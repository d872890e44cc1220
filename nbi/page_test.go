package nbi

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
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
	store := newMemStore()
	for _, name := range names {
		store.put(prObject(name, simpleSpec("c"), nil))
	}
	for _, st := range []Store{store, plainStore{store}} {
		for size := 1; size <= len(names)+1; size++ {
			s := startStub(t, st, nil, nil, func(c *Config) { c.PageSize = size })
			do := func(p string) *exchange { return s.do(t, http.MethodGet, p, nil) }
			require.Equal(t, names, walk(t, do, collectionPath, nil), "%T, page size %d", st, size)
		}
	}
}

// The id order kept between pages follows the store: a request created or deleted between two lists
// is in, or out of, the next one, and a changed one is answered as it is now.
func TestListFollowsTheStoreBetweenLists(t *testing.T) {
	store := newMemStore()
	for _, name := range namesN("pr-", 5) {
		store.put(prObject(name, simpleSpec("c"), nil))
	}
	s := startStub(t, store, nil, nil, func(c *Config) { c.PageSize = 2 })
	do := func(p string) *exchange { return s.do(t, http.MethodGet, p, nil) }
	require.Equal(t, namesN("pr-", 5), walk(t, do, collectionPath, nil))

	store.put(prObject("pr-0025", simpleSpec("c"), nil))
	store.remove("pr-003")
	require.Equal(t, []string{"pr-000", "pr-001", "pr-002", "pr-0025", "pr-004"}, walk(t, do, collectionPath, nil))

	store.put(prObject("pr-001", simpleSpec("changed"), nil))
	x := do(collectionPath)
	require.Equal(t, http.StatusOK, x.code())
	require.Equal(t, "changed", x.list(t).Items[1].ProvisioningRequestData.TemplateParameters["clusterName"])
}
