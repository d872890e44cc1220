package nbi

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/o2ims-operator/o2ims-operator/internal/quote"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

// The one list pipeline of every API: the query read (ParseList: parameters → filter → attribute
// selection → marker), the items after the marker (After), one page of them (Page) and the Link of the
// next (ListQuery.NextLink). Each API brings its own reading of a filter and of attribute paths
// (ListRules), and its own fast paths for an answer it keeps encoded.

// listParams are the query parameters a list understands. "exclude-fields" is the reference's spelling
// of SOL013's "exclude_fields"; both are read as one parameter.
var listParams = map[string]string{
	"filter":                 "filter",
	"fields":                 "fields",
	"exclude_fields":         "exclude_fields",
	"exclude-fields":         "exclude_fields",
	"all_fields":             "all_fields",
	"exclude_default":        "exclude_default",
	"nextpage_opaque_marker": "nextpage_opaque_marker",
}

// queryParam is one parameter as the caller sent it, in order.
type queryParam struct{ key, value string }

// ListRules are how one API reads a list's query: its filter's attribute paths and its attribute
// selectors (see ParseSelection).
type ListRules struct {
	Filter    func(expr string) (query.Filter, error)
	FieldList FieldListReader
	Combine   bool // fields and exclude_fields together (exclude_fields wins)
}

// ListQuery is a list's query, read.
type ListQuery struct {
	Filter    query.Filter // nil: none
	Selection Selection
	Marker    string // the last id answered before ("" on the first page)
	order     []queryParam
}

// ParseList reads a list's query as rules say; every refusal is a 400 Problem.
func ParseList(raw string, rules ListRules) (ListQuery, error) {
	params, order, err := ParseQuery(raw)
	if err != nil {
		return ListQuery{}, NewProblem(http.StatusBadRequest, "%v", err)
	}
	q := ListQuery{order: order}
	if expr, ok := params["filter"]; ok {
		if q.Filter, err = rules.Filter(expr); err != nil {
			return ListQuery{}, NewProblem(http.StatusBadRequest, "invalid attribute-based filtering expression: %v", err)
		}
	}
	if q.Selection, err = ParseSelection(params, rules.FieldList, rules.Combine); err != nil {
		return ListQuery{}, NewProblem(http.StatusBadRequest, "invalid attribute selector: %v", err)
	}
	if m, ok := params["nextpage_opaque_marker"]; ok {
		if q.Marker, err = decodeMarker(m); err != nil {
			return ListQuery{}, NewProblem(http.StatusBadRequest, "%v", err)
		}
	}
	return q, nil
}

// ParseQuery reads a list's query string. It splits on '&' only: SOL013 filters join expressions
// with a literal ';', which url.ParseQuery would treat as a broken separator and drop. A parameter the list
// does not know, or one given twice, is an error rather than silently ignored, since a misspelt filter
// would otherwise answer everything.
func ParseQuery(raw string) (params map[string]string, order []queryParam, err error) {
	params = map[string]string{}
	var unknown []string
	for _, piece := range strings.Split(raw, "&") {
		if piece == "" {
			continue
		}
		k, v, _ := strings.Cut(piece, "=")
		key, err := url.QueryUnescape(k)
		if err != nil {
			return nil, nil, fmt.Errorf("the query is malformed: %v", err)
		}
		value, err := url.QueryUnescape(v)
		if err != nil {
			return nil, nil, fmt.Errorf("query parameter %q is malformed: %v", key, err)
		}
		name, ok := listParams[key]
		if !ok {
			unknown = append(unknown, key)
			continue
		}
		if _, dup := params[name]; dup {
			return nil, nil, fmt.Errorf("query parameter %q is given more than once", name)
		}
		params[name] = value
		order = append(order, queryParam{key, value})
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, nil, fmt.Errorf("unknown query parameter(s) %s (a list takes filter, fields, exclude_fields, all_fields, exclude_default, nextpage_opaque_marker)",
			quoteAll(unknown))
	}
	return params, order, nil
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// After answers the items (sorted by id) whose id sorts after marker.
func After[T any](items []T, marker string, id func(T) string) []T {
	i, _ := slices.BinarySearchFunc(items, marker, func(it T, m string) int {
		if id(it) <= m {
			return -1
		}
		return 1
	})
	return items[i:]
}

// Page answers the candidates that match (nil: all), as answer makes them, at most size of them, and
// whether more follow: with a filter the walk stops once the page is full and one more match shows
// that more follow.
func Page[T, R any](candidates []T, size int, match func(T) bool, answer func(T) R) ([]R, bool) {
	page := make([]R, 0, min(len(candidates), size))
	for _, c := range candidates {
		if match != nil && !match(c) {
			continue
		}
		if len(page) == size {
			return page, true
		}
		page = append(page, answer(c))
	}
	return page, false
}

// A page ends after PageSize items; the next one starts after the last id answered. Items are sorted by
// id, so "the ids after the marker" is stable while items come and go between pages: nothing is
// answered twice, and nothing that existed throughout is skipped. The marker is the last id,
// base64url-encoded so callers treat it as opaque.

func encodeMarker(lastID string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(lastID))
}

func decodeMarker(marker string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(marker)
	if err != nil || query.ValidateRequestID(string(b)) != nil {
		return "", fmt.Errorf("nextpage_opaque_marker %q is not a marker this API handed out", Truncate(marker, 80))
	}
	return string(b), nil
}

// NextLink is the Link header value of the page after lastID: the same path and query, with the new
// marker.
func (q ListQuery) NextLink(u *url.URL, lastID string) string {
	return nextLink(u, q.order, encodeMarker(lastID))
}

func nextLink(u *url.URL, order []queryParam, marker string) string {
	var q strings.Builder
	for _, p := range order {
		if p.key == "nextpage_opaque_marker" {
			continue
		}
		q.WriteString(url.QueryEscape(p.key))
		q.WriteByte('=')
		q.WriteString(url.QueryEscape(p.value))
		q.WriteByte('&')
	}
	q.WriteString("nextpage_opaque_marker=")
	q.WriteString(marker)
	return fmt.Sprintf("<%s?%s>; rel=\"next\"", u.EscapedPath(), q.String())
}

// Truncate shortens a value quoted back in a ProblemDetails (internal/quote: by runes, never inside one).
func Truncate(s string, n int) string { return quote.Truncate(s, n) }
