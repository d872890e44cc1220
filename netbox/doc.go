// Package netbox is the NetBox inventory client of the o2ims operator: it
// finds, claims, quarantines and releases bare-metal hosts recorded as NetBox
// devices. It holds no Kubernetes code and writes no status.
//
// Data model (the provider creates the custom fields; the client only checks
// them): on dcim.device a boolean pool flag (only JSON true counts), the native
// status staged (free) → active (claimed) → staged, failed = quarantined, a
// text owner field holding the owning request's uid (empty/null/absent =
// unowned), the Metal3 BMC address and the boot MAC. Capability fields
// (text/select/integer/boolean, filter_logic exact) are what a Selector matches.
//
// Safety rules: every write is a PATCH with If-Match (ETag from the detail GET,
// NetBox ≥ 4.6), carries only the fields it changes and is never retried; GETs
// are retried with capped backoff. Listings are re-checked client-side because
// NetBox ignores filters it does not know. Errors are *Error values whose text
// never contains the token or BMC data; logs carry counts and ids only.
//
// The client is one constructor (New) returning a Client: a small struct of
// typed parts, one per job, all sharing one connection (transport, metrics,
// the field listing, the write observers). A caller holds the Client and names
// the part at each call, so the call says which job it does:
//
//   - Gate: availability — Start, Unavailability, Degraded, DownSince.
//   - Search: reads — FindFreeHost(s), Matcher, ValidateSelector, and the
//     ListInventory* listings the O-Cloud view refreshes from.
//   - Claims: writes — GetDevice (the read with the ETag a write needs), Claim,
//     Release, Quarantine, QuarantineClaimed, and ObserveWrites.
//   - Schema: custom fields — Fields, Check (the startup check), CheckSchema,
//     Bootstrap.
//
// A caller that needs one job takes that part (the inventory refresher takes
// Client.Search as its Source). Separate parts rather than one type keep each
// job's methods together and small (the house allows 30 a type); one
// constructor keeps one transport and one set of metrics per NetBox.
//
// NetBox down degrades the operator, never stops it (availability.go): after
// an outage at start the check (Gate.Start) goes on in the background and
// every other call fails at once with KindUnavailable until it passes;
// IsOutage tells a caller to wait rather than fail, Degraded is the /readyz line.
//
// go-netbox v4.3.0 is the typed client. What its request builders lack
// (cf_* filters, If-Match, changelog_message) is added by an http.RoundTripper
// chain from values in the request context (transport.go). Where its strict
// models reject data NetBox legitimately sends (a select field's integer
// choices_count, a FIELD_CHOICES status), the client reads the fields it needs
// from the same answer instead.
package netbox
