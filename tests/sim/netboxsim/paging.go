package netboxsim

import (
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// writePage applies NetBox's LimitOffset paging and DRF's link building.
func (s *Server) writePage(w http.ResponseWriter, r *http.Request, rows []any) {
	from, to := s.pageBounds(r.URL.Query(), len(rows))
	s.writePageOf(w, r, len(rows), rows[from:to])
}

// pageWindow is the limit and offset a list request asks for.
func (s *Server) pageWindow(q url.Values) (limit, offset int) {
	limit = s.opts.PageSize
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
	if v, err := strconv.Atoi(q.Get("offset")); err == nil && v > 0 {
		offset = v
	}
	return limit, offset
}

// pageBounds are the indexes [from, to) of the page among count rows: only those need rendering, as
// NetBox's database reads only the page (LIMIT/OFFSET).
func (s *Server) pageBounds(q url.Values, count int) (from, to int) {
	limit, offset := s.pageWindow(q)
	if offset >= count {
		return count, count
	}
	return offset, min(offset+limit, count)
}

// writePageOf answers page, the rows pageBounds chose among count, with DRF's links.
func (s *Server) writePageOf(w http.ResponseWriter, r *http.Request, count int, page []any) {
	q := r.URL.Query()
	limit, offset := s.pageWindow(q)
	if page == nil {
		page = []any{}
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
