// Package subscriptions is the O2IMS subscriptions and their at-least-once delivery, shared by the
// inventory, alarms and performance APIs. Subscriptions (subscriptions.go) are ConfigMaps of a
// SubscriptionKind: the inventory's, the alarms' or the performance API's. Their notifiers are
// runnables of the leader: Notifier (notifier.go) is fed by the inventory view, PolledNotifier
// (polled.go) reads its objects whole at each poll (the alarms, the measurement jobs); both run one
// loop (schedule.go) and share the parts: the subscriber set (subscribers.go: the state each
// subscriber is diffed against), each subscriber's queue (queue.go: past QueueLimit a change of an
// object already waiting is folded into its note), the delivery (delivery.go: one goroutine per
// subscriber, POSTs retried with internal/backoff until a 2xx) and the renderers (render.go). Every
// PersistEvery the told state of each subscriber whose queue is empty is written into its ConfigMap; a
// new leader's notifier starts from the whole current state (the view's first full listing,
// View.Attach; the first poll for the polled one) and queues what changed since each subscription's
// progress: at least once, in order per subscriber, nothing lost across a failover. A subscription
// created through the NBI joins at once on the leader (AddSubscription), else at the leader's next
// poll. The HTTP routes are the APIs' (nbi/inventoryapi, nbi/alarmsapi, nbi/performanceapi).
package subscriptions
