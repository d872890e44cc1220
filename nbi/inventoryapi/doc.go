// Package inventoryapi is the O2IMS Infrastructure Inventory API (reference:
// testdata/reference/o2ims-inventory) on the northbound server (package nbi): a handler type (API)
// registering its routes and its root — errors in the inventory reference's ProblemDetails — on the
// shared mux, answered from memory: the inventory view of NetBox (package nbi/inventory, the model),
// the deployment managers (DeploymentManagers: the Clusters of fulfilled requests) and the
// subscriptions.
package inventoryapi
