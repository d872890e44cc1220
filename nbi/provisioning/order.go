package provisioning

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/nbi"
)

// named is a cached request with its name read once: sorting and searching call for it many times.
type named struct {
	name string
	obj  *unstructured.Unstructured
	enc  *encoded
}

// encoded is what a list derives from one request: its complete Info as JSON and as the Info a filter reads,
// each made on first use and carried from one id order to the next while the request's resourceVersion
// stays. An object of a given resourceVersion never changes, and deriving them was most of what a list
// page cost. Both are read-only once stored; two pages deriving one at once store equal values.
type encoded struct {
	resourceVersion string // "" (a store that sets none): never carried over
	json            atomic.Pointer[[]byte]
	info            atomic.Pointer[ProvisioningRequestInfo] // what its filter attributes are read from
}

// byID is the cached requests in provisioningRequestId order, kept for one revision of a
// RevisionedStore. A long list is many pages, each of which would otherwise read the name of and sort
// every cached request: with ten thousand that was most of a page's cost, and the order only changes
// when the cache does.
//
// What it keeps alive: the objects it was built from, until a list after the next change rebuilds it
// (a relist that changes nothing does not move the revision, so the pre-relist copies may outlive it);
// and each request's encoding and attributes, about the size of a whole list answer, while its
// resourceVersion stays.
type byID struct {
	mu       sync.Mutex
	valid    bool
	revision uint64
	items    []named // shared and read-only once stored
}

// sorted answers every request in id order: from the view of the store's current revision, or freshly
// sorted when the store has moved on or cannot tell.
func (a *API) sorted() ([]named, error) {
	fresh := func() ([]named, error) {
		objs, err := a.store.List()
		if err != nil {
			return nil, err
		}
		return sortByName(objs, nil), nil
	}
	rs, ok := a.store.(nbi.RevisionedStore)
	if !ok {
		return fresh()
	}
	// The revision is read before List: if a change lands in between, the view is stored under the
	// older revision and rebuilt on the next page, never kept stale.
	rev, err := rs.Revision()
	if err != nil {
		return fresh() // List decides whether the store can answer at all
	}
	a.order.mu.Lock()
	prev := a.order.items
	if a.order.valid && a.order.revision == rev {
		a.order.mu.Unlock()
		return prev, nil
	}
	a.order.mu.Unlock()
	objs, err := a.store.List()
	if err != nil {
		return nil, err
	}
	items := sortByName(objs, prev)
	a.order.mu.Lock()
	a.order.valid, a.order.revision, a.order.items = true, rev, items
	a.order.mu.Unlock()
	return items, nil
}

// sortByName puts objs in id order, carrying over from prev (an earlier order) the encodings of the
// requests whose resourceVersion has not changed.
func sortByName(objs []*unstructured.Unstructured, prev []named) []named {
	out := make([]named, len(objs))
	for i, o := range objs {
		out[i] = named{name: nameOf(o), obj: o}
	}
	slices.SortFunc(out, func(a, b named) int { return strings.Compare(a.name, b.name) })
	j := 0
	for i := range out {
		rv := metadataString(out[i].obj, "resourceVersion")
		for j < len(prev) && prev[j].name < out[i].name {
			j++
		}
		if rv != "" && j < len(prev) && prev[j].name == out[i].name && prev[j].enc.resourceVersion == rv {
			out[i].enc = prev[j].enc
		} else {
			out[i].enc = &encoded{resourceVersion: rv}
		}
	}
	return out
}

// after answers the requests whose id sorts after the marker's.
func after(items []named, marker string) []named {
	return nbi.After(items, marker, func(n named) string { return n.name })
}

// nameOf reads metadata.name directly: GetName's generic path walk cost more than the rest of a scan
// over ten thousand requests.
func nameOf(o *unstructured.Unstructured) string { return metadataString(o, "name") }

func metadataString(o *unstructured.Unstructured, field string) string {
	if md, ok := o.Object["metadata"].(map[string]any); ok {
		if v, ok := md[field].(string); ok {
			return v
		}
	}
	return ""
}
