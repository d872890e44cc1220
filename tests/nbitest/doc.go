// Package nbitest is what the northbound API tests share: answers validated against the O2IMS reference
// OpenAPI documents in testdata/reference (reference.go and one file per API), an NBI on a loopback port
// with an in-memory store (memstore.go), the shipped O2IMS roles, and the bodies Debian's real
// Alertmanager posted (alertmanager.go).
package nbitest
