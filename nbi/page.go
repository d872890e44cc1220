package nbi

import (
	"encoding/json"

	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

// page picks the requests after the marker in id order that pass the filter, at most PageSize of them,
// and reports whether more follow.
func (s *Server) page(sorted []named, marker string, f query.Filter, sel selection) ([]ProvisioningRequestInfo, bool) {
	candidates := after(sorted, marker)
	if f == nil {
		more := len(candidates) > s.cfg.PageSize
		candidates = candidates[:min(len(candidates), s.cfg.PageSize)]
		items := make([]ProvisioningRequestInfo, len(candidates))
		for i, c := range candidates {
			items[i] = sel.apply(s.infoOf(c.obj))
		}
		return items, more
	}
	// A filter is decided on each request's attributes: walk in id order and stop once the page is full
	// and one more match shows that more follow.
	items := make([]ProvisioningRequestInfo, 0, min(len(candidates), s.cfg.PageSize))
	for _, c := range candidates {
		if !f.Match(s.attributesOf(c)) {
			continue
		}
		if len(items) == s.cfg.PageSize {
			return items, true
		}
		items = append(items, sel.apply(s.infoOf(c.obj)))
	}
	return items, false
}

// attributesOf answers a request's filter attributes, derived once per resourceVersion.
func (s *Server) attributesOf(c named) map[string]any {
	if a := c.enc.attrs.Load(); a != nil {
		return *a
	}
	info := s.infoOf(c.obj)
	a := info.attributes()
	c.enc.attrs.Store(&a)
	return a
}

// jsonPage is a page without a filter or an attribute selector, as the JSON answer: the complete Info
// of each request, encoded once per resourceVersion (see encoded), joined. The bytes are those
// json.Marshal gives for the ProvisioningRequestList. ok is false if an Info cannot be encoded; the
// general path then answers the error.
func (s *Server) jsonPage(sorted []named, marker string) (body []byte, lastID string, more, ok bool) {
	candidates := after(sorted, marker)
	more = len(candidates) > s.cfg.PageSize
	candidates = candidates[:min(len(candidates), s.cfg.PageSize)]
	encs := make([][]byte, len(candidates))
	size := len(`{"items":[]}`) + 1
	for i, c := range candidates {
		e := c.enc.json.Load()
		if e == nil {
			b, err := json.Marshal(s.infoOf(c.obj))
			if err != nil {
				return nil, "", false, false
			}
			e = &b
			c.enc.json.Store(e)
		}
		encs[i] = *e
		size += len(*e) + 1
	}
	body = make([]byte, 0, size)
	body = append(body, `{"items":[`...)
	for i, e := range encs {
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, e...)
	}
	body = append(body, "]}\n"...)
	if len(candidates) > 0 {
		lastID = candidates[len(candidates)-1].name
	}
	return body, lastID, more, true
}
