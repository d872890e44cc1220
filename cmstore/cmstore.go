// Package cmstore reads the operator's ConfigMaps of one label from an informer's cache, so that an NBI
// GET costs no API-server call, and keeps what this replica wrote visible to it at once: the
// subscriptions (one ConfigMap each) are read here and written through the API server by their store,
// which then tells the cache (Wrote, Deleted). Until the informer has seen a write, the written copy
// is answered (read-your-writes for the writer); once the cache holds that resourceVersion or a later
// one, the cache is. The alarms' and the performance API's one-ConfigMap states are read the same way
// (State, state.go) and written through State.Write, their large part packed with GzipJSON (write.go).
package cmstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Cache is the ConfigMaps of namespace labelled label=true, as an informer sees them, plus this
// replica's writes the informer has not seen yet. The informer starts at the first read and runs until
// Close (one list and one watch, however many reads).
type Cache struct {
	kube      kubernetes.Interface
	namespace string
	label     string

	once     sync.Once
	informer cache.SharedIndexInformer
	stop     chan struct{} // closed by Close
	closing  sync.Once

	mu      sync.Mutex
	written map[string]*corev1.ConfigMap // by name: written here, not yet seen by the informer
	deleted map[string]bool              // by name: deleted here, not yet seen by the informer
}

// New caches the ConfigMaps of namespace labelled label=true.
func New(kube kubernetes.Interface, namespace, label string) *Cache {
	return &Cache{kube: kube, namespace: namespace, label: label,
		written: map[string]*corev1.ConfigMap{}, deleted: map[string]bool{}, stop: make(chan struct{})}
}

// Close stops the informer (a process's stores never need to: they live as long as it does; a test's
// do, or their watches would pile up on the API server's connection).
func (c *Cache) Close() { c.closing.Do(func() { close(c.stop) }) }

func (c *Cache) start() {
	c.once.Do(func() {
		cms := c.kube.CoreV1().ConfigMaps(c.namespace)
		selector := c.label + "=true"
		lw := &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				o.LabelSelector = selector
				return cms.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				o.LabelSelector = selector
				return cms.Watch(ctx, o)
			},
		}
		// A fake clientset (the unit tests') has no streaming list: the reflector lists then watches.
		c.informer = cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, c.kube), &corev1.ConfigMap{}, 0, cache.Indexers{})
		_, _ = c.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { c.seen(obj, false) },
			UpdateFunc: func(_, obj any) { c.seen(obj, false) },
			DeleteFunc: func(obj any) { c.seen(obj, true) },
		})
		go c.informer.Run(c.stop) // until Close: for the life of the process
	})
}

// seen forgets a write (or a deletion) of this replica once the informer has caught up with it.
func (c *Cache) seen(obj any, gone bool) {
	tombstone := false
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj, tombstone = t.Obj, true
	}
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gone {
		delete(c.deleted, cm.Name)
		// A deletion's event carries its own, later resourceVersion: one older than a write here is of
		// the copy that write created again (a State's ConfigMap), which stays. A tombstone's version
		// is only the last the informer saw: the write goes with it.
		if w, ok := c.written[cm.Name]; ok && (tombstone || atLeast(cm.ResourceVersion, w.ResourceVersion)) {
			delete(c.written, cm.Name)
		}
		return
	}
	if w, ok := c.written[cm.Name]; ok && atLeast(cm.ResourceVersion, w.ResourceVersion) {
		delete(c.written, cm.Name)
	}
}

// atLeast reports whether resourceVersion a is b or later: they are compared as the integers the API
// server answers (comparable since Kubernetes 1.34); any other pair only when equal.
func atLeast(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	if errA != nil || errB != nil {
		return a == b
	}
	return x >= y
}

// synced waits for the informer's first list (ctx bounds the wait).
func (c *Cache) synced(ctx context.Context) error {
	c.start()
	// Polled finely (cache.WaitForCacheSync waits 100 ms a look): the first read waits for one list only.
	if c.informer.HasSynced() {
		return nil
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !c.informer.HasSynced() {
		select {
		case <-c.stop:
			return fmt.Errorf("the ConfigMaps labelled %s are no longer cached: the store was closed", c.label)
		case <-ctx.Done():
			return fmt.Errorf("the ConfigMaps labelled %s are not cached yet: %w", c.label, context.Cause(ctx))
		case <-tick.C:
		}
	}
	return nil
}

// Get answers the ConfigMap name (nil: there is none), with no API-server call once the cache has
// synced. The answer is shared: read it, never change it.
func (c *Cache) Get(ctx context.Context, name string) (*corev1.ConfigMap, error) {
	if err := c.synced(ctx); err != nil {
		return nil, err
	}
	obj, exists, err := c.informer.GetStore().GetByKey(c.namespace + "/" + name)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.overlayLocked(name, obj, exists), nil
}

func (c *Cache) overlayLocked(name string, obj any, exists bool) *corev1.ConfigMap {
	if c.deleted[name] {
		return nil
	}
	var cached *corev1.ConfigMap
	if exists {
		cached = obj.(*corev1.ConfigMap)
	}
	if w, ok := c.written[name]; ok && (cached == nil || !atLeast(cached.ResourceVersion, w.ResourceVersion)) {
		return w
	}
	return cached
}

// List answers every ConfigMap, sorted by name, as Get would answer each.
func (c *Cache) List(ctx context.Context) ([]*corev1.ConfigMap, error) {
	if err := c.synced(ctx); err != nil {
		return nil, err
	}
	objs := c.informer.GetStore().List()
	c.mu.Lock()
	defer c.mu.Unlock()
	names := map[string]any{}
	for _, o := range objs {
		if cm, ok := o.(*corev1.ConfigMap); ok {
			names[cm.Name] = cm
		}
	}
	for name := range c.written {
		if _, ok := names[name]; !ok {
			names[name] = nil
		}
	}
	var out []*corev1.ConfigMap
	for name, o := range names {
		if cm := c.overlayLocked(name, o, o != nil); cm != nil {
			out = append(out, cm)
		}
	}
	slices.SortFunc(out, func(a, b *corev1.ConfigMap) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Wrote records what the API server answered to this replica's create or update of a ConfigMap (or
// its read straight from the API server): reads answer it until the informer has it or a later one.
func (c *Cache) Wrote(cm *corev1.ConfigMap) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.deleted, cm.Name)
	if w, ok := c.written[cm.Name]; ok && atLeast(w.ResourceVersion, cm.ResourceVersion) {
		return
	}
	c.written[cm.Name] = cm
}

// Deleted records this replica's deletion of the ConfigMap name: reads answer none until the
// informer sees the deletion.
func (c *Cache) Deleted(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.written, name)
	c.deleted[name] = true
}
