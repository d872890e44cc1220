package nbi

import (
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
	// A filter is decided on each request's Info: walk in id order and stop once the page is full and
	// one more match shows that more follow.
	items := make([]ProvisioningRequestInfo, 0, min(len(candidates), s.cfg.PageSize))
	for _, c := range candidates {
		info := s.infoOf(c.obj)
		if !f.Match(info.attributes()) {
			continue
		}
		if len(items) == s.cfg.PageSize {
			return items, true
		}
		items = append(items, sel.apply(info))
	}
	return items, false
}
