// Package query reads what a caller of the northbound API sends, without serving anything: the SOL013
// attribute-based filter of a list (and the ProvisioningRequestInfo attribute paths it and the attribute
// selectors are checked against), the provisioningRequestId, and the ProvisioningRequestData body of a
// POST or PUT, JSON or YAML.
//
// It is pure and imports only the standard library and sigs.k8s.io/yaml, so that its fuzz targets build
// quickly: go test -fuzz instruments every package of the test binary. Every refusal is an *Error that
// carries the HTTP status the API answers it with and the message the caller reads; package nbi turns it
// into ProblemDetails.
//
// JSON is read as the API server reads it (DecodeJSON: sigs.k8s.io/json's strict decoding), so a
// duplicate key, or an unknown field of a struct, is refused; the inventory's and the alarms'
// subscription bodies are read with it too.
package query
