package provisioning

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"

	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

// page picks the requests after the marker in id order that pass the filter, at most PageSize of them,
// and reports whether more follow. A filter is decided on each request's kept attributes.
func (a *API) page(sorted []named, marker string, f query.Filter, sel nbi.Selection) ([]ProvisioningRequestInfo, bool) {
	candidates := after(sorted, marker)
	if f == nil {
		return nbi.Page(candidates, a.cfg.PageSize, nil,
			func(c named) ProvisioningRequestInfo { return apply(sel, a.infoOf(c.obj)) })
	}
	return nbi.Page(candidates, a.cfg.PageSize,
		func(c named) bool { return f.Match(a.keptInfo(c).attributes()) },
		func(c named) ProvisioningRequestInfo { return apply(sel, *a.keptInfo(c)) }) // apply copies what it changes
}

// keptInfo answers a request's Info, derived once per resourceVersion: what a filter decides on, and
// what a filtered page answers. Read only.
func (a *API) keptInfo(c named) *ProvisioningRequestInfo {
	if i := c.enc.info.Load(); i != nil {
		return i
	}
	info := a.infoOf(c.obj)
	c.enc.info.Store(&info)
	return &info
}

// jsonPage is a page without a filter or an attribute selector, as the JSON answer: the complete Info
// of each request, encoded once per resourceVersion (see encoded), joined. The bytes are those
// json.Marshal gives for the ProvisioningRequestList. ok is false if an Info cannot be encoded; the
// general path then answers the error.
func (a *API) jsonPage(sorted []named, marker string) (body listBody, lastID string, more, ok bool) {
	candidates := after(sorted, marker)
	more = len(candidates) > a.cfg.PageSize
	candidates = candidates[:min(len(candidates), a.cfg.PageSize)]
	body.items = make([][]byte, len(candidates))
	body.size = len(jsonListOpen) + len(jsonListClose) + max(len(candidates)-1, 0)
	for i, c := range candidates {
		e := c.enc.json.Load()
		if e == nil {
			b, err := json.Marshal(a.infoOf(c.obj))
			if err != nil {
				return listBody{}, "", false, false
			}
			e = &b
			c.enc.json.Store(e)
		}
		body.items[i] = *e
		body.size += len(*e)
	}
	if len(candidates) > 0 {
		lastID = candidates[len(candidates)-1].name
	}
	return body, lastID, more, true
}

const (
	jsonListOpen  = `{"items":[`
	jsonListClose = "]}\n"
)

// listBody is a list answer as the kept encodings of its items, written one after the other rather than
// copied into one buffer first: a page of a thousand is a MiB, and under concurrent list clients those
// copies were most of the garbage the collector had to keep up with (and so of the RSS).
type listBody struct {
	items [][]byte
	size  int
}

func (b listBody) writeTo(w http.ResponseWriter, code int) {
	h := w.Header()
	h.Set("Content-Type", query.MediaJSON)
	h.Set("Content-Length", strconv.Itoa(b.size))
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, jsonListOpen)
	for i, e := range b.items {
		if i > 0 {
			_, _ = io.WriteString(w, ",")
		}
		_, _ = w.Write(e)
	}
	_, _ = io.WriteString(w, jsonListClose)
}

// bytes is the whole answer (tests).
func (b listBody) bytes() []byte {
	out := make([]byte, 0, b.size)
	out = append(out, jsonListOpen...)
	for i, e := range b.items {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, e...)
	}
	return append(out, jsonListClose...)
}
