// Package inventory keeps the O2IMS Infrastructure Inventory's view of NetBox in memory: the pool's
// devices as Resources, their sites as ResourcePools (and O-Cloud sites), their device types as
// ResourceTypes. The northbound API answers from it without calling NetBox; a background refresh
// (refresh.go) and the operator's own NetBox writes keep it current, and every change of an object
// is handed, in order, to the change sinks (the subscriptions' notifier). freehosts.go keeps the index
// of free hosts the chain's host allocator reads.
//
// Subscriptions (subscriptions.go) are ConfigMaps of a SubscriptionKind: the inventory's or the alarms'.
// Their notifiers are runnables of the leader: Notifier (notifier.go) is fed by the view, PolledNotifier
// (polled.go) reads its objects whole at each poll (the alarms); both run one loop (schedule.go) and
// share the parts: the subscriber set (subscribers.go: the state each subscriber is diffed against), each
// subscriber's queue (queue.go: past QueueLimit a change of an object already waiting is folded into its
// note), the delivery (delivery.go: one goroutine per subscriber, POSTs retried with internal/backoff
// until a 2xx) and the renderers (render.go). Every PersistEvery the told state of each subscriber whose
// queue is empty is written into its ConfigMap; a new leader's notifier starts from the whole current
// state (the view's first full listing, View.Attach; the first poll for the polled one) and queues what
// changed since each subscription's progress: at least once, in order per subscriber, nothing lost
// across a failover. A subscription created through the NBI joins at once on the leader
// (AddSubscription), else at the leader's next poll.
package inventory
