package netboxsim

import (
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// writePage applies NetBox's LimitOffset paging and DRF's link building.
func (s *Server) writePage(w http.ResponseWriter, r *http.Request, rows []any) {
	q := r.URL.Query()
	limit := s.opts.PageSize
	if limit > s.opts.MaxPageSize {
		limit = s.opts.MaxPageSize
	}
	if v, err := strconv.Atoi(q.Get("limit")); err == nil && v >= 0 {
		if v == 0 || v > s.opts.MaxPageSize {
			limit = s.opts.MaxPageSize
		} else {
			limit = v
		}
	}
	offset := 0
	if v, err := strconv.Atoi(q.Get("offset")); err == nil && v > 0 {
		offset = v
	}
	count := len(rows)
	page := []any{}
	if offset < count {
		end := min(offset+limit, count)
		page = rows[offset:end]
	}
	self := baseURL(r) + r.URL.Path
	var next, prev any
	if offset+limit < count {
		next = pageLink(self, q, limit, offset+limit, true)
	}
	if offset > 0 {
		if offset-limit <= 0 {
			prev = pageLink(self, q, limit, 0, false) // DRF drops offset for the first page
		} else {
			prev = pageLink(self, q, limit, offset-limit, true)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": count, "next": next, "previous": prev, "results": page}, "")
}

// pageLink mimics DRF's replace_query_param/remove_query_param: keys sorted.
func pageLink(self string, q url.Values, limit, offset int, withOffset bool) string {
	c := url.Values{}
	for k, v := range q {
		c[k] = append([]string(nil), v...)
	}
	c.Set("limit", strconv.Itoa(limit))
	if withOffset {
		c.Set("offset", strconv.Itoa(offset))
	} else {
		c.Del("offset")
	}
	return self + "?" + c.Encode()
}

// listDCIM answers a list of sites or device types: the objects in id order, filtered by NetBox's id
// and last_updated lookups (a bad value is a 400 naming the parameter), then paged.
func listDCIM[T any](s *Server, w http.ResponseWriter, r *http.Request, sorted func() []T,
	key func(T) (int32, time.Time), render func(T, string) map[string]any) {
	q := r.URL.Query()
	when, badParam, badMsg := timeFilters(q)
	ids, ok := idFilter(q["id"])
	if !ok {
		badParam, badMsg = "id", "Enter a number."
	}
	if badParam != "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{badParam: []string{badMsg}}, "")
		return
	}
	base := baseURL(r)
	s.mu.Lock()
	var rows []any
	for _, x := range sorted() {
		if id, updated := key(x); (ids == nil || ids[int64(id)]) && when(updated) {
			rows = append(rows, render(x, base))
		}
	}
	s.mu.Unlock()
	s.writePage(w, r, rows)
}
