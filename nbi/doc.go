// Package nbi is the northbound server every O2IMS API of the operator is served on: the listener and
// its TLS (a certificate reloaded when its files change), authentication (TokenReview and
// SubjectAccessReview), content negotiation (JSON or YAML), one list pipeline (query, filter,
// attribute selectors, paging), ProblemDetails with one Renderer per API, metrics and one log line per
// request, the liveness probe.
//
// The APIs are handler types in packages of their own — nbi/provisioning
// (O2ims_infrastructureProvisioning), nbi/inventoryapi (the Infrastructure Inventory, beside its
// model inventory/) and nbi/alarmsapi (the Infrastructure Monitoring) — each registering its routes
// and its root on the shared mux when the server is built (New, Mux; versions.go serves every spelling
// and major of a versioned root). This package imports none of them. An error of a package below the
// shell carries its own answer (Answerer: nbi/query's refusals, the subscription store's, nbi/callback's),
// so AsProblem maps it once for every API.
//
// Security: auth "none" (the default) serves anyone who can connect with the operator's service
// account, so the listener defaults to loopback and kubectl port-forward applies the caller's own RBAC.
// Auth "kubernetes" needs "Authorization: Bearer <token>": the token is checked with a TokenReview and
// each operation with a SubjectAccessReview (provisioningrequests in o2ims.provisioning.oran.org, verb
// list, get, create, update or delete, named for get/update/delete), so callers act under their own
// RBAC; api_versions needs a valid token only. The operator's service account then needs create on
// tokenreviews.authentication.k8s.io and subjectaccessreviews.authorization.k8s.io. Successful reviews are cached for 10 s under a SHA-256 of
// the token (bounded to 4096 entries); denials are not cached, and tokens and bodies are never logged.
// TLS is optional (a certificate/key pair, re-read when either file changes).
package nbi
