// Package inventory is the O-Cloud model: the O2IMS Infrastructure Inventory's view of NetBox in
// memory: the pool's devices as Resources, their sites as ResourcePools (and O-Cloud sites), their
// device types as ResourceTypes, with their ids (config.go, the O-Cloud id settled once: ocloudid.go).
// Both sides read it: the inventory API answers from it without calling NetBox, and the chain's host
// allocator reads its free hosts (freehosts.go) through hosts.Pool. A background refresh (refresh.go)
// and the operator's own NetBox writes keep it current, and every change of an object is handed, in
// order, to the change sinks (the subscriptions package's notifier, View.Attach). It knows no HTTP:
// the API's schemas, filters and selectors are in nbi/inventoryapi.
package inventory
