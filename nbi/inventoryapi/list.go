package inventoryapi

import (
	"net/http"

	"github.com/o2ims-operator/o2ims-operator/inventory"
	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

// list answers a list through the server's list pipeline, as the provisioning list does — the same
// query parameters, filter operators, attribute selectors and paging (items in id order, a Link with
// nextpage_opaque_marker, the last id answered) — but as the JSON array the inventory reference
// declares. entries is sorted by id and shared: nothing here changes it.
func (a *API) list(w http.ResponseWriter, r *http.Request, schema *query.Schema, entries []*inventory.Entry) error {
	q, err := nbi.ParseList(r.URL.RawQuery, listRules(schema))
	if err != nil {
		return err
	}
	var match func(*inventory.Entry) bool
	if q.Filter != nil {
		match = func(e *inventory.Entry) bool { return q.Filter.Match(e.Attrs) }
	}
	candidates := nbi.After(entries, q.Marker, func(e *inventory.Entry) string { return e.ID })
	page, more := nbi.Page(candidates, a.mux.Config().PageSize, match, func(e *inventory.Entry) *inventory.Entry { return e })
	if more {
		w.Header().Set("Link", q.NextLink(r.URL, page[len(page)-1].ID))
	}
	if media, _ := nbi.Negotiate(r.Header.Get("Accept")); media == query.MediaJSON && q.Selection.Complete() {
		writeJSONArray(w, page)
		return nil
	}
	items := make([]map[string]any, len(page))
	for k, e := range page {
		items[k] = applyMap(q.Selection, schema, e.Attrs)
	}
	a.mux.Write(w, r, http.StatusOK, items)
	return nil
}

// writeJSONArray answers the entries' kept encodings as one JSON array.
func writeJSONArray(w http.ResponseWriter, page []*inventory.Entry) {
	size := 3
	for _, e := range page {
		size += len(e.JSON) + 1
	}
	body := make([]byte, 0, size)
	body = append(body, '[')
	for k, e := range page {
		if k > 0 {
			body = append(body, ',')
		}
		body = append(body, e.JSON...)
	}
	nbi.WriteEncoded(w, http.StatusOK, query.MediaJSON, append(body, "]\n"...))
}

// writeEntry answers one object: JSON as encoded when it changed, YAML from its attributes.
func (a *API) writeEntry(w http.ResponseWriter, r *http.Request, e *inventory.Entry) {
	if media, _ := nbi.Negotiate(r.Header.Get("Accept")); media == query.MediaJSON {
		body := make([]byte, 0, len(e.JSON)+1)
		nbi.WriteEncoded(w, http.StatusOK, query.MediaJSON, append(append(body, e.JSON...), '\n'))
		return
	}
	a.mux.Write(w, r, http.StatusOK, e.Attrs)
}
