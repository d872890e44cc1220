package framework

import (
	"fmt"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// Cache gives read access to the informer caches of watched and related resources. Reads cost no API call;
// handlers go live only where correctness needs it (e.g. reading back after a lost write).
type Cache struct {
	mu        sync.RWMutex
	informers map[schema.GroupVersionResource]cache.SharedIndexInformer
	revisions map[schema.GroupVersionResource]*revision
	uids      map[schema.GroupVersionResource]*uidIndex // watched resources only
}

// revision counts the changes one informer has delivered; err is why it cannot (never, in practice).
type revision struct {
	n   atomic.Uint64
	err error
}

func newCache() *Cache {
	return &Cache{
		informers: map[schema.GroupVersionResource]cache.SharedIndexInformer{},
		revisions: map[schema.GroupVersionResource]*revision{},
		uids:      map[schema.GroupVersionResource]*uidIndex{},
	}
}

// addUIDIndex keeps the "uid" index of a watched resource.
func (c *Cache) addUIDIndex(gvr schema.GroupVersionResource, inf cache.SharedIndexInformer) error {
	x := newUIDIndex()
	if _, err := inf.AddEventHandler(x.handler()); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.uids[gvr] = x
	return nil
}

func (c *Cache) uidIndex(gvr schema.GroupVersionResource) *uidIndex {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.uids[gvr]
}

// owners is the OwnerIndex of a watched resource.
func (c *Cache) owners(gvr schema.GroupVersionResource, inf cache.SharedIndexInformer) OwnerIndex {
	return indexKeys{inf: inf, uids: c.uidIndex(gvr)}
}

func (c *Cache) add(gvr schema.GroupVersionResource, inf cache.SharedIndexInformer) {
	rev := &revision{}
	bump := func() { rev.n.Add(1) }
	_, rev.err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { bump() },
		UpdateFunc: func(any, any) { bump() },
		DeleteFunc: func(any) { bump() },
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	c.informers[gvr] = inf
	c.revisions[gvr] = rev
}

// Revision counts the changes the cache of a resource has taken in. It moves after the cache changed
// (an informer notifies its handlers after updating its store), so a reader that reads it before List
// and finds it unchanged later knows that what List answered is still current, bar a change being
// delivered at that moment — the staleness of any informer read. The NBI sorts a list's ids once per
// revision instead of once per page.
func (c *Cache) Revision(gvr schema.GroupVersionResource) (uint64, error) {
	c.mu.RLock()
	rev, ok := c.revisions[gvr]
	c.mu.RUnlock()
	if !ok {
		return 0, fmt.Errorf("framework: %s is not watched; register it with Watch or Related", gvr)
	}
	if rev.err != nil {
		return 0, fmt.Errorf("framework: %s changes cannot be counted: %w", gvr, rev.err)
	}
	return rev.n.Load(), nil
}

func (c *Cache) informer(gvr schema.GroupVersionResource) (cache.SharedIndexInformer, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	inf, ok := c.informers[gvr]
	if !ok {
		return nil, fmt.Errorf("framework: %s is not watched; register it with Watch or Related", gvr)
	}
	return inf, nil
}

// Get returns a private copy of a cached object; found is false when the cache has none.
func (c *Cache) Get(gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, bool, error) {
	u, found, err := c.Peek(gvr, namespace, name)
	if err != nil || !found {
		return nil, found, err
	}
	return u.DeepCopy(), true, nil
}

// Peek is Get without the copy: the shared (read-only!) cached object, as List answers them. For
// readers that only read, such as the NBI's named GET, where the copy was most of what a GET allocated.
func (c *Cache) Peek(gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, bool, error) {
	inf, err := c.informer(gvr)
	if err != nil {
		return nil, false, err
	}
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	obj, exists, err := inf.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return nil, false, err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, false, fmt.Errorf("framework: unexpected %T in the %s cache", obj, gvr)
	}
	return u, true, nil
}

// List returns shared (read-only!) cached objects of a resource, in namespace ("" = all), in no particular
// order. Neither copied nor sorted — the NBI lists ten thousand per page and sorts by its own key, and a
// sort through the unstructured accessors here cost it more than everything else together — so callers
// must not modify them, and sort if they need an order.
func (c *Cache) List(gvr schema.GroupVersionResource, namespace string) ([]*unstructured.Unstructured, error) {
	inf, err := c.informer(gvr)
	if err != nil {
		return nil, err
	}
	var items []any
	if _, indexed := inf.GetIndexer().GetIndexers()[cache.NamespaceIndex]; namespace == "" || !indexed {
		// No namespace index: a cluster-scoped resource, whose objects have no namespace.
		if namespace != "" {
			return nil, nil
		}
		items = inf.GetIndexer().List()
	} else {
		items, err = inf.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
		if err != nil {
			return nil, err
		}
	}
	out := make([]*unstructured.Unstructured, 0, len(items))
	for _, it := range items {
		if u, ok := it.(*unstructured.Unstructured); ok {
			out = append(out, u)
		}
	}
	return out, nil
}

// ByIndex returns private copies of the cached objects with an index value.
func (c *Cache) ByIndex(gvr schema.GroupVersionResource, index, value string) ([]*unstructured.Unstructured, error) {
	inf, err := c.informer(gvr)
	if err != nil {
		return nil, err
	}
	var items []any
	if x := c.uidIndex(gvr); x != nil && index == IndexUID {
		if key := x.key(value); key != "" {
			if obj, exists, err := inf.GetIndexer().GetByKey(key); err == nil && exists {
				items = append(items, obj)
			}
		}
	} else if items, err = inf.GetIndexer().ByIndex(index, value); err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, 0, len(items))
	for _, it := range items {
		if u, ok := it.(*unstructured.Unstructured); ok {
			out = append(out, u.DeepCopy())
		}
	}
	return out, nil
}

// HasSynced reports whether every informer has completed its initial list.
func (c *Cache) HasSynced() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, inf := range c.informers {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}

// AddEventHandler lets another component (the NBI's metrics, say) observe a watched resource.
func (c *Cache) AddEventHandler(gvr schema.GroupVersionResource, h cache.ResourceEventHandler) error {
	inf, err := c.informer(gvr)
	if err != nil {
		return err
	}
	_, err = inf.AddEventHandler(h)
	return err
}

// indexKeys implements OwnerIndex over one informer and its uid index.
type indexKeys struct {
	inf  cache.SharedIndexInformer
	uids *uidIndex
}

func (i indexKeys) Keys(index, value string) []string {
	if i.uids != nil && index == IndexUID {
		if key := i.uids.key(value); key != "" {
			return []string{key}
		}
		return nil
	}
	keys, err := i.inf.GetIndexer().IndexKeys(index, value)
	if err != nil {
		return nil
	}
	return keys
}
