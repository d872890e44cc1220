package nbi

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
)

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

// parseListQuery reads a list's query string. It splits on '&' only: SOL013 filters join expressions
// with a literal ';', which url.ParseQuery would treat as a broken separator and drop. A parameter the list
// does not know, or one given twice, is an error rather than silently ignored, since a misspelt filter
// would otherwise answer everything.
func parseListQuery(raw string) (params map[string]string, order []queryParam, err error) {
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
