package framework

import (
	"context"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// informers are the operator's informers: one per watch (made with its controller, buildControllers) and
// one per related resource and namespace, shared across the watches that relate to it. They are started
// together, read through the Cache, and waited for until synced, /readyz naming those that are not.
type informers struct {
	client    dynamic.Interface // Clients.watch: no overall timeout
	cache     *Cache
	readiness *readiness
	watched   []watchedInformer
	related   map[relatedKey]cache.SharedIndexInformer
}

// watchedInformer is the informer of one watch.
type watchedInformer struct {
	gvr schema.GroupVersionResource
	inf cache.SharedIndexInformer
}

type relatedKey struct {
	gvr       schema.GroupVersionResource
	namespace string
}

// waitForSync waits until every informer has synced, keeping /readyz's reason current (which caches
// are not synced yet, and why a watch is refused); false when ctx ended first.
func (s *informers) waitForSync(ctx context.Context) bool {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for !s.cache.HasSynced() {
		s.readiness.setStage("waiting for the caches of %s to sync", strings.Join(s.unsynced(), ", "))
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	return true
}

// unsynced names the informers that have not completed their first list.
func (s *informers) unsynced() []string {
	var out []string
	for _, w := range s.watched {
		if !w.inf.HasSynced() {
			out = append(out, resourceName(w.gvr))
		}
	}
	for k, inf := range s.related {
		if !inf.HasSynced() {
			name := resourceName(k.gvr)
			if k.namespace != "" {
				name += " in " + k.namespace
			}
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// sweepRefusals notices, while the operator runs, that a refused watch works again (and logs it).
func (s *informers) sweepRefusals(ctx context.Context) {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.readiness.sweep()
		}
	}
}

// relatedInformer shares one informer per related resource and namespace across watches.
func (s *informers) relatedInformer(gvr schema.GroupVersionResource, namespace string) cache.SharedIndexInformer {
	k := relatedKey{gvr, namespace}
	if inf, ok := s.related[k]; ok {
		return inf
	}
	inf := dynamicinformer.NewFilteredDynamicInformer(s.client, gvr, namespace, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, nil).Informer()
	// Set before the informer runs (they cannot be set after); a refusal is reported, not only logged.
	_ = inf.SetTransform(stripUnread(false))
	_ = inf.SetWatchErrorHandlerWithContext(s.readiness.watchErrorHandler(gvr, namespace, inf))
	s.related[k] = inf
	s.cache.add(gvr, inf)
	return inf
}

// start runs every informer until ctx ends.
func (s *informers) start(ctx context.Context) {
	for _, w := range s.watched {
		go w.inf.RunWithContext(ctx)
	}
	for _, inf := range s.related {
		go inf.RunWithContext(ctx)
	}
}
