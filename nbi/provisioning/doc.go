// Package provisioning is the O2IMS northbound API O2ims_infrastructureProvisioning v1 (the contract is
// testdata/reference/o2ims_provisioning_v1_1.yaml) over the operator's ProvisioningRequests: a handler
// type (API) that registers its routes on the northbound server (package nbi), which brings the
// listener, TLS, authentication, content negotiation, the list pipeline, ProblemDetails and metrics.
//
// Routes (Go ServeMux method patterns), under /O2ims_infrastructureProvisioning and, alike, under the
// lowercase /o2ims-infrastructureProvisioning O2IMS documents:
//
//	GET    /v1/provisioningRequests                            list (filter, attribute selectors, paging)
//	POST   /v1/provisioningRequests                            201 + Location, the created Info
//	GET    /v1/provisioningRequests/{provisioningRequestId}    the Info (DELETING while being deleted)
//	PUT    /v1/provisioningRequests/{provisioningRequestId}    200: the spec replaced; 404 absent; 422 other id
//	DELETE /v1/provisioningRequests/{provisioningRequestId}    202 + Location to poll
//	GET    /api_versions, /v1/api_versions                     {"uriPrefix": "<root>/v1", "apiVersions": [{"version": "1.1.0"}]}
//
// Everything else is a JSON (or YAML) ProblemDetails (the server's): 404 for an unknown route — the Python NBI's old
// "provisioningRequests " route with a trailing space among them — and 405 with Allow for a wrong method.
//
// Reads (list, GET) are answered from the Store, the operator's informer cache, and never call the API
// server, so a polling SMO costs the cluster nothing. Writes go to the API server through the dynamic
// client, each bounded by APITimeout.
//
// What a caller sends — a filter and the attribute paths it and the attribute selectors name, a
// provisioningRequestId, a ProvisioningRequestData body — is read by package query (./query), pure and
// light so that its fuzz targets build quickly; its refusals carry the status the server answers.
//
// # Decisions where the reference is silent or ambiguous
//
//   - ProblemDetails.status is a string in the reference (RFC 7807 has an integer): it carries the
//     message; title (reason phrase), detail, instance (request path) and time (RFC 3339 UTC) travel
//     beside it, which the reference allows as it does not close the object.
//   - The reference requires name and description in every ProvisioningRequestData, in requests too;
//     the CRD refuses null for them. A request without them is accepted (as the Python NBI did) and both
//     are stored and answered as "". PUT is a replace, so an absent name there clears it.
//   - The seed's "POST no clusterName -> 400": templateParameters.clusterName must be a non-empty string
//     and templateParameters.labels, if given, an object — what the provisioning chain needs, refused at
//     the door rather than failed later.
//   - PUT requires provisioningRequestId in the body (the schema requires it); a different id is 422
//     before anything else is checked against the cluster, an absent request 404 (PUT never creates). It
//     is one JSON patch "replace /spec": no read-modify-write, so no resourceVersion conflicts with the
//     operator's status writes and no lost update. A request being deleted may still be replaced, as
//     the API server allows.
//   - DELETE answers 202 with no body (the reference declares none) and a Location of the same spelling
//     as the request. The reference's example Location is all lowercase
//     (/o2ims-infrastructureprovisioning/v1/provisioningrequests/ID123); that spelling is not served,
//     only the two roots above.
//   - A path id that is not a valid provisioningRequestId cannot exist: GET, PUT and DELETE answer 404.
//   - api_versions is not in the reference; it follows ETSI GS NFV-SOL 013 ApiVersionInformation as
//     O2IMS uses it, uriPrefix being {apiRoot}/{apiName}/{apiMajorVersion} at both endpoints, and version
//     1.1.0 (the reference's protocol version 1.1).
//   - Filters (SOL013 5.2): an array attribute, or one reached through an array, matches when any element
//     does; neq, nin and ncont are the negations of eq, in and cont (so they hold for an absent
//     attribute, where the others do not). A number compares numerically with a value that reads as one,
//     anything else compares as a string (RFC 3339 UTC times then order by time). eq, neq, gt, gte, lt and
//     lte take one value; in, nin, cont and ncont one or more. Attribute paths are checked against the
//     reference's ProvisioningRequestInfo; below templateParameters anything goes.
//   - Attribute selectors (SOL013 5.3): SOL013 lets fields/exclude_fields leave out only complex
//     attributes of cardinality 0..N; the reference requires every attribute it declares, so those are
//     the members of the free-form templateParameters. Mandatory attributes stay in every answer (which
//     keeps every answer valid against the schema): naming one in fields changes nothing, excluding one
//     is a 400. The default-excluded set is empty (the reference says TBD), so no selector, all_fields
//     and exclude_default all answer the complete Info. Combinations follow SOL013: each alone, or
//     exclude_default with fields. "exclude-fields" (the reference's spelling) and "exclude_fields"
//     (SOL013's) are one parameter. all_fields and exclude_default take no value (SOL013) or a boolean
//     (the reference).
//   - A list rejects query parameters it does not know (400): a misspelt filter would otherwise answer
//     everything. The query is split on '&' only, so SOL013's ';' between filter expressions needs no
//     escaping. Other routes ignore the query.
//   - Paging (SOL013 5.4.2.1 alternative 2): items sorted by provisioningRequestId, at most PageSize
//     per page, and a Link: <path?same query&nextpage_opaque_marker=…>; rel="next" header (a path
//     reference, correct behind port-forwards and proxies) while more follow. The marker is the last id
//     answered, base64url-encoded; the next page holds the ids after it, so paging is stable while
//     requests come and go. A marker this API could not have handed out is a 400. The id order is
//     sorted once per change of the operator's cache (RevisionedStore), not once per page, and a
//     request's JSON and Info are derived once per resourceVersion: while the cache is unchanged an
//     unfiltered JSON page costs a binary search and copying its items' bytes, and a filtered one
//     decides each request on its kept Info, read in place (query.Tree).
//   - Bodies: JSON or YAML (the reference lists application/yaml for every body; YAML is read as
//     Kubernetes reads it, YAML 1.1 via sigs.k8s.io/yaml, so quote strings like "no"). At most 1 MiB:
//     a larger declared length is refused before reading, an undeclared one at the first byte past it.
//     Answers are JSON unless Accept prefers application/yaml; an Accept allowing neither is 406.
//   - Error mapping of API-server answers: 400/422 → 400, 409 → 409, 404 → 404, 429 → 503 (with
//     Retry-After when the API server suggests one), no client → 503, anything else — 5xx, transport,
//     timeouts and also 401/403, which are about the operator's own service account — → 502 that does
//     not echo the cause. An unforeseen failure (a panic) is a 500 saying only that the request could not
//     be served. The cause of every 5xx is logged at warning level.
//   - Protocol errors net/http answers before any handler runs (a malformed request line, headers over
//     64 KiB) are plain text; every answer of this package is ProblemDetails.
//
// # Security
//
// Authentication, authorisation and TLS are the server's (package nbi): with auth "kubernetes" each
// operation is a SubjectAccessReview of its verb on provisioningrequests, named for get/update/delete.
package provisioning
