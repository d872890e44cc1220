// Package nbi is the northbound server every O2IMS API of the operator is served on: the listener and
// its TLS (a certificate reloaded when its files change; mutual TLS), authentication (Kubernetes
// TokenReview, OAuth 2.0 access tokens) and one authorisation model (SubjectAccessReview), content
// negotiation (JSON or YAML), one list pipeline (query, filter, attribute selectors, paging),
// ProblemDetails with one Renderer per API, metrics and one log line per request, the liveness probe.
//
// The APIs are handler types in packages of their own — nbi/provisioning
// (O2ims_infrastructureProvisioning), nbi/inventoryapi (the Infrastructure Inventory, over its
// model inventory/), nbi/alarmsapi (the Infrastructure Monitoring, over alarms/) and
// nbi/performanceapi (the Infrastructure Performance, over performance/) — each registering its routes
// and its root on the shared mux when the server is built (New, Mux; versions.go serves every spelling
// and major of a versioned root). This package imports none of them. An error of a package below the
// shell carries its own answer (Answerer: nbi/query's refusals, the subscription store's, nbi/callback's),
// so AsProblem maps it once for every API.
//
// Security: with NBI_AUTH unset the server serves anyone who can connect, acting with the operator's
// service account, so the listener defaults to loopback (kubectl port-forward applies the caller's own
// RBAC) and any other address is refused without TLS (unless NBI_INSECURE=true). NBI_AUTH is a comma list
// of authenticators tried in order, the first that recognises a token deciding: "kubernetes" (TokenReview;
// the service account needs create on tokenreviews) and "oauth" (JWT access tokens checked locally against
// the issuer's keys: oauth.go, jwks.go; certbound.go for RFC 8705 tokens bound to the client certificate).
// Either way every operation is authorised with one SubjectAccessReview model (roles.go: the request's
// verb on its path, granted by the O2IMS roles), successful reviews cached for 10 s (auth.go, bounded)
// under a SHA-256 of the token; denials are not cached, attempts are rate limited per client address
// (ratelimit.go), and tokens and bodies are never logged. TLS serves a certificate reloaded when its files
// change; mutual TLS (clientca.go) refuses clients whose certificate the configured CAs do not verify, in
// the handshake. Every call to the SMO (notifications, registration) carries an OAuth 2.0 client-
// credentials token and the client certificate when configured (nbi/smoclient); nbi/callback decides where
// it may connect.
package nbi
